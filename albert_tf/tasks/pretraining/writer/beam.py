"""The pretraining data writer on Apache Beam (DirectRunner, Dask, Dataflow, Flink, Spark): same examples, any scale.

The pipeline cuts the corpus into the local writer's shards, processes each shard with the same
`instances.ShardProcessor` and seed (`shard_seed(random_seed, k)`) and in the same order (`local.run_shard`), and
writes the records to sharded TFRecord files; only reading, distribution and writing differ from the local
writer, so the multiset of serialized examples equals the local writer's for the same `shard_size_mb`,
whichever worker processes which shard.

1. Files: `--input_file` globs and comma lists expand through Beam's file systems (local, `gs://`, `s3://`,
   `hdfs://` where the Beam extras are installed), in the order of `inputs.expand_input_files`.
2. Shards: one worker per file finds the byte offsets of its blank lines (the document boundaries); one step
   then cuts the concatenated corpus exactly as `local.iter_shards` does (the first blank line at least
   `shard_size_mb` after the previous cut), so a document is never split between two workers. That step holds
   8 bytes per document of the corpus. A document longer than a shard is an error naming its file and offset:
   it would break the memory bound. The shards are grouped by index, which spreads them over the workers.
3. Work: each shard is read by one worker from its byte ranges (memory: one shard of text and its tokens).
   The SentencePiece model reaches workers as a file path, read once per worker in `DoFn.setup`. The worker
   writes the shard's records itself, record i of shard k to prefix (k + i) mod the number of prefixes, as
   `TEMP_PREFIX-shard-KKKKK` (a unique name, then a rename: a shard made twice, when a worker is lost and its
   work redone, leaves one copy); only the file names and the shard's `PretrainingStats` travel on.
4. Output: with `num_output_shards` 0, the shards' files are the output files; otherwise files of shard k are
   concatenated into file k mod `num_output_shards` (TFRecord files concatenate). One last step, which
   depends on every other, checks the corpus is not empty, moves the files from the temporary directory
   beside each prefix to `PREFIX-SSSSS-of-NNNNN` and writes the summary (`PretrainingStats`, as the local
   writer logs it) to `FIRST_PREFIX-summary.json`; a failed run removes the temporary directories.

The steps use Beam's primitive transforms only (`Create`, `ParDo` with one output, `GroupByKey`, `Flatten`),
without side inputs: Beam's DaskRunner merges the outputs of a multi-output `ParDo` and recomputes a side
input inside the task that reads it, and it computes only the graph under the last step.
"""

import json
import os
import struct
import tempfile
import uuid

import apache_beam as beam
import google_crc32c
import numpy as np
from absl import logging
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from albert_tf.tasks.pretraining.inputs import expand_input_files
from albert_tf.tasks.pretraining.writer.instances import (PretrainingDataOptions, PretrainingStats, ShardProcessor, TokenSpace,
                                                  check_vocab_file, shard_seed)
from albert_tf.errors import InputError
from albert_tf.tasks.pretraining.writer.local import run_shard

_BLOCK = 1 << 20


def beam_glob(pattern):
    """Paths matching `pattern` on Beam's file systems (an empty list when nothing matches)."""
    try:
        result = FileSystems.match([pattern])[0]
    except Exception:  # Beam raises BeamIOError / OSError for a missing non-glob path.
        return []
    return [m.path for m in result.metadata_list]


def _file_size(path):
    return FileSystems.match([path])[0].metadata_list[0].size_in_bytes


def stage_file(path, directory):
    """Copies `path` (any Beam file system) to a local file in `directory`; returns the local path."""
    local = os.path.join(directory, os.path.basename(path.rstrip("/")) or "staged")
    try:
        with FileSystems.open(path) as src, open(local, "wb") as dst:
            while True:
                block = src.read(_BLOCK)
                if not block:
                    break
                dst.write(block)
    except Exception as e:
        raise InputError(f"Cannot read `{path}`: {e}") from e
    return local


# ---------------------------------------------------------------------------------------------------
# Shards: the cut rule of `pretraining_writer.iter_shards` on byte offsets.


def blank_line_offsets(path):
    """Offsets (int64 array) of the `\\n`-terminated lines of `path` that are blank (`not line.strip()`).

    These are the places `iter_shards` may cut; a file's last line without `\\n` is never one.
    """
    offsets = []
    position = 0  # offset of the first byte of `carry`
    carry = b""
    try:
        with FileSystems.open(path) as reader:
            while True:
                block = reader.read(_BLOCK)
                if not block:
                    break
                parts = (carry + block).split(b"\n")
                carry = parts.pop()
                for line in parts:
                    if not line.strip():
                        offsets.append(position)
                    position += len(line) + 1
    except Exception as e:
        raise InputError(f"Cannot read the input file `{path}`: {e}") from e
    return np.asarray(offsets, dtype=np.int64)


def plan_shards(files, sizes, blank_offsets, shard_bytes):
    """Cuts the concatenated files as `iter_shards`; returns [[(path, start, end), ...] per shard].

    Args:
        files: list of paths, in reading order.
        sizes: list of their sizes in bytes.
        blank_offsets: list of int64 arrays, `blank_line_offsets` of each file.
        shard_bytes: int, the shard size.

    Raises:
        ValueError naming the file and offset of a document longer than `shard_bytes`.
    """
    starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    total = int(starts[-1])
    candidates = np.concatenate([np.asarray(o, np.int64) + starts[i] for i, o in enumerate(blank_offsets)]
                                + [np.zeros(0, np.int64)])
    candidates.sort()
    bounds = np.concatenate([[0], candidates, [total]])
    gaps = np.diff(bounds)
    if total and gaps.max() > shard_bytes:
        j = int(np.argmax(gaps > shard_bytes))
        at = int(bounds[j])
        f = int(np.searchsorted(starts, at, side="right") - 1)
        raise InputError(
            f"A document of `{files[f]}` starting at byte {at - int(starts[f])} runs {int(gaps[j])} bytes without "
            f"a blank line, more than a shard ({shard_bytes} bytes): raise --shard_size_mb or split the document "
            "(memory per worker is bounded by one shard).")
    cuts = [0]
    while True:
        i = int(np.searchsorted(candidates, cuts[-1] + shard_bytes, side="left"))
        if i >= len(candidates):
            break
        cuts.append(int(candidates[i]))
    cuts.append(total)
    shards = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        ranges = []
        for f, path in enumerate(files):
            a, b = max(lo, int(starts[f])), min(hi, int(starts[f + 1]))
            if a < b:
                ranges.append((path, a - int(starts[f]), b - int(starts[f])))
        if ranges:
            shards.append(ranges)
    return shards


def read_shard_lines(ranges):
    """The raw lines of a shard (as `iter_shards` yields them) from its (path, start, end) byte ranges."""
    lines = []
    for path, start, end in ranges:
        try:
            with FileSystems.open(path) as reader:
                reader.seek(start)
                data = reader.read(end - start)
        except Exception as e:
            raise InputError(f"Cannot read the input file `{path}`: {e}") from e
        if len(data) != end - start:
            raise InputError(f"The input file `{path}` changed while the pipeline ran (expected {end - start} "
                             f"bytes at offset {start}, read {len(data)}).")
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise _utf8_error(path, start, data, e) from None
        parts = data.split(b"\n")
        last = parts.pop()
        lines.extend(parts)
        if last:  # a file's last line without `\n`
            lines.append(last)
    return lines


def _utf8_error(path, start, data, error):
    """The `InputError` naming `path:line` for bytes at `data[error.start]` (file offset `start + ...`)."""
    with FileSystems.open(path) as reader:
        line = reader.read(start).count(b"\n") + data.count(b"\n", 0, error.start) + 1
    return InputError(f"{path}:{line}: expected UTF-8 text, got the bytes "
                      f"{data[error.start:error.start + 4]!r} (is the file in another encoding?)")


# ---------------------------------------------------------------------------------------------------
# Output files: TFRecord framing, written under a temporary name and renamed.


def _masked_crc(data):
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_frame(record):
    """`record` framed as in a TFRecord file: length, its masked CRC-32C, the bytes, their masked CRC-32C."""
    length = struct.pack("<Q", len(record))
    return length + struct.pack("<I", _masked_crc(length)) + record + struct.pack("<I", _masked_crc(record))


def _publish(temp, path):
    """Renames `temp` to `path`, replacing a file that a earlier attempt of the same step wrote there."""
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([temp], [path])


def _write_shard_files(local, offsets, order, k, temp_prefixes):
    """Copies a shard's records from the local file `local` (record j: bytes offsets[j]:offsets[j + 1]) in
    `order`, record i to prefix (k + i) mod the number of prefixes, into `TEMP_PREFIX-shard-KKKKK` files.

    Each file is written under a unique name and then renamed, so a step that runs twice (a worker lost and
    its work redone) leaves one complete file. Returns [(prefix index, path, records)] of the files written.
    """
    counts = [0] * len(temp_prefixes)
    paths = [f"{t}-shard-{k:05d}" for t in temp_prefixes]
    temps = [f"{path}.partial-{uuid.uuid4().hex[:8]}" for path in paths]
    writers = [None] * len(temp_prefixes)
    try:
        fd = os.open(local, os.O_RDONLY)
        try:
            for i, j in enumerate(order):
                p = (k + i) % len(temp_prefixes)
                if writers[p] is None:
                    writers[p] = FileSystems.create(temps[p])
                start = int(offsets[j])
                writers[p].write(tfrecord_frame(os.pread(fd, int(offsets[j + 1]) - start, start)))
                counts[p] += 1
        finally:
            os.close(fd)
        for w in writers:
            if w is not None:
                w.close()
    except BaseException:
        _remove([t for t, w in zip(temps, writers) if w is not None])
        raise
    written = []
    for p, (temp, path, count) in enumerate(zip(temps, paths, counts)):
        if count:
            _publish(temp, path)
            written.append((p, path, count))
    return written


def _concatenate(sources, path):
    """Writes the TFRecord files `sources`, one after the other, to `path` (a temporary name, then a rename):
    TFRecord files have no header, so their bytes concatenate into one."""
    temp = f"{path}.partial-{uuid.uuid4().hex[:8]}"
    try:
        with FileSystems.create(temp) as out:
            for source in sources:
                with FileSystems.open(source) as reader:
                    while True:
                        block = reader.read(_BLOCK)
                        if not block:
                            break
                        out.write(block)
    except BaseException:
        _remove([temp])
        raise
    _publish(temp, path)


# ---------------------------------------------------------------------------------------------------
# Beam transforms: only ParDo (one output), GroupByKey, Flatten and Create, no side input, so that every
# runner, Beam's DaskRunner included, runs them as written; the last step depends on every other.


class _ScanFile(beam.DoFn):
    def process(self, element):
        index, path = element
        yield index, blank_line_offsets(path)


class _ProcessShard(beam.DoFn):
    """Shard (k, ranges) -> ("file", prefix index, k, path, records) per file written, then ("stats", stats).

    The shard's records go to a local file, then out to one file per prefix in the original's shuffled
    order (`local.run_shard`, as the local writer), so they never travel between workers."""

    def __init__(self, vocab_file, spm_model_file, options, temp_prefixes):
        self.vocab_file = vocab_file
        self.spm_model_file = spm_model_file
        self.options = options
        self.temp_prefixes = temp_prefixes
        self.processor = None

    def setup(self):
        # The model travels as a path; each worker reads it once into a local file.
        self.staging = tempfile.mkdtemp(prefix="albert-beam-")
        vocab = self.spm_model_file or self.vocab_file
        local = stage_file(vocab, self.staging)
        space = TokenSpace(None if self.spm_model_file else local, local if self.spm_model_file else None,
                           self.options.do_lower_case)
        self.processor = ShardProcessor(space, self.options)

    def process(self, element):
        k, ranges = element
        local = os.path.join(self.staging, f"shard-{k:05d}-{uuid.uuid4().hex[:8]}.tmp")
        try:
            offsets, order, stats = run_shard(self.processor, read_shard_lines(ranges),
                                              shard_seed(self.options.random_seed, k), local)
            written = _write_shard_files(local, offsets, order, k, self.temp_prefixes) if order else []
        finally:
            if os.path.exists(local):
                os.remove(local)
        logging.info("Shard %d: %d documents, %d instances.", k, stats.documents, stats.instances)
        for p, path, count in written:
            yield "file", p, k, path, count
        yield "stats", stats

    def teardown(self):
        staging = getattr(self, "staging", None)
        if staging and os.path.isdir(staging):
            for name in os.listdir(staging):
                os.remove(os.path.join(staging, name))
            os.rmdir(staging)


def _merge_output_file(element, temp_prefixes, num_output_shards):
    """((prefix index, s), shard files) -> ("file", prefix index, s, path, records): file s of
    `num_output_shards`, the shards' files in shard order."""
    (p, s), parts = element
    parts = sorted(parts)
    path = f"{temp_prefixes[p]}-{s:05d}-of-{num_output_shards:05d}"
    _concatenate([part[1] for part in parts], path)
    return "file", p, s, path, sum(part[2] for part in parts)


def _write_text(path, text):
    """Writes `text` to `path` on Beam's file systems: a temporary name, then a rename."""
    temp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    with FileSystems.create(temp) as f:
        f.write(text.encode("utf-8"))
    FileSystems.rename([temp], [path])


def _move(sources, destinations):
    """Renames each source to its destination; a source already moved (a step run twice) is skipped."""
    pending = [(s, d) for s, d in zip(sources, destinations) if FileSystems.exists(s) or not FileSystems.exists(d)]
    if pending:
        FileSystems.rename([s for s, _ in pending], [d for _, d in pending])


def _finalize(element, prefixes, temp_prefixes, input_files, ngram, num_output_shards):
    """(None, every file and every shard's statistics) -> the final names, after the summary is written;
    fails on an empty corpus."""
    stats = PretrainingStats(ngram_counts=(0,) * ngram, ngram_draws=(0,) * ngram)
    files = [[] for _ in prefixes]
    for item in element[1]:
        if item[0] == "stats":
            stats.merge(item[1])
        else:
            files[item[1]].append(item[2:])
    if stats.documents == 0:
        raise InputError(
            f"The corpus is empty: no line of `{','.join(input_files)}` gives a token (expected one sentence per "
            "line, blank lines between documents).")
    sources, destinations = [], []
    for p, found in enumerate(files):
        found.sort()
        if num_output_shards:
            present = {s for s, _, _ in found}
            for s in range(num_output_shards):  # exactly that many files, empty ones too
                if s not in present:
                    path = f"{temp_prefixes[p]}-{s:05d}-of-{num_output_shards:05d}"
                    _concatenate([], path)
                    found.append((s, path, 0))
            found.sort()
        total = len(found)
        for i, (_, path, _) in enumerate(found):
            sources.append(path)
            destinations.append(f"{prefixes[p]}-{i:05d}-of-{total:05d}")
    _move(sources, destinations)
    summary = stats.as_dict()
    summary["files"] = destinations
    _write_text(f"{prefixes[0]}-summary.json", json.dumps(summary, indent=2) + "\n")
    yield destinations


def _remove(paths):
    """Best-effort removal of temporary files or directories (the run has already failed or finished)."""
    existing = [p for p in paths if FileSystems.exists(p)]
    if existing:
        try:
            FileSystems.delete(existing)
        except Exception as e:
            logging.warning("Could not remove temporary files %s: %s", existing, e)


def _checked_prefixes(output_files, vocab_file, spm_model_file, options, shard_size_mb, num_output_shards):
    """The output prefixes, after checking the arguments of `run_pipeline` and the vocabulary files."""
    options.validate()
    if not spm_model_file and not vocab_file:
        raise InputError("`vocab_file` or `spm_model_file` is required (both are None).")
    if shard_size_mb <= 0:
        raise InputError(f"`shard_size_mb` must be positive. Received: `shard_size_mb={shard_size_mb}`.")
    if num_output_shards < 0:
        raise InputError(f"`num_output_shards` must be >= 0. Received: `{num_output_shards}`.")
    prefixes = [p for p in output_files.split(",") if p] if isinstance(output_files, str) else list(output_files)
    if not prefixes:
        raise InputError(f"`output_file` names no prefix. Received: `{output_files!r}`.")
    for name, path in (("spm_model_file", spm_model_file), ("vocab_file", vocab_file)):
        if path and not FileSystems.exists(path):
            raise InputError(f"`{name}`: the file `{path}` does not exist.")
    with tempfile.TemporaryDirectory(prefix="albert-beam-check-") as local:
        # The checks read local copies, so any Beam file system works for the vocabulary files.
        model = stage_file(spm_model_file, local) if spm_model_file else None
        vocab = stage_file(vocab_file, local) if vocab_file else None
        if model and vocab:
            try:
                check_vocab_file(vocab, model)
            except ValueError as e:
                raise InputError(str(e).replace(vocab, vocab_file).replace(model, spm_model_file)) from None
        TokenSpace(None if model else vocab, model, options.do_lower_case)  # [CLS]/[SEP]/[MASK] present
    return prefixes


def _key(key_fn):
    return lambda x: (key_fn(x), x)


def _build_pipeline(p, files, sizes, shard_bytes, vocab_file, spm_model_file, options, num_output_shards,
                    prefixes, temp_prefixes):
    """Adds the pipeline's steps to `p`: document boundaries, shards, instances written per shard under
    `temp_prefixes`, the output files, and the step that moves them to the final names with the summary."""
    offsets = (p | "Files" >> beam.Create(list(enumerate(files)))
               | "FindDocumentBoundaries" >> beam.ParDo(_ScanFile())
               | "KeyBoundaries" >> beam.Map(_key(lambda _: None))
               | "AllBoundaries" >> beam.GroupByKey())
    planned = offsets | "PlanShards" >> beam.FlatMap(
        lambda found: enumerate(plan_shards(files, sizes, [o for _, o in sorted(found[1], key=lambda x: x[0])],
                                            shard_bytes)))
    # One empty slot per possible shard (every shard but the last holds `shard_bytes` or more): a runner
    # whose parallelism is its sources' (Dask bags) then has as many partitions as shards after the
    # grouping, and the grouping by shard spreads the shards over the workers on every runner.
    slots = p | "Slots" >> beam.Create([(k, None) for k in range(sum(sizes) // shard_bytes + 1)])
    shards = ((planned, slots) | "ShardsAndSlots" >> beam.Flatten()
              | "Distribute" >> beam.GroupByKey()
              | "Shards" >> beam.FlatMap(lambda kv: [(kv[0], r) for r in kv[1] if r is not None]))
    results = shards | "Instances" >> beam.ParDo(_ProcessShard(vocab_file, spm_model_file, options, temp_prefixes))
    files_written = results | "ShardFiles" >> beam.Filter(lambda x: x[0] == "file")
    if num_output_shards:
        files_written = (files_written
                         | "KeyOutputFile" >> beam.Map(lambda x: ((x[1], x[2] % num_output_shards), x[2:]))
                         | "GroupOutputFile" >> beam.GroupByKey()
                         | "OutputFiles" >> beam.Map(_merge_output_file, temp_prefixes, num_output_shards))
    stats = results | "ShardStats" >> beam.Filter(lambda x: x[0] == "stats")
    _ = ((files_written, stats) | "FilesAndStats" >> beam.Flatten()
         | "KeyAll" >> beam.Map(_key(lambda _: None))
         | "All" >> beam.GroupByKey()
         | "Finalize" >> beam.FlatMap(_finalize, prefixes, temp_prefixes, files, options.ngram, num_output_shards))


# Runner names that `runner_args` maps to a Beam class: Beam 2.77's DirectRunner first tries its PrismRunner,
# which downloads a Go binary from GitHub (or builds one), and falls back to the FnApiRunner in this process
# when that fails; the FnApiRunner is named directly so that no download is tried. Beam's DaskRunner is a
# class, not a registered runner name.
RUNNERS = {
    "DirectRunner": "apache_beam.runners.portability.fn_api_runner.FnApiRunner",
    "SwitchingDirectRunner": "apache_beam.runners.portability.fn_api_runner.FnApiRunner",
    "DaskRunner": "apache_beam.runners.dask.dask_runner.DaskRunner",
}


def _check_runner_name(name):
    """Refuses a `--runner` that is neither one of `RUNNERS`, a runner Beam knows by name (case does not matter,
    as in Beam) nor a class's full name: Beam's own message lists its names without the DaskRunner."""
    known = sorted(set(RUNNERS) | {path.rsplit(".", 1)[-1] for path in StandardOptions.ALL_KNOWN_RUNNERS})
    if "." in name or name.lower() in {k.lower() for k in known}:
        return
    raise InputError(f"`--runner={name}` is not a Beam runner: one of {', '.join(known)}, or the full name of a "
                     "PipelineRunner class.")


# Seconds to reach a Dask scheduler (unless --dask_connection_timeout says otherwise), and to wait for its first
# worker: the DaskRunner itself waits forever on a scheduler without workers, with no word.
DASK_CONNECT_S = 10.0
DASK_WORKER_WAIT_S = 120.0


def check_dask_cluster(pipeline_options):
    """Before a DaskRunner run on a cluster (`--dask_client_address` or `--dask_scheduler_file`): raises
    `InputError` in one line when the scheduler cannot be reached within `DASK_CONNECT_S` or has no worker after
    `DASK_WORKER_WAIT_S`. A run without either starts its own local cluster: nothing to check."""
    from apache_beam.runners.dask.dask_runner import DaskOptions   # pylint: disable=import-outside-toplevel
    import distributed   # pylint: disable=import-outside-toplevel
    dask_options = pipeline_options.view_as(DaskOptions)
    where = dask_options.address or dask_options.scheduler_file
    if not where:
        return
    target = {"address": dask_options.address} if dask_options.address else {
        "scheduler_file": dask_options.scheduler_file}
    timeout = dask_options.timeout or DASK_CONNECT_S
    try:
        client = distributed.Client(timeout=timeout, **target)
    except (OSError, TimeoutError, ValueError) as e:
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise InputError(f"Cannot reach the Dask scheduler at {where} within {timeout:g} s ({reason}): start "
                         "`dask scheduler` there, or fix --dask_client_address / --dask_scheduler_file.") from None
    try:
        logging.info("Dask scheduler %s: waiting up to %g s for a worker.", where, DASK_WORKER_WAIT_S)
        client.wait_for_workers(1, timeout=DASK_WORKER_WAIT_S)
    except (TimeoutError, OSError):
        raise InputError(f"The Dask scheduler at {where} has no worker after {DASK_WORKER_WAIT_S:g} s: start "
                         f"`dask worker {client.scheduler.address}` (docs/pretraining.md).") from None
    finally:
        client.close()


def runner_args(pipeline_args):
    """`pipeline_args` with `--runner=NAME` of `RUNNERS` replaced by the class (no runner: Beam's default, the
    DirectRunner, so its class too); on the DaskRunner, `--dask_partition_size=1` unless a partitioning is
    given (one partition per created element: the parallelism of a Dask bag is its number of partitions)."""
    args, runner = [], None
    for arg in pipeline_args:
        name, _, value = arg.partition("=")
        if name == "--runner":
            _check_runner_name(value)
            runner = RUNNERS.get(value, value)
            arg = f"--runner={runner}"
        args.append(arg)
    if runner is None:
        runner = RUNNERS["DirectRunner"]
        args.append(f"--runner={runner}")
    if runner == RUNNERS["DaskRunner"] and not any(
            a.split("=")[0] in ("--dask_npartitions", "--dask_partition_size") for a in args):
        args.append("--dask_partition_size=1")
    return args


def run_pipeline(input_files, output_files, vocab_file=None, spm_model_file=None, options=PretrainingDataOptions(),
                 shard_size_mb=32.0, num_output_shards=0, pipeline_args=()):
    """Runs the pretraining data pipeline on Beam and waits for it; returns the run's `PretrainingStats`.

    Args:
        input_files: str of comma-separated globs, or a list of globs / paths (Beam file systems).
        output_files: str (comma-separated) or list of output prefixes; files `PREFIX-SSSSS-of-NNNNN`.
        vocab_file: WordPiece `vocab.txt`; with `spm_model_file`, its `.vocab` (checked against it if given).
        spm_model_file: SentencePiece `.model`.
        options: `PretrainingDataOptions` (the original's flags).
        shard_size_mb: float, raw text per shard, as the local writer (same shards, same examples).
        num_output_shards: int, files per prefix (0: one per shard, in shard order).
        pipeline_args: list of Beam pipeline options, e.g. `["--runner=DirectRunner"]`.
    """
    prefixes = _checked_prefixes(output_files, vocab_file, spm_model_file, options, shard_size_mb,
                                 num_output_shards)
    files = expand_input_files(input_files, glob=beam_glob)
    sizes = [_file_size(f) for f in files]
    logging.info("Beam pipeline over %d input files (%.1f MB), shards of %.1f MB.", len(files), sum(sizes) / 1e6,
                 shard_size_mb)

    # Everything is written under a temporary directory beside each prefix (Beam's own temporary files
    # too) and moved to the final names by the last step; a failed run removes the directories.
    run_id = uuid.uuid4().hex[:8]
    temp_dirs, temp_prefixes = [], []
    for prefix in prefixes:
        directory, base = FileSystems.split(prefix)
        temp_dirs.append(FileSystems.join(directory, f".albert-tmp-{run_id}"))
        temp_prefixes.append(FileSystems.join(temp_dirs[-1], base))
    shard_bytes = int(shard_size_mb * 1e6)
    pipeline_options = PipelineOptions(runner_args(pipeline_args))
    if pipeline_options.view_as(StandardOptions).runner == RUNNERS["DaskRunner"]:
        check_dask_cluster(pipeline_options)
    p = beam.Pipeline(options=pipeline_options)
    try:
        with p:
            _build_pipeline(p, files, sizes, shard_bytes, vocab_file, spm_model_file, options, num_output_shards,
                            prefixes, temp_prefixes)
    except BaseException:
        _remove(sorted(set(temp_dirs)))
        raise
    finally:
        # Beam's DaskRunner leaves the `distributed.Client` it opened on its result: closed here, so a caller's
        # process keeps no connection to the scheduler (the cluster itself runs on).
        client = getattr(getattr(p, "result", None), "client", None)
        if client is not None:
            client.close()
    _remove(sorted(set(temp_dirs)))
    with FileSystems.open(f"{prefixes[0]}-summary.json") as f:
        summary = json.loads(f.read().decode("utf-8"))
    fields = {name: summary[name] for name in PretrainingStats.__dataclass_fields__}
    fields["ngram_counts"], fields["ngram_draws"] = tuple(fields["ngram_counts"]), tuple(fields["ngram_draws"])
    result = PretrainingStats(**fields)
    logging.info("Summary: %s", result.summary())
    return result

