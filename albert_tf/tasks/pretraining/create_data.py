"""`albert-create-pretraining-data`: the original `create_pretraining_data.py` command line.

The flags are the original's (same names and defaults) plus `--num_workers` and `--shard_size_mb` of the
local writer (`albert_tf.tasks.pretraining.writer`) and `--runner` / `--num_output_shards` of the Apache Beam
pipeline (`albert_tf.tasks.pretraining.beam_writer`). The algorithm lives in `albert_tf.tasks.pretraining.instances`.

Usage:
    albert-create-pretraining-data --input_file=corpus/*.txt --output_file=out-0.tfrecord,out-1.tfrecord \\
      --spm_model_file=30k-clean.model --max_seq_length=512 --dupe_factor=40 --num_workers=8

    albert-create-pretraining-data --runner=DataflowRunner --project=my-project --region=us-central1 \\
      --temp_location=gs://my-bucket/tmp --setup_file=./pyproject.toml \\
      --input_file=gs://my-bucket/corpus/*.txt --output_file=gs://my-bucket/data/train \\
      --spm_model_file=gs://my-bucket/30k-clean.model --vocab_file=gs://my-bucket/30k-clean.vocab
"""

import dataclasses

from absl import app, flags

from albert_tf import cli
from albert_tf.tasks.pretraining.instances import PretrainingOptions
from albert_tf.tasks.pretraining.writer import write_pretraining_examples

CLI_HELP = (
    "Creates ALBERT pretraining data as the original create_pretraining_data.py: reads raw text files "
    "(--input_file, comma-separated globs; one sentence per line, a blank line between documents), tokenizes "
    "them with the SentencePiece model --spm_model_file (or the WordPiece --vocab_file), builds "
    "sentence-order (SOP) pairs with n-gram masked-LM predictions, and writes serialized tf.train.Example "
    "records (input_ids, input_mask, segment_ids, token_boundary, masked_lm_positions, masked_lm_ids, "
    "masked_lm_weights, next_sentence_labels) to the TFRecord files of --output_file, round-robin, and logs a "
    "summary. Without --runner it runs on this machine in --num_workers processes over shards of "
    "--shard_size_mb of text; the same --random_seed gives the same bytes. With --runner=DirectRunner, "
    "DataflowRunner, FlinkRunner or SparkRunner (and any Beam pipeline options) Apache Beam does the same "
    "work: each --output_file entry is a prefix of sharded files PREFIX-00000-of-000NN plus a summary "
    "PREFIX-summary.json, with the same examples as the local writer for the same sharding."
)


def define_flags():
    flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files/globs).")
    flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files); with "
                        "--runner, output prefixes.")
    flags.DEFINE_string("vocab_file", None, "The vocabulary file that the ALBERT model was trained on (with "
                        "--spm_model_file: its .vocab, checked against the model when given).")
    flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
    flags.DEFINE_string("input_file_mode", "r", "The data format of the input file (kept for compatibility; "
                        "files are read as bytes and decoded as UTF-8 with replacement).")
    flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text.")
    flags.DEFINE_bool("do_whole_word_mask", True, "Whether to use whole word masking rather than per-piece.")
    flags.DEFINE_bool("do_permutation", False, "Whether to do the permutation training.")
    flags.DEFINE_bool("favor_shorter_ngram", True, "Whether to favour shorter n-grams (p(n) ~ 1/n).")
    flags.DEFINE_bool("random_next_sentence", False, "BERT NSP negatives from random documents instead of SOP.")
    flags.DEFINE_integer("max_seq_length", 512, "Maximum sequence length.")
    flags.DEFINE_integer("ngram", 3, "Maximum number of ngrams to mask.")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
    flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation (every random choice).")
    flags.DEFINE_integer("dupe_factor", 40, "Number of times to duplicate the input data (with different masks).")
    flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
    flags.DEFINE_float("short_seq_prob", 0.1, "Probability of creating sequences shorter than the maximum.")
    flags.DEFINE_integer("num_workers", 1, "Worker processes; the output is the same for any number.")
    flags.DEFINE_float("shard_size_mb", 32.0, "Raw text per shard (memory bound; shuffles are per shard).")
    flags.DEFINE_string("runner", None, "Apache Beam runner (DirectRunner, DataflowRunner, FlinkRunner, "
                        "SparkRunner, ...); unset: the local writer. Other Beam pipeline options follow it.")
    flags.DEFINE_integer("num_output_shards", 0, "With --runner: files per output prefix (0: the runner chooses).")


def options_from_flags(fl):
    """`PretrainingOptions` from the flags of the same names (the original's)."""
    return PretrainingOptions(**{field.name: fl[field.name].value for field in dataclasses.fields(PretrainingOptions)})


def _main(argv):
    fl = flags.FLAGS
    extra = argv[1:]
    common = dict(vocab_file=fl.vocab_file, spm_model_file=fl.spm_model_file, options=options_from_flags(fl),
                  shard_size_mb=fl.shard_size_mb)
    if not fl.runner:
        if extra:
            raise app.UsageError(f"Unknown arguments {extra} (Beam pipeline options need --runner).")
        write_pretraining_examples(fl.input_file, fl.output_file, num_workers=fl.num_workers, **common)
        return
    # Deferred: apache_beam is the optional `[beam]` extra, needed only with --runner.
    from albert_tf.tasks.pretraining import beam_writer as pretraining_beam

    pretraining_beam.run_pipeline(fl.input_file, fl.output_file, num_output_shards=fl.num_output_shards,
                                  pipeline_args=[f"--runner={fl.runner}"] + extra, **common)


def _parse_known_flags(argv):
    """absl parsing that leaves unknown `--flags` (Beam pipeline options) in argv for `_main`."""
    return flags.FLAGS(argv, known_only=True)


def main():
    define_flags()
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("output_file")
    cli.run_app(_main, CLI_HELP, [__name__], flags_parser=_parse_known_flags)


if __name__ == "__main__":
    main()
