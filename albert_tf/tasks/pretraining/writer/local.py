"""The local pretraining data writer: shards of the corpus over worker processes, records to TFRecord files.

Documents are cut into shards of about `shard_size_mb` of raw text (only at blank lines, so never inside a
document); each shard is processed by `pretraining_instances.ShardProcessor` as the original
`create_pretraining_data.py` processes its whole corpus (the document shuffle, the random-document draws for
B segments and the instance shuffle happen within a shard). A shard's records go to a temporary file, then are
copied out in the shuffled order, so memory holds one shard of documents per worker, where the original holds
the whole corpus and every instance. Shards run in `num_workers` processes and are written in shard order,
round-robin over the output files as the original, so the bytes do not depend on the number of workers.
Missing inputs are errors naming the pattern; bytes that are not UTF-8 are an error naming the file and line
(the original drops them silently); an empty corpus is an error; outputs are written to temporary names and
renamed when complete.
"""

import concurrent.futures
import contextlib
import multiprocessing
import os
import tempfile
import time
import uuid

import tensorflow as tf
from absl import logging

from albert_tf.tasks.pretraining.inputs import expand_input_files
from albert_tf.errors import InputError
from albert_tf.fileio import atomic_path
from albert_tf.tasks.pretraining.writer.instances import (PretrainingDataOptions, PretrainingStats, ShardProcessor, TokenSpace,
                                                  check_vocab_file, shard_seed)
from albert_tf.tasks.pretraining.writer.shuffle import shuffled_range


def run_shard(processor, raw_lines, seed, temp_path, progress=None):
    """Writes one shard's records to `temp_path`; returns (offsets, shuffled order, stats).

    Record j is bytes offsets[j]:offsets[j + 1] of the file; `order` is the original's final
    `rng.shuffle(instances)`. A shard without documents writes no file.
    """
    stats = PretrainingStats(ngram_counts=(0,) * processor.options.ngram,
                             ngram_draws=(0,) * processor.options.ngram)
    offsets = [0]
    records = processor.records(raw_lines, seed, stats, progress)
    del raw_lines
    first = next(records, None)
    if first is None:
        return offsets, [], stats
    with open(temp_path, "wb") as f:
        f.write(first)
        offsets.append(len(first))
        for record in records:
            f.write(record)
            offsets.append(offsets[-1] + len(record))
    return offsets, shuffled_range(processor.rng, len(offsets) - 1), stats


# ---------------------------------------------------------------------------------------------------
# Workers.

_WORKER = {}


def _worker_init(vocab_file, spm_model_file, options):
    _WORKER["processor"] = ShardProcessor(TokenSpace(vocab_file, spm_model_file, options.do_lower_case), options)


def _worker_run(shard_index, raw_lines, seed, temp_path):
    processor = _WORKER["processor"]
    offsets, order, stats = run_shard(processor, raw_lines, seed, temp_path)
    return shard_index, offsets, order, stats




def iter_shards(input_files, shard_bytes):
    """Yields (raw lines, bytes) per shard; a shard is cut only at a blank line (a document boundary).

    Lines end at `\n` only, as the original's `readline`; a file's last line ends at the end of the
    file (documents do continue into the next file, as in the original).
    """
    lines = []
    size = 0
    for path in input_files:
        carry = b""
        number = 0   # lines of `path` read so far
        with tf.io.gfile.GFile(path, "rb") as reader:
            while True:
                block = reader.read(1 << 20)
                if not block:
                    break
                parts = (carry + block).split(b"\n")
                carry = parts.pop()
                check_utf8(path, parts, number)
                number += len(parts)
                for line in parts:
                    if size >= shard_bytes and not line.strip():
                        yield lines, size
                        lines, size = [], 0
                    lines.append(line)
                    size += len(line) + 1
        if carry:
            check_utf8(path, [carry], number)
            lines.append(carry)
            size += len(carry)
    if lines:
        yield lines, size


def check_utf8(path, raw_lines, first_line):
    """Raises `InputError` naming `path:line` when one of `raw_lines` (lines `first_line + 1`, ...) is not UTF-8.

    The original decodes with `errors="ignore"` and drops such bytes silently; a corpus in another encoding is
    refused here, before its shard is processed (the outputs, written under temporary names, are removed).
    """
    data = b"\n".join(raw_lines)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = first_line + data.count(b"\n", 0, e.start) + 1
        raise InputError(f"{path}:{line}: expected UTF-8 text, got the bytes {data[e.start:e.start + 4]!r} "
                         "(is the file in another encoding?)") from None


def write_pretraining_examples(
    input_files,
    output_files,
    vocab_file=None,
    spm_model_file=None,
    options=PretrainingDataOptions(),
    num_workers=1,
    shard_size_mb=32.0,
):
    """Writes ALBERT pretraining TFRecords (the schema of the original `create_pretraining_data.py`) from text.

    Args:
        input_files: str of comma-separated globs, or list of paths; one sentence per line, blank line
            between documents.
        output_files: str (comma-separated) or list of TFRecord paths, filled round-robin.
        vocab_file: WordPiece `vocab.txt` (used when `spm_model_file` is not given).
        spm_model_file: SentencePiece `.model`.
        options: `PretrainingDataOptions` (the original's flags).
        num_workers: int, processes; the output does not depend on it.
        shard_size_mb: float, raw text per shard (memory per worker is about this times a small factor).

    Returns:
        `PretrainingStats` of the whole run.
    """
    files, output_files = _checked_files(input_files, output_files, vocab_file, spm_model_file, options,
                                         num_workers, shard_size_mb)
    total_bytes = sum(tf.io.gfile.stat(f).length for f in files)
    logging.info("Reading %d input files (%.1f MB):", len(files), total_bytes / 1e6)
    for f in files:
        logging.info("  %s", f)
    # Shard files are local: next to the first output, or in the system temp dir for remote outputs.
    if "://" in output_files[0]:
        out_dir = tempfile.gettempdir()
    else:
        out_dir = os.path.dirname(os.path.abspath(output_files[0]))
    for path in output_files:
        parent = os.path.dirname(path)
        if parent:
            tf.io.gfile.makedirs(parent)
    emitter = _ShardEmitter(out_dir, total_bytes, options.ngram)
    stats = emitter.stats
    try:
        with contextlib.ExitStack() as outputs:
            # Each output is written under a temporary name and renamed only if the whole run succeeds.
            temp_outputs = [outputs.enter_context(atomic_path(path)) for path in output_files]
            emitter.writers = [outputs.enter_context(tf.io.TFRecordWriter(path)) for path in temp_outputs]
            _write_shards(iter_shards(files, int(shard_size_mb * 1e6)), vocab_file, spm_model_file, options,
                          num_workers, emitter.shard_path, emitter.temp_shards, emitter.emit)
            for w in emitter.writers:
                w.close()
            if stats.documents == 0:
                raise InputError(
                    f"The corpus is empty: no line of `{','.join(files)}` gives a token (expected one sentence "
                    "per line, blank lines between documents)."
                )
    finally:
        for path in emitter.temp_shards:
            if os.path.exists(path):
                os.remove(path)
    elapsed = time.time() - emitter.started
    logging.info("Wrote %d instances to %d files in %.1f s (%.1f instances/s).", stats.instances,
                 len(output_files), elapsed, stats.instances / max(elapsed, 1e-9))
    logging.info("Summary: %s", stats.summary())
    return stats


def _checked_files(input_files, output_files, vocab_file, spm_model_file, options, num_workers, shard_size_mb):
    """`(input paths, output paths)` after checking every argument of `write_pretraining_examples`."""
    options.validate()
    if not spm_model_file and not vocab_file:
        raise InputError("`vocab_file` or `spm_model_file` is required (both are None).")
    for name, path in (("spm_model_file", spm_model_file), ("vocab_file", None if spm_model_file else vocab_file)):
        if path and not tf.io.gfile.exists(path):
            raise InputError(f"`{name}`: the file `{path}` does not exist.")
    if num_workers < 1:
        raise InputError(f"`num_workers` must be >= 1. Received: `num_workers={num_workers}`.")
    if shard_size_mb <= 0:
        raise InputError(f"`shard_size_mb` must be positive. Received: `shard_size_mb={shard_size_mb}`.")
    check_vocab_file(vocab_file, spm_model_file)
    files = expand_input_files(input_files)
    if isinstance(output_files, str):
        output_files = [f for f in output_files.split(",") if f]
    if not output_files:
        raise InputError(f"`output_file` names no file. Received: `{output_files!r}`.")
    return files, output_files


class _ShardEmitter:
    """Copies finished shards' records to the outputs, round-robin in the shuffled order, and merges their
    statistics; `temp_shards` are the shard files not yet removed."""

    def __init__(self, out_dir, total_bytes, ngram):
        self.out_dir = out_dir
        self.run_id = uuid.uuid4().hex[:8]
        self.total_bytes = total_bytes
        self.stats = PretrainingStats(ngram_counts=(0,) * ngram, ngram_draws=(0,) * ngram)
        self.started = time.time()
        self.done_bytes = 0
        self.written = 0
        self.writers = []
        self.temp_shards = set()

    def shard_path(self, k):
        return os.path.join(self.out_dir, f".albert-shard-{self.run_id}-{k:05d}.tmp")

    def emit(self, shard_index, offsets, order, shard_stats, shard_size):
        path = self.shard_path(shard_index)
        if order:
            # pread, not mmap: mapped pages of a large shard file would count as resident memory.
            fd = os.open(path, os.O_RDONLY)
            try:
                for j in order:
                    start = int(offsets[j])
                    self.writers[self.written % len(self.writers)].write(
                        os.pread(fd, int(offsets[j + 1]) - start, start))
                    self.written += 1
            finally:
                os.close(fd)
        if os.path.exists(path):  # a shard without documents writes no file
            os.remove(path)
        self.temp_shards.discard(path)
        stats = self.stats
        stats.merge(shard_stats)
        self.done_bytes += shard_size
        elapsed = time.time() - self.started
        rate = stats.instances / max(elapsed, 1e-9)
        eta = elapsed * (self.total_bytes - self.done_bytes) / max(self.done_bytes, 1)
        logging.info(
            "shard %d done: %d documents, %d instances (%.1f instances/s), %.1f%% of input, ETA %.0f s",
            shard_index, stats.documents, stats.instances, rate,
            100.0 * self.done_bytes / max(self.total_bytes, 1), eta,
        )


def _write_shards(shards, vocab_file, spm_model_file, options, num_workers, shard_path, temp_shards, emit):
    """Processes `shards` in this process or in `num_workers` processes; `emit`s them in shard order."""
    if num_workers == 1:
        processor = ShardProcessor(TokenSpace(vocab_file, spm_model_file, options.do_lower_case), options)
        last_log = [time.time()]

        def progress(dupe, d, n_docs, n_instances, elapsed):
            if time.time() - last_log[0] >= 30:
                last_log[0] = time.time()
                logging.info("  current shard: pass %d/%d, document %d/%d, %d instances (%.1f/s)",
                             dupe + 1, options.dupe_factor, d, n_docs, n_instances,
                             n_instances / max(elapsed, 1e-9))

        for k, (raw_lines, size) in enumerate(shards):
            temp_shards.add(shard_path(k))
            offsets, order, shard_stats = run_shard(
                processor, raw_lines, shard_seed(options.random_seed, k), shard_path(k), progress)
            emit(k, offsets, order, shard_stats, size)
    else:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=num_workers, mp_context=context, initializer=_worker_init,
            initargs=(vocab_file, spm_model_file, options),
        ) as pool:
            in_flight = {}  # shard index -> (future, bytes)
            next_to_emit = 0
            for k, (raw_lines, size) in enumerate(shards):
                temp_shards.add(shard_path(k))
                in_flight[k] = (pool.submit(_worker_run, k, raw_lines, shard_seed(options.random_seed, k),
                                            shard_path(k)), size)
                del raw_lines
                # Keep at most num_workers + 1 shards of text in flight: bounded memory.
                while len(in_flight) > num_workers:
                    future, shard_size = in_flight.pop(next_to_emit)
                    emit(*future.result()[:4], shard_size)
                    next_to_emit += 1
            while in_flight:
                future, shard_size = in_flight.pop(next_to_emit)
                emit(*future.result()[:4], shard_size)
                next_to_emit += 1
