"""A seeded "positional" record stream: element k of the training input depends only on (seed, k).

TF 2.20 cannot checkpoint the distributed input iterators of `MirroredStrategy`, `MultiWorkerMirroredStrategy`
and `TPUStrategy`, so a seeded run restarted under them resumes its input by position instead: the training
loop asks the input for the stream from the restored step's record, and this module builds it without reading
the records before it where the format allows.

The stream of one input pipeline over its TFRecord files:

* epoch e visits the files in a stateless permutation keyed by (seed, e);
* the files of an epoch are read `cycle_length` at a time, in fixed consecutive groups of that permutation,
  round-robin one record per file (a deterministic interleave; a file that runs out leaves the rotation);
* the records are cut into blocks of `block_size` consecutive stream positions and each block is permuted by
  a stateless permutation keyed by (seed, block index): the positional stand-in for the original
  `shuffle(100)`, whose buffer depends on the whole history.

Starting at record R: whole epochs and whole file groups are skipped by arithmetic on the files' record counts
(`count_records` reads only the TFRecord headers and seeks over the payloads); inside the group reached, each
file starts at its own offset with `TFRecordDataset.skip` (which also steps from header to header) and the
round-robin starts at the right file; the records of the block before R are read and dropped.

Several input pipelines: with at least as many files as pipelines, pipeline p reads files `p::pipelines` as
its own stream (as the original shards the file list); with fewer, every pipeline follows the stream of all
files and keeps records `p::pipelines` of it, so its record R is record `R * pipelines + p` of that stream.
"""

import numbers
import struct

import tensorflow as tf
from absl import logging

from albert_tf.errors import InputError

# A TFRecord record: uint64 payload length, uint32 masked CRC of the length, payload, uint32 masked CRC.
_HEADER_BYTES = 12
_FOOTER_BYTES = 4
# The record position range of an endless stream (`Dataset.range` needs an end).
_ENDLESS = 2 ** 62


def count_records(path):
    """Number of records in the (uncompressed) TFRecord file `path`, from the record headers only.

    Each record's length is read and its payload and footer are seeked over, so the cost is one small read
    per record whatever the record size.

    Raises:
        InputError naming the file when a record is truncated (a partly written file).
    """
    count, position = 0, 0
    with tf.io.gfile.GFile(path, "rb") as f:
        size = f.size()
        while position < size:
            header = f.read(_HEADER_BYTES)
            if len(header) < _HEADER_BYTES:
                raise InputError(f"{path}: truncated TFRecord header at byte {position} (record {count}): the "
                                 "file is incomplete or not an uncompressed TFRecord file.")
            (length,) = struct.unpack("<Q", header[:8])
            position += _HEADER_BYTES + length + _FOOTER_BYTES
            if position > size:
                raise InputError(f"{path}: record {count} claims {length} bytes past the end of the file "
                                 f"({size} bytes): the file is incomplete or not an uncompressed TFRecord file.")
            f.seek(position)
            count += 1
    return count


def _permutation(n, seed, key):
    """A stateless permutation of `range(n)` (int64) keyed by (seed, key); the same in graphs and eagerly."""
    return tf.random.experimental.stateless_shuffle(
        tf.range(n, dtype=tf.int64), seed=tf.stack([tf.constant(seed, tf.int64), tf.cast(key, tf.int64)]),
        alg="philox")


def _file_order_key(epoch):
    # File orders and block permutations use disjoint keys: even for epochs, odd for blocks.
    return 2 * epoch


def _block_key(block):
    return 2 * block + 1


def file_order(num_files, seed, epoch):
    """The file indices in the order epoch `epoch` reads them (a list of ints)."""
    return [int(i) for i in _permutation(num_files, seed, _file_order_key(epoch)).numpy()]


def _interleave(files, skips, cycle_length):
    """The round-robin of `files` (one record each in turn), each file starting after its `skips` records."""
    return tf.data.Dataset.from_tensor_slices((files, skips)).interleave(
        lambda path, skip: tf.data.TFRecordDataset(path).skip(skip), cycle_length=cycle_length, block_length=1,
        num_parallel_calls=cycle_length, deterministic=True)


def _groups_from(files, seed, cycle_length, first_group):
    """The records of the global file groups `first_group, first_group + 1, ...` (epoch after epoch)."""
    num_files = len(files)
    groups_per_epoch = -(-num_files // cycle_length)
    paths = tf.constant(files)

    def group_records(group):
        epoch, index = group // groups_per_epoch, group % groups_per_epoch
        order = _permutation(num_files, seed, _file_order_key(epoch))
        members = order[index * cycle_length:tf.minimum((index + 1) * cycle_length, num_files)]
        names = tf.gather(paths, members)
        return _interleave(names, tf.zeros_like(members), cycle_length)

    return tf.data.Dataset.range(first_group, _ENDLESS).flat_map(group_records)


def _locate_in_group(counts, offset):
    """`(round, index)`: the `offset`-th record of a round-robin over files of `counts` records is record
    `round` of the `index`-th file among those with more than `round` records."""
    round_, remaining = 0, offset
    for threshold in sorted(set(counts)):
        live = sum(1 for c in counts if c > round_)
        span = (threshold - round_) * live
        if remaining < span:
            return round_ + remaining // live, remaining % live
        remaining -= span
        round_ = threshold
    raise AssertionError(f"offset {offset} is past the group's {sum(counts)} records")


def base_stream(files, seed, cycle_length, start=0, counts=None):
    """The unshuffled stream of `files` (epoch file orders and group round-robins) from record `start`.

    Args:
        files: list of TFRecord paths.
        seed: int.
        cycle_length: int, files read in turn (at most `len(files)`).
        start: int, the first stream position returned.
        counts: optional list of the files' record counts (`count_records`); read when needed and not given.

    Returns:
        `(dataset, skipped)`: the endless `tf.data.Dataset` of serialized records and a dict of what was
        skipped without reading payloads: `epochs`, `files` (whole files, whole epochs included) and
        `records` (records skipped by header inside the group reached).
    """
    cycle_length = max(1, min(int(cycle_length), len(files)))
    skipped = {"epochs": 0, "files": 0, "records": 0}
    if start == 0:
        return _groups_from(files, seed, cycle_length, 0), skipped
    if counts is None:
        counts = [count_records(path) for path in files]
    total = sum(counts)
    if total == 0:
        raise InputError(f"The training input files have no record: {files}.")
    epoch, offset = divmod(int(start), total)
    order = file_order(len(files), seed, epoch)
    groups_per_epoch = -(-len(files) // cycle_length)
    for index in range(groups_per_epoch):
        members = order[index * cycle_length:(index + 1) * cycle_length]
        size = sum(counts[i] for i in members)
        if offset < size:
            break
        offset -= size
    round_, position = _locate_in_group([counts[i] for i in members], offset)
    live = [i for i in members if counts[i] > round_]
    # The files before `position` in the rotation have given their record `round_` already; the rotation
    # continues at `live[position]`, which keeps the order of the full round-robin from there on.
    rotation = live[position:] + live[:position]
    skips = [round_ + 1 if i in live[:position] else round_ for i in rotation]
    first = _interleave(tf.constant([files[i] for i in rotation]), tf.constant(skips, tf.int64), cycle_length)
    rest = _groups_from(files, seed, cycle_length, epoch * groups_per_epoch + index + 1)
    skipped.update(epochs=epoch, files=epoch * len(files) + index * cycle_length, records=offset)
    return first.concatenate(rest), skipped


def positional_records(files, seed, start_record=0, input_context=None, cycle_length=4, block_size=100,
                       counts=None):
    """The seeded training stream of serialized records of one input pipeline, from its record `start_record`.

    Element k of the stream depends only on (seed, k, the files, the pipeline): a stream started at R equals
    the stream started at 0 without its first R elements, and every record of the pipeline's files appears
    once in each epoch of `sum(records)` positions of the unshuffled stream (before the block permutation).

    Args:
        files: list of TFRecord paths (all the training files; sharded here by `input_context`).
        seed: int, the run's `random_seed`.
        start_record: int, the records of this pipeline already consumed (the restored step's position).
        input_context: `tf.distribute.InputContext` or None (one pipeline).
        cycle_length: int, files read in turn (capped at the pipeline's file count).
        block_size: int, records per positional shuffle block (the original's shuffle buffer).
        counts: optional `{path: record count}` (else the headers are read when `start_record > 0`).

    Returns:
        an endless `tf.data.Dataset` of scalar string records.
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise InputError(f"The positional input needs an integer `random_seed`. Received: {seed!r}.")
    seed = int(seed)
    files = list(files)
    if not files:
        raise InputError("The training input has no file.")
    if int(block_size) < 1 or int(start_record) < 0:
        raise InputError(f"`block_size` must be positive and `start_record` >= 0. Received: "
                         f"block_size={block_size}, start_record={start_record}.")
    pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    stride = 1
    if pipelines > 1:
        if len(files) >= pipelines:
            files = files[pipeline_id::pipelines]
        else:
            stride = pipelines
    start = int(start_record) * stride
    block_size = int(block_size)
    first_block = start // block_size
    file_counts = [counts[path] for path in files] if counts else None
    records, skipped = base_stream(files, seed, cycle_length, first_block * block_size, file_counts)

    def permute(block, values):
        return tf.gather(values, _permutation(block_size, seed, _block_key(block)))

    stream = records.batch(block_size, drop_remainder=True).enumerate(start=first_block).map(permute).unbatch()
    stream = stream.skip(start - first_block * block_size)
    if stride > 1:
        stream = stream.shard(pipelines, pipeline_id)
    if start_record:
        logging.info("Input pipeline %d/%d resumes at its record %d (stream position %d): skipped %d epoch(s) "
                     "and %d whole file(s) by record counts, %d record(s) by their headers, and read %d record(s) "
                     "of the current shuffle block.", pipeline_id, pipelines, start_record, start,
                     skipped["epochs"], skipped["files"], skipped["records"], start - first_block * block_size)
    return stream


def task_records(input_files, is_training, batch_size, input_context=None, shuffle_buffer=100, seed=None,
                 start_batch=0):
    """The serialized records a fine-tuning reader (GLUE, SQuAD, RACE) parses, from its cached TFRecords.

    Training with a `seed`: the positional stream (one file at a time, shuffle blocks of `shuffle_buffer`)
    from batch `start_batch` of `batch_size` (a resumed run's position). Training without one: the original's
    `repeat()` and `shuffle(shuffle_buffer)`. Eval / predict: the records in file order. With a
    `tf.distribute.InputContext` of several input pipelines each reads its shard of the records.

    Args:
        input_files: a TFRecord path or a list of them.
        is_training: bool.
        batch_size: int, per-replica batch size (the unit of `start_batch`).
        input_context: optional `tf.distribute.InputContext`.
        shuffle_buffer: int, the original's shuffle buffer (the block size of the positional stream).
        seed: int or None.
        start_batch: int, batches to skip; needs seeded training input.
    """
    if start_batch and (seed is None or not is_training):
        raise InputError(f"Starting the input at a batch (start_batch={start_batch}) needs seeded training input "
                         "(`random_seed`).")
    files = [input_files] if isinstance(input_files, str) else list(input_files)
    if is_training and seed is not None:
        return positional_records(files, seed, int(start_batch) * int(batch_size), input_context, cycle_length=1,
                                  block_size=shuffle_buffer)
    records = tf.data.TFRecordDataset(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        records = records.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        records = records.repeat().shuffle(buffer_size=shuffle_buffer)
    return records
