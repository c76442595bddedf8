"""The options and the call of `albert-create-pretraining-data`, the original `create_pretraining_data.py`.

The flags are the original's (same names and defaults) plus `--num_workers` and `--shard_size_mb` of the
local writer (`albert_tf.tasks.pretraining.writer.local`) and `--runner` / `--num_output_shards` of the Apache Beam
pipeline (`albert_tf.tasks.pretraining.writer.beam`). The algorithm lives in `albert_tf.tasks.pretraining.writer.instances`.

Usage:
    albert-create-pretraining-data --input_file=corpus/*.txt --output_file=out-0.tfrecord,out-1.tfrecord \\
      --spm_model_file=30k-clean.model --max_seq_length=512 --dupe_factor=40 --num_workers=8

    albert-create-pretraining-data --runner=DataflowRunner --project=my-project --region=us-central1 \\
      --temp_location=gs://my-bucket/tmp --setup_file=./pyproject.toml \\
      --input_file=gs://my-bucket/corpus/*.txt --output_file=gs://my-bucket/data/train \\
      --spm_model_file=gs://my-bucket/30k-clean.model --vocab_file=gs://my-bucket/30k-clean.vocab
"""

import dataclasses
from typing import Optional

from albert_tf import options as options_lib
from albert_tf.errors import InputError
from albert_tf.fileio import output_file_locks
from albert_tf.options import option
from albert_tf.tasks.pretraining.writer.instances import PretrainingDataOptions
from albert_tf.tasks.pretraining.writer.local import write_pretraining_examples

CLI_HELP = (
    "Creates ALBERT pretraining data as the original create_pretraining_data.py: reads raw text files "
    "(--input_file, comma-separated globs; one sentence per line, a blank line between documents), tokenizes "
    "them with the SentencePiece model --spm_model_file (or the WordPiece --vocab_file), builds "
    "sentence-order (SOP) pairs with n-gram masked-LM predictions, and writes serialized tf.train.Example "
    "records (input_ids, input_mask, segment_ids, token_boundary, masked_lm_positions, masked_lm_ids, "
    "masked_lm_weights, next_sentence_labels) to the TFRecord files of --output_file, round-robin, and logs a "
    "summary. Without --runner it runs on this machine in --num_workers processes over shards of "
    "--shard_size_mb of text; the same --random_seed gives the same bytes. With --runner=DirectRunner, "
    "DaskRunner (with --dask_client_address=tcp://HOST:PORT), DataflowRunner, FlinkRunner or SparkRunner (and any Beam "
    "pipeline options) Apache Beam does the same "
    "work: each --output_file entry is a prefix of sharded files PREFIX-00000-of-000NN plus a summary "
    "PREFIX-summary.json, with the same examples as the local writer for the same sharding."
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CreateDataOptions:
    """The files and the workers of `albert-create-pretraining-data` (the instances' options are
    `PretrainingDataOptions`)."""

    # Raw text, not the TFRecords that `run_pretraining`'s `input_file` reads.
    input_file: str = option(help_text="Input raw text file (or comma-separated list of files/globs).")
    output_file: str = option(help_text="Output TF example file (or comma-separated list of files); with "
                              "--runner, output prefixes.")
    input_file_mode: str = option("r", "The data format of the input file (kept for compatibility; files are read "
                                  "as bytes and decoded as UTF-8 with replacement).")
    num_workers: int = option(1, "Worker processes; the output is the same for any number.")
    shard_size_mb: float = option(32.0, "Raw text per shard (memory bound; shuffles are per shard).")
    runner: Optional[str] = option(None, "Apache Beam runner (DirectRunner, DaskRunner, DataflowRunner, FlinkRunner, "
                                   "SparkRunner, ...); unset: the local writer. Other Beam pipeline options follow it.")
    num_output_shards: int = option(0, "With --runner: files per output prefix (0: one per shard).")


def create_pretraining_data(run, options, pipeline_args=()):
    """Writes the pretraining data of `CreateDataOptions` `run` and `PretrainingDataOptions` `options`: with the local
    writer, or with `run.runner` and the Beam pipeline options `pipeline_args`."""
    outputs = [path.strip() for path in run.output_file.split(",") if path.strip()]
    with output_file_locks(outputs):   # one writer per output file
        _create_pretraining_data(run, options, pipeline_args)


def _create_pretraining_data(run, options, pipeline_args):
    common = dict(vocab_file=options.vocab_file, spm_model_file=options.spm_model_file, options=options,
                  shard_size_mb=run.shard_size_mb)
    if not run.runner:
        if pipeline_args:
            raise InputError(f"Unknown arguments {list(pipeline_args)} (Beam pipeline options need --runner).")
        write_pretraining_examples(run.input_file, run.output_file, num_workers=run.num_workers, **common)
        return
    # Deferred: apache_beam is the optional `[beam]` extra, needed only with --runner.
    from albert_tf.tasks.pretraining.writer import beam as pretraining_beam

    pretraining_beam.run_pipeline(run.input_file, run.output_file, num_output_shards=run.num_output_shards,
                                  pipeline_args=[f"--runner={run.runner}"] + list(pipeline_args), **common)


# `albert-create-pretraining-data`: the arguments after the flags are Apache Beam's pipeline options.
COMMAND = options_lib.Command(name="create_pretraining_data", help_text=CLI_HELP,
                              options=(CreateDataOptions, PretrainingDataOptions), call=create_pretraining_data,
                              extra_args=True, pass_unknown_flags=True)
