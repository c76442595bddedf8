"""The pretraining data writer on Apache Beam (DirectRunner, Dataflow, Flink, Spark): same examples, any scale.

The pipeline cuts the corpus into the local writer's shards, processes each shard with the same
`pretraining_instances.ShardProcessor` and seed (`shard_seed(random_seed, k)`), and writes the records to
sharded TFRecord files; only reading, distribution and writing differ from `pretraining_writer`, so the
multiset of serialized examples equals the local writer's for the same `shard_size_mb`, whichever worker
processes which shard.

1. Files: `--input_file` globs and comma lists expand through Beam's file systems (local, `gs://`, `s3://`,
   `hdfs://` where the Beam extras are installed), in the order of `pretraining_input.expand_input_files`.
2. Shards: one worker per file finds the byte offsets of its blank lines (the document boundaries); one step
   then cuts the concatenated corpus exactly as `pretraining_writer.iter_shards` does (the first blank line
   at least `shard_size_mb` after the previous cut), so a document is never split between two workers. That
   step holds 8 bytes per document of the corpus. A document longer than a shard is an error naming its
   file and offset: it would break the memory bound.
3. Work: each shard is read by one worker from its byte ranges (memory: one shard of text and its tokens).
   The SentencePiece model reaches workers as a file path, read once per worker in `DoFn.setup`.
4. Output: each `--output_file` entry is a prefix; record i of shard k goes to prefix (k + i) mod the number
   of prefixes, written as `PREFIX-SSSSS-of-NNNNN` (`WriteToTFRecord`, `num_output_shards` files, 0 = the
   runner chooses) under a temporary directory beside the prefix, moved to the final names by one last step
   once every file is written and the corpus is known not to be empty; a failed run removes that directory. The summary
   (`PretrainingStats`, as the local writer logs it) goes to `FIRST_PREFIX-summary.json`.
"""

import json
import os
import tempfile
import uuid

import apache_beam as beam
import numpy as np
from absl import logging
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from albert_tf.tasks.pretraining.inputs import expand_input_files
from albert_tf.tasks.pretraining.writer.instances import (PretrainingDataOptions, PretrainingStats, ShardProcessor, TokenSpace,
                                                  check_vocab_file, shard_seed)
from albert_tf.errors import InputError

_BLOCK = 1 << 20
_SHARD_TEMPLATE = "-SSSSS-of-NNNNN"


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
# Beam transforms.


class _ScanFile(beam.DoFn):
    def process(self, element):
        index, path = element
        yield index, blank_line_offsets(path)


class _ProcessShard(beam.DoFn):
    """Shard -> (prefix index, record) and, tagged "stats", the shard's `PretrainingStats`."""

    def __init__(self, vocab_file, spm_model_file, options, num_prefixes):
        self.vocab_file = vocab_file
        self.spm_model_file = spm_model_file
        self.options = options
        self.num_prefixes = num_prefixes
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
        o = self.options
        stats = PretrainingStats(ngram_counts=(0,) * o.ngram, ngram_draws=(0,) * o.ngram)
        for i, record in enumerate(self.processor.records(read_shard_lines(ranges), shard_seed(o.random_seed, k),
                                                          stats)):
            yield (k + i) % self.num_prefixes, record
        yield beam.pvalue.TaggedOutput("stats", stats)

    def teardown(self):
        staging = getattr(self, "staging", None)
        if staging and os.path.isdir(staging):
            for name in os.listdir(staging):
                os.remove(os.path.join(staging, name))
            os.rmdir(staging)


class _MergeStats(beam.CombineFn):
    def __init__(self, ngram):
        self.ngram = ngram

    def create_accumulator(self):
        return PretrainingStats(ngram_counts=(0,) * self.ngram, ngram_draws=(0,) * self.ngram)

    def add_input(self, accumulator, stats):
        accumulator.merge(stats)
        return accumulator

    def merge_accumulators(self, accumulators):
        out = self.create_accumulator()
        for a in accumulators:
            out.merge(a)
        return out

    def extract_output(self, accumulator):
        return accumulator


def _write_text(path, text):
    """Writes `text` to `path` on Beam's file systems: a temporary name, then a rename."""
    temp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    with FileSystems.create(temp) as f:
        f.write(text.encode("utf-8"))
    FileSystems.rename([temp], [path])


def _finalize(_, written, stats, prefixes, temp_prefixes, input_files):
    """Renames the temporary files to their final names and writes the summary, or fails on an empty corpus."""
    if stats.documents == 0:
        raise InputError(
            f"The corpus is empty: no line of `{','.join(input_files)}` gives a token (expected one sentence per "
            "line, blank lines between documents).")
    sources, destinations = [], []
    for j, path in sorted(written):
        if not path.startswith(temp_prefixes[j]):
            raise InputError(f"Unexpected output file `{path}` (expected the prefix `{temp_prefixes[j]}`).")
        sources.append(path)
        destinations.append(prefixes[j] + path[len(temp_prefixes[j]):])
    FileSystems.rename(sources, destinations)
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


def _build_pipeline(p, files, sizes, shard_bytes, vocab_file, spm_model_file, options, num_output_shards,
                    prefixes, temp_prefixes):
    """Adds the pipeline's steps to `p`: document boundaries, shards, instances, one TFRecord set per
    prefix under `temp_prefixes`, and the step that moves them to the final names with the summary."""
    offsets = (p | "Files" >> beam.Create(list(enumerate(files)))
               | "FindDocumentBoundaries" >> beam.ParDo(_ScanFile())
               | "AllBoundaries" >> beam.combiners.ToList())
    shards = (offsets
              | "PlanShards" >> beam.FlatMap(
                  lambda found: enumerate(plan_shards(
                      files, sizes, [o for _, o in sorted(found, key=lambda x: x[0])], shard_bytes)))
              | "Distribute" >> beam.Reshuffle())
    results = shards | "Instances" >> beam.ParDo(
        _ProcessShard(vocab_file, spm_model_file, options, len(prefixes))).with_outputs("stats", main="records")
    stats = results.stats | "Summary" >> beam.CombineGlobally(_MergeStats(options.ngram))
    parts = results.records | "ByPrefix" >> beam.Partition(lambda kv, n: kv[0], len(prefixes))
    written = []
    for j, (part, temp) in enumerate(zip(parts, temp_prefixes)):
        written.append(
            part
            | f"Record{j}" >> beam.Map(lambda kv: kv[1])
            | f"Write{j}" >> beam.io.WriteToTFRecord(temp, num_shards=num_output_shards,
                                                     shard_name_template=_SHARD_TEMPLATE)
            | f"Written{j}" >> beam.Map(lambda path, j=j: (j, path)))
    all_written = tuple(written) | "AllFiles" >> beam.Flatten()
    _ = (p | "Once" >> beam.Create([None])
         | "Finalize" >> beam.FlatMap(
             _finalize, written=beam.pvalue.AsList(all_written), stats=beam.pvalue.AsSingleton(stats),
             prefixes=prefixes, temp_prefixes=temp_prefixes, input_files=files))


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
        num_output_shards: int, files per prefix (0: the runner chooses).
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
    pipeline_options = PipelineOptions(list(pipeline_args))
    try:
        with beam.Pipeline(options=pipeline_options) as p:
            _build_pipeline(p, files, sizes, shard_bytes, vocab_file, spm_model_file, options, num_output_shards,
                            prefixes, temp_prefixes)
    except BaseException:
        _remove(sorted(set(temp_dirs)))
        raise
    _remove(sorted(set(temp_dirs)))
    with FileSystems.open(f"{prefixes[0]}-summary.json") as f:
        summary = json.loads(f.read().decode("utf-8"))
    fields = {name: summary[name] for name in PretrainingStats.__dataclass_fields__}
    fields["ngram_counts"], fields["ngram_draws"] = tuple(fields["ngram_counts"]), tuple(fields["ngram_draws"])
    result = PretrainingStats(**fields)
    logging.info("Summary: %s", result.summary())
    return result

