"""tf.data reader of the pretraining TFRecords (as `input_fn_builder` in the original `run_pretraining.py`).

Training: the file list repeated and shuffled, `cycle_length = min(4, n_files)` files read interleaved
(non-deterministic order, as the original's `sloppy=True`), `shuffle(100)`, parse, int64 -> int32,
`batch(drop_remainder=True)`. With a `seed`, the same steps as a positional stream (`albert_tf.data.record_stream`:
seeded file order per epoch, interleave groups, shuffle blocks of 100) that can start at any batch. Eval: the files read in order, repeated (eval runs a fixed
number of steps), batched with `drop_remainder=True`. Shapes are static.
"""

import tensorflow as tf
from absl import logging
from google.protobuf.message import DecodeError

from albert_tf.data import features as features_lib
from albert_tf.data import record_stream as positional
from albert_tf.errors import InputError, tf_error_text
from albert_tf.tasks.pretraining.data import PRETRAINING

# The features `run_pretraining.py` reads (`token_boundary` is written but only read for online masking).
_READ = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
         "next_sentence_labels")


def expand_input_files(input_file, glob=tf.io.gfile.glob):
    """Comma-separated globs (or a list of them) -> the sorted matches of each pattern, in pattern order.

    The one file-list rule of the package: the pretraining data writer (locally and on Beam, which passes
    its own `glob`) and `run_pretraining.py` read their inputs in this order.

    Args:
        input_file: str of comma-separated globs, or a list of globs / paths.
        glob: callable(pattern) -> list of paths.

    Raises:
        ValueError naming the patterns that match nothing.
    """
    patterns = input_file.split(",") if isinstance(input_file, str) else list(input_file or [])
    patterns = [p.strip() for p in patterns if p and p.strip()]
    if not patterns:
        raise InputError(f"`input_file` must name files (globs, comma separated). Received: {input_file!r}.")
    files, empty = [], []
    for pattern in patterns:
        matched = sorted(glob(pattern))
        if not matched:
            empty.append(pattern)
        files.extend(matched)
    if empty:
        raise InputError(f"`input_file` pattern(s) matched no file (missing input): {empty}.")
    return files


def name_to_features(max_seq_length, max_predictions_per_seq):
    spec = features_lib.parse_spec(PRETRAINING, seq=max_seq_length, pred=max_predictions_per_seq)
    return {name: spec[name] for name in _READ}


def _first_record(path):
    """The first record of TFRecord file `path` (None when it is empty), or an `InputError` naming the file."""
    try:
        for record in tf.data.TFRecordDataset(path, buffer_size=1 << 16).take(1):
            return record.numpy()
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
        raise InputError(f"{path}: not a TFRecord file of the pretraining data (its first record cannot be read: "
                         f"{tf_error_text(e)}); expected the output of create_pretraining_data.py.") from None
    return None


def check_record_lengths(input_files, max_seq_length, max_predictions_per_seq):
    """Reads the first record of every file and parses the first file's, before any training.

    Raises an `InputError` that names the file when one is not a TFRecord file (random bytes, a text
    file), one when no file holds a record (the repeating training input would wait forever), and one that names
    the file, the feature and both lengths when the data were written with another
    `max_seq_length` / `max_predictions_per_seq`. Reads one record per file.
    """
    records = [_first_record(path) for path in input_files]
    if records and all(record is None for record in records):
        # The training input repeats its files: with no record in any of them it would wait forever.
        raise InputError(f"The pretraining input files hold no record (zero-length TFRecord files): "
                         f"{', '.join(input_files)}. Write them again with create_pretraining_data.py.")
    for path, record in zip(input_files, records):
        if record is None:
            logging.warning("%s holds no record (a zero-length TFRecord file): it adds nothing to the input.", path)
    for record in records[:1]:
        if record is None:
            continue
        try:
            example = tf.train.Example.FromString(record)
        except DecodeError:
            raise InputError(f"{input_files[0]}: the first record is not a tf.train.Example; expected the output "
                             "of create_pretraining_data.py.") from None
        expected = {name: spec.shape[0] for name, spec in
                    name_to_features(max_seq_length, max_predictions_per_seq).items()}
        for name, length in expected.items():
            if name not in example.features.feature:
                raise InputError(f"{input_files[0]}: the first record has no feature `{name}`; expected the "
                                 "pretraining schema of create_pretraining_data.py.")
            feature = example.features.feature[name]
            values = feature.int64_list.value or feature.float_list.value
            if len(values) != length:
                flag = "max_seq_length" if length == max_seq_length and name in (
                    "input_ids", "input_mask", "segment_ids") else "max_predictions_per_seq"
                raise InputError(f"{input_files[0]}: feature `{name}` has {len(values)} values but "
                                 f"`{flag}` asks for {length}. The flags must match data generation.")


def pretraining_dataset(input_files, max_seq_length, max_predictions_per_seq, batch_size, is_training,
                        input_context=None, masked_lm_budget=0, num_cpu_threads=4, seed=None, start_batch=0,
                        shuffle_buffer=100):
    """The pretraining `tf.data.Dataset` of dicts of `[batch_size, ...]` tensors (int32, weights float32).

    Args:
        input_files: list of TFRecord paths, or a comma-separated string of globs.
        max_seq_length: int, L of the data.
        max_predictions_per_seq: int, P of the data.
        batch_size: int, batch size of this dataset (per replica under a strategy).
        is_training: bool, shuffled and interleaved (True) or sequential (False).
        input_context: `tf.distribute.InputContext` or None; with several input pipelines each reads a
            shard of the files (or of the records when there are fewer files than pipelines).
        masked_lm_budget: float, the original flag; > 0 (online masking) is not supported: the original's
            parser then drops `masked_lm_*` while its model still reads them.
        num_cpu_threads: int, the original's `num_cpu_threads` (interleave cycle length cap).
        seed: int or None; training reads the seeded positional stream (order a function of the seed and
            the position) instead of the original's sloppy interleave and shuffle buffer.
        start_batch: int, training with a `seed`: the batches of this pipeline to skip (a resumed run's
            position); whole epochs and files are skipped from their record counts, without reading them.
        shuffle_buffer: int, the training shuffle buffer (unseeded) or positional shuffle block (seeded).
    """
    if masked_lm_budget and masked_lm_budget > 0:
        raise InputError("`masked_lm_budget` > 0 (online masking) is not implemented: the original release "
                         "only switches its parser to `token_boundary` and then fails on the missing "
                         f"`masked_lm_*` features. Received: masked_lm_budget={masked_lm_budget}.")
    if isinstance(input_files, str):
        input_files = expand_input_files(input_files)
    input_files = list(input_files)
    if not input_files:
        raise InputError("`input_files` is empty.")
    if int(batch_size) < 1:
        raise InputError(f"`batch_size` must be positive. Received: batch_size={batch_size}.")
    if start_batch and (seed is None or not is_training):
        raise InputError(f"Starting the input at a batch (start_batch={start_batch}) needs seeded training input "
                         "(`random_seed`).")
    spec = name_to_features(max_seq_length, max_predictions_per_seq)

    def decode(record):
        return features_lib.cast_int64_to_int32(tf.io.parse_single_example(record, spec))

    pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    if is_training and seed is not None:
        dataset = positional.positional_records(input_files, seed, int(start_batch) * int(batch_size),
                                                input_context, cycle_length=num_cpu_threads,
                                                block_size=shuffle_buffer)
    elif is_training:
        dataset = tf.data.Dataset.from_tensor_slices(tf.constant(input_files))
        shard_records = False
        if pipelines > 1:
            if len(input_files) >= pipelines:
                dataset = dataset.shard(pipelines, pipeline_id)
            else:
                shard_records = True
        num_files = len(input_files) if shard_records or pipelines == 1 else max(
            1, len(input_files[pipeline_id::pipelines]))
        dataset = dataset.repeat()
        dataset = dataset.shuffle(buffer_size=num_files)
        # `cycle_length` is the number of files read in parallel, in a sloppy order (unseeded).
        cycle_length = min(num_cpu_threads, num_files)
        dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=cycle_length,
                                     num_parallel_calls=cycle_length, deterministic=False)
        if shard_records:
            dataset = dataset.shard(pipelines, pipeline_id)
        dataset = dataset.shuffle(buffer_size=shuffle_buffer)
    else:
        dataset = tf.data.TFRecordDataset(input_files)
        if pipelines > 1:
            dataset = dataset.shard(pipelines, pipeline_id)
        # Eval runs a fixed number of steps: never run out of data.
        dataset = dataset.repeat()
    dataset = dataset.map(decode, num_parallel_calls=num_cpu_threads, deterministic=True)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    return dataset.prefetch(tf.data.AUTOTUNE)
