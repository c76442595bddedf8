"""Benchmark of the pretraining data writer: speed per core and peak memory.

1. Throughput: `albert_tf.tasks.pretraining.writer.write_pretraining_examples` (one worker) against
   `tests/original_create_pretraining_data.py` (a straightforward pure-Python transcription of the original
   algorithm) in the same process, on the same input, with the same flags; both outputs are parsed
   and must be identical. Reported as instances/s per core and the speed-up.
2. Memory: the writer runs in a subprocess on a corpus and on the same corpus x10 (shards of the size of
   one corpus), and reports each subprocess's peak RSS (`resource.getrusage`); the transcription's
   peak RSS is measured the same way for reference.

The corpus is the text of Python's `pydoc_data.topics` (every CPython ships it): each topic a document,
one line a sentence. A SentencePiece model is trained on it with the original flags.

3. `--shuffle_and_encoder`: whether the two hand-written pieces earn their keep. The writer runs with
   `pretraining_shuffle` and with plain `random.shuffle` (interleaved), reporting the time inside the
   shuffles; and the records written are re-encoded with `pretraining_records.ExampleEncoder` and with the
   protobuf API (`tf.train.Example(...).SerializeToString()`).

4. `--beam=N`: the local writer (one process) against the Apache Beam pipeline on DirectRunner with N worker
   processes (`--direct_running_mode=multi_processing`), each in a subprocess on the x10 corpus and shards:
   examples per CPU-second (all processes of the run, imports included) and wall time; then the peak RSS of
   each Beam worker process (sampled every 0.2 s with psutil) on the corpus and on the corpus x10, with
   shards of the size of one corpus.

Usage:
    python benchmarks/bench_pretraining_data.py [--max_seq_length=512] [--dupe_factor=40] [--workdir=/tmp/x]
    python benchmarks/bench_pretraining_data.py --beam=4 --max_seq_length=128 --dupe_factor=5
    python benchmarks/bench_pretraining_data.py --shuffle_and_encoder --dupe_factor=8
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")  # the transcription of the original is a test oracle


def make_corpus(path, copies=1):
    import pydoc_data.topics

    documents = []
    for text in pydoc_data.topics.topics.values():
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            documents.append("\n".join(lines))
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(copies):
            f.write("\n\n".join(documents))
            f.write("\n\n")
    return os.path.getsize(path)


def _child(args):
    """Runs one writer (ours or the transcription) and prints its peak RSS as JSON."""
    import threading

    import tensorflow as tf  # noqa: F401  (imported before timing, as in both programs)
    from albert_tf.tasks.pretraining.writer import local as pretraining_writer  # noqa: F401

    # ru_maxrss is dominated by importing TensorFlow (~0.8 GB here); the data work is measured as the
    # peak of VmRSS sampled every 10 ms after the imports, minus the RSS right after the imports.
    baseline = _vm_rss_mb()
    peak = [baseline]
    done = threading.Event()

    def sample():
        while not done.wait(0.01):
            peak[0] = max(peak[0], _vm_rss_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.time()
    if args.child == "ours":
        from albert_tf.tasks.pretraining.writer import instances as pretraining_instances
        from albert_tf.tasks.pretraining.writer import local as pretraining_writer

        stats = pretraining_writer.write_pretraining_examples(
            args.input, args.output, spm_model_file=args.spm_model_file,
            options=pretraining_instances.PretrainingDataOptions(max_seq_length=args.max_seq_length,
                                                             dupe_factor=args.dupe_factor),
            num_workers=1, shard_size_mb=args.shard_size_mb)
        instances = stats.instances
    else:
        sys.path.insert(0, TESTS)
        import original_create_pretraining_data as original

        instances = original.run([args.input], [args.output], spm_model_file=args.spm_model_file,
                                 max_seq_length=args.max_seq_length, dupe_factor=args.dupe_factor)
    seconds = time.time() - started
    done.set()
    sampler.join()
    peak[0] = max(peak[0], _vm_rss_mb())
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"instances": instances, "seconds": round(seconds, 2), "ru_maxrss_mb": round(peak_kb / 1024),
                      "rss_after_imports_mb": round(baseline), "work_peak_rss_mb": round(peak[0]),
                      "work_rss_above_imports_mb": round(peak[0] - baseline, 1)}))


def _vm_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _run_child(kind, input_path, output, spm_model_file, args, shard_size_mb):
    cmd = [sys.executable, os.path.abspath(__file__), f"--child={kind}", f"--input={input_path}",
           f"--output={output}", f"--spm_model_file={spm_model_file}", f"--max_seq_length={args.max_seq_length}",
           f"--dupe_factor={args.dupe_factor}", f"--shard_size_mb={shard_size_mb}"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def _read(path):
    import tensorflow as tf

    return [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(path)]


def shuffle_and_encoder(corpus, spm_model, args, workdir):
    import tensorflow as tf

    from albert_tf.tasks.pretraining.writer import instances as pretraining_instances
    from albert_tf.tasks.pretraining.writer import records as pretraining_records
    from albert_tf.tasks.pretraining.writer import shuffle as pretraining_shuffle
    from albert_tf.tasks.pretraining.writer import local as pretraining_writer

    options = pretraining_instances.PretrainingDataOptions(max_seq_length=args.max_seq_length,
                                                       dupe_factor=args.dupe_factor)
    fast = (pretraining_shuffle.shuffled_range, pretraining_shuffle.advance_shuffle)

    def plain_shuffled_range(rng, n):
        x = list(range(n))
        rng.shuffle(x)
        return x

    def plain_advance(rng, n):
        rng.shuffle([None] * n)

    timed = {"seconds": 0.0}

    def timing(f):
        def run(rng, n):
            t = time.perf_counter()
            out = f(rng, n)
            timed["seconds"] += time.perf_counter() - t
            return out
        return run

    out = os.path.join(workdir, "shuffle.tfrecord")
    for repeat in range(2):
        for name, (shuffled, advance) in (("fast", fast), ("random.shuffle", (plain_shuffled_range, plain_advance))):
            pretraining_instances.shuffled_range = timing(shuffled)
            pretraining_instances.advance_shuffle = timing(advance)
            timed["seconds"] = 0.0
            t0 = time.process_time()
            pretraining_writer.write_pretraining_examples(corpus, out, spm_model_file=spm_model, options=options)
            print(f"shuffle {name:>14}: writer {time.process_time() - t0:.2f} CPU-s, "
                  f"inside the shuffles {timed['seconds']:.2f} s")
    pretraining_instances.shuffled_range, pretraining_instances.advance_shuffle = fast

    examples = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(out)]
    values = [{k: list(v.int64_list.value) or list(v.float_list.value) for k, v in e.features.feature.items()}
              for e in examples]
    t0 = time.process_time()
    for v in values:
        feature = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v[k]))
                   for k in ("input_ids", "input_mask", "segment_ids", "token_boundary", "masked_lm_positions",
                             "masked_lm_ids", "next_sentence_labels")}
        feature["masked_lm_weights"] = tf.train.Feature(float_list=tf.train.FloatList(value=v["masked_lm_weights"]))
        tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
    api = time.process_time() - t0
    encoder = pretraining_records.ExampleEncoder(args.max_seq_length, 20, args.vocab_size, 1)
    calls = []
    for v in values:
        length = sum(v["input_mask"])
        n = int(sum(v["masked_lm_weights"]))
        calls.append((v["input_ids"][:length], v["segment_ids"].index(1) - 2, bytes(v["token_boundary"][:length]),
                      v["masked_lm_positions"][:n], v["masked_lm_ids"][:n], v["next_sentence_labels"][0]))
    t0 = time.process_time()
    for call in calls:
        encoder.encode(*call)
    hand = time.process_time() - t0
    print(f"records: {len(values)}; protobuf API {1e6 * api / len(values):.1f} us/record, "
          f"ExampleEncoder {1e6 * hand / len(values):.1f} us/record")


def _run_measured(cmd):
    """Runs `cmd`; returns (wall s, CPU s of it and its descendants, {pid: peak RSS MB} of its descendants).

    CPU and RSS are sampled every 0.2 s with psutil (each process's own time, without its children's), so
    a process's last fraction of a second may be missed.
    """
    import psutil

    started = time.time()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks = {}
    cpu = {}
    parent = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            processes = [parent] + parent.children(recursive=True)
        except psutil.Error:
            processes = []
        for p in processes:
            try:
                times = p.cpu_times()
                cpu[p.pid] = times.user + times.system
                if p.pid != proc.pid:
                    peaks[p.pid] = max(peaks.get(p.pid, 0), p.memory_info().rss / 2**20)
            except psutil.Error:
                pass
        time.sleep(0.2)
    _, stderr = proc.communicate()
    if proc.returncode:
        raise RuntimeError(stderr[-3000:])
    return time.time() - started, sum(cpu.values()), peaks


def beam_benchmark(corpus, corpus_x10, spm_model, args, workdir):
    from albert_tf.tasks.pretraining.writer import local as pretraining_writer  # noqa: F401  (fails early without the package)

    size_mb = os.path.getsize(corpus) / 1e6
    common = [f"--spm_model_file={spm_model}", f"--max_seq_length={args.max_seq_length}",
              f"--dupe_factor={args.dupe_factor}", f"--shard_size_mb={size_mb / 4:.4f}"]
    cli = [sys.executable, "-m", "albert_tf.tasks.pretraining.writer.create_data"]
    beam = [f"--runner=DirectRunner", f"--direct_num_workers={args.beam}", "--direct_running_mode=multi_processing"]
    local_out = os.path.join(workdir, "beam_local.tfrecord")
    # Throughput on the x10 corpus, so that the imports (TensorFlow in every process) weigh less.
    wall, cpu, _ = _run_measured(cli + [f"--input_file={corpus_x10}", f"--output_file={local_out}"] + common)
    import tensorflow as tf

    n = sum(1 for _ in tf.data.TFRecordDataset(local_out))
    print(f"local writer, 1 process: {n} examples, {wall:.1f} s wall, {cpu:.1f} CPU-s, "
          f"{n / cpu:.0f} examples per CPU-second")
    out = os.path.join(workdir, "beam_x1")
    wall, cpu, peaks = _run_measured(cli + [f"--input_file={corpus_x10}", f"--output_file={out}/train"] + common
                                     + beam)
    print(f"DirectRunner, {args.beam} worker processes: {wall:.1f} s wall, {cpu:.1f} CPU-s, "
          f"{n / cpu:.0f} examples per CPU-second (same examples; imports of every worker included)")
    for name, path in (("x1", corpus), ("x10", corpus_x10)):
        out = os.path.join(workdir, f"beam_rss_{name}")
        rss_common = [c if not c.startswith("--shard_size_mb") else f"--shard_size_mb={size_mb:.4f}" for c in common]
        wall, cpu, peaks = _run_measured(cli + [f"--input_file={path}", f"--output_file={out}/train"] + rss_common
                                         + beam)
        workers = sorted(peaks.values(), reverse=True)[:args.beam]
        print(f"DirectRunner {name} ({os.path.getsize(path) / 1e6:.1f} MB, shards of {size_mb:.2f} MB): "
              f"{wall:.1f} s wall; peak RSS of the {len(workers)} largest worker processes (MB): "
              f"{[round(w) for w in workers]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max_seq_length", type=int, default=512)
    parser.add_argument("--dupe_factor", type=int, default=40, help="the original's default, 40")
    parser.add_argument("--vocab_size", type=int, default=3000)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--original_x10", action="store_true", help="also measure the transcription on x10")
    parser.add_argument("--shuffle_and_encoder", action="store_true", help="only measure item 3")
    parser.add_argument("--beam", type=int, default=0, help="only measure item 4 with this many Beam workers")
    parser.add_argument("--child", default=None)
    parser.add_argument("--input")
    parser.add_argument("--output")
    parser.add_argument("--spm_model_file")
    parser.add_argument("--shard_size_mb", type=float, default=32.0)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_pretraining_")
    os.makedirs(workdir, exist_ok=True)
    corpus = os.path.join(workdir, "corpus.txt")
    corpus_x10 = os.path.join(workdir, "corpus_x10.txt")
    size = make_corpus(corpus)
    make_corpus(corpus_x10, copies=10)

    from absl import logging

    from albert_tf.tasks.pretraining.writer import instances as pretraining_instances
    from albert_tf.tasks.pretraining.writer import local as pretraining_writer
    from albert_tf.text import vocab

    logging.set_verbosity(logging.WARNING)
    spm_model = vocab.train_sentencepiece([corpus], os.path.join(workdir, "spm"), vocab_size=args.vocab_size,
                                          minloglevel=2)
    if args.shuffle_and_encoder:
        shuffle_and_encoder(corpus, spm_model, args, workdir)
        return
    if args.beam:
        beam_benchmark(corpus, corpus_x10, spm_model, args, workdir)
        return
    sys.path.insert(0, TESTS)
    import original_create_pretraining_data as original

    print(f"corpus: {size / 1e6:.2f} MB, max_seq_length={args.max_seq_length}, dupe_factor={args.dupe_factor}, "
          f"vocab {args.vocab_size}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")

    # 1. Throughput, same process, same input, one core each.
    ours_out = os.path.join(workdir, "ours.tfrecord")
    orig_out = os.path.join(workdir, "original.tfrecord")
    t0 = time.process_time()
    stats = pretraining_writer.write_pretraining_examples(
        corpus, ours_out, spm_model_file=spm_model,
        options=pretraining_instances.PretrainingDataOptions(max_seq_length=args.max_seq_length,
                                                         dupe_factor=args.dupe_factor))
    ours_cpu = time.process_time() - t0
    t0 = time.process_time()
    n_orig = original.run([corpus], [orig_out], spm_model_file=spm_model, max_seq_length=args.max_seq_length,
                          dupe_factor=args.dupe_factor)
    orig_cpu = time.process_time() - t0
    identical = _read(ours_out) == _read(orig_out)
    ours_rate = stats.instances / ours_cpu
    orig_rate = n_orig / orig_cpu
    print(f"throughput (instances per CPU-second, one process): ours {ours_rate:.1f}, "
          f"transcription {orig_rate:.1f}, speed-up {ours_rate / orig_rate:.1f}x; "
          f"{stats.instances} instances, outputs identical: {identical}")

    # 2. Peak RSS in subprocesses; shards of the size of one corpus.
    shard_mb = size / 1e6
    rss = {}
    for name, path in (("x1", corpus), ("x10", corpus_x10)):
        rss[name] = _run_child("ours", path, os.path.join(workdir, f"rss_{name}.tfrecord"), spm_model, args,
                               shard_mb)
        print(f"ours {name}: {rss[name]}")
    print(f"peak RSS growth for a 10x corpus: {rss['x10']['work_peak_rss_mb'] / rss['x1']['work_peak_rss_mb']:.2f}x "
          f"(RSS above the imports: {rss['x1']['work_rss_above_imports_mb']} MB -> "
          f"{rss['x10']['work_rss_above_imports_mb']} MB)")
    orig_rss = _run_child("original", corpus, os.path.join(workdir, "rss_orig.tfrecord"), spm_model, args,
                          shard_mb)
    print(f"transcription x1: {orig_rss}")
    if args.original_x10:
        orig_rss10 = _run_child("original", corpus_x10, os.path.join(workdir, "rss_orig10.tfrecord"), spm_model,
                                args, shard_mb)
        print(f"transcription x10: {orig_rss10}")


if __name__ == "__main__":
    main()
