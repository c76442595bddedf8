"""Benchmark of the pretraining data writer (issue 4): speed per core and peak memory.

1. Throughput: `albert_tf.data.pretraining.write_pretraining_examples` (one worker) against
   `original_create_pretraining_data.py` (a straightforward pure-Python transcription of the original
   algorithm) in the same process, on the same input, with the same flags; both outputs are parsed
   and must be identical. Reported as instances/s per core and the speed-up.
2. Memory: the writer runs in a subprocess on a corpus and on the same corpus x10 (shards of the size of
   one corpus), and reports each subprocess's peak RSS (`resource.getrusage`); the transcription's
   peak RSS is measured the same way for reference.

The corpus is the text of Python's `pydoc_data.topics` (every CPython ships it): each topic a document,
one line a sentence. A SentencePiece model is trained on it with the original flags.

Usage:
    python benchmarks/bench_pretraining_data.py [--max_seq_length=512] [--dupe_factor=40] [--workdir=/tmp/x]
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
    from albert_tf.data import pretraining  # noqa: F401

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
        from albert_tf.data import pretraining

        stats = pretraining.write_pretraining_examples(
            args.input, args.output, spm_model_file=args.spm_model_file,
            options=pretraining.PretrainingOptions(max_seq_length=args.max_seq_length,
                                                   dupe_factor=args.dupe_factor),
            num_workers=1, shard_size_mb=args.shard_size_mb)
        instances = stats.instances
    else:
        sys.path.insert(0, HERE)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max_seq_length", type=int, default=512)
    parser.add_argument("--dupe_factor", type=int, default=40, help="the original's default, 40")
    parser.add_argument("--vocab_size", type=int, default=3000)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--original_x10", action="store_true", help="also measure the transcription on x10")
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

    from albert_tf.data import pretraining, vocab

    logging.set_verbosity(logging.WARNING)
    spm_model = vocab.train_sentencepiece([corpus], os.path.join(workdir, "spm"), vocab_size=args.vocab_size,
                                          minloglevel=2)
    sys.path.insert(0, HERE)
    import original_create_pretraining_data as original

    print(f"corpus: {size / 1e6:.2f} MB, max_seq_length={args.max_seq_length}, dupe_factor={args.dupe_factor}, "
          f"vocab {args.vocab_size}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")

    # 1. Throughput, same process, same input, one core each.
    ours_out = os.path.join(workdir, "ours.tfrecord")
    orig_out = os.path.join(workdir, "original.tfrecord")
    t0 = time.process_time()
    stats = pretraining.write_pretraining_examples(
        corpus, ours_out, spm_model_file=spm_model,
        options=pretraining.PretrainingOptions(max_seq_length=args.max_seq_length, dupe_factor=args.dupe_factor))
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
