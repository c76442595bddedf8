"""Where albert_tf's inference time goes: an op-level profile of one encoder configuration.

Runs albert_tf's `AlbertModel` forward (or with `--impl=keras_hub` keras-hub's `AlbertBackbone`; the same `tf.function` as `bench_encoder.py`'s `graph` mode, random
weights) under `tf.profiler` for `--steps` calls and sums the TensorFlow op events of the trace per op type. It
prints, per step: milliseconds and call count of each op type, the dense matmuls' and the attention batch
matmuls' GFLOP/s (from the analytic FLOP count), and what the forward would reach against this machine's
float32 matmul peak (measured here as in `bench_encoder.py`) if every op other than those matmuls cost nothing,
at the rates the matmuls run at inside the model. Run it alone on the machine; the profiler adds a few percent.

    .venv/bin/python benchmarks/profile_encoder.py --size=base --seq_len=512
"""

import collections
import glob
import os
import sys
import tempfile

from absl import app
from absl import flags

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_encoder as bench  # noqa: E402

FLAGS = flags.FLAGS
# Op types counted as the dense (2-D) matmuls and as the attention batch matmuls.
DENSE_OPS = ("_MklNativeFusedMatMul", "_MklMatMul", "_MklNativeMatMul", "_FusedMatMul", "MatMul")
BATCH_OPS = ("_MklFusedBatchMatMulV2", "_MklBatchMatMulV2", "_MklNativeBatchMatMulV2", "BatchMatMulV2",
             "BatchMatMulV3")


def attention_flops(size, seq_len):
    """FLOPs of the attention score and context batch matmuls of one forward over one sequence."""
    s = bench.SIZES[size]
    return s["num_hidden_layers"] * 2 * 2 * seq_len * seq_len * s["hidden_size"]


def op_times(logdir, steps):
    """`{op type: (ms per step, calls per step)}` from the XPlane files the profiler wrote under `logdir`."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    total, calls = collections.Counter(), collections.Counter()
    for path in glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True):
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
        for plane in space.planes:
            names = {key: meta.name for key, meta in plane.event_metadata.items()}
            for line in plane.lines:
                for event in line.events:
                    name = names.get(event.metadata_id, "")
                    if ":" not in name:                     # TF op events are named "<node>:<op type>"
                        continue
                    op = name.rsplit(":", 1)[1].strip()
                    total[op] += event.duration_ps / 1e9 / steps
                    calls[op] += 1
    return {op: (ms, calls[op] // steps) for op, ms in total.items()}


def main(argv):
    del argv
    import tensorflow as tf

    bench.configure_threads(tf, FLAGS.intra_op_threads, 1)
    runner = bench.Runner(FLAGS.impl, FLAGS.batch_size)
    fn = runner.function("infer", FLAGS.size, FLAGS.precision, "graph")
    args = [tf.constant(a) for a in bench.random_batch(FLAGS.batch_size, FLAGS.seq_len)]
    for _ in range(2):
        fn(*args).numpy()
    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        for _ in range(FLAGS.steps):
            fn(*args).numpy()
        tf.profiler.experimental.stop()
        times = op_times(logdir, FLAGS.steps)
    ops = {op: v for op, v in times.items() if not op.startswith("__inference") and op not in ("Run", "Process")}
    total_ms = sum(ms for ms, _ in ops.values())
    flops = FLAGS.batch_size * bench.encoder_flops(FLAGS.size, FLAGS.seq_len)
    batch_flops = FLAGS.batch_size * attention_flops(FLAGS.size, FLAGS.seq_len)
    dense_ms = sum(ops[op][0] for op in DENSE_OPS if op in ops)
    batch_ms = sum(ops[op][0] for op in BATCH_OPS if op in ops)

    print(f"{FLAGS.impl} {FLAGS.size}, batch {FLAGS.batch_size}, seq {FLAGS.seq_len}, {FLAGS.precision}: "
          f"{total_ms:,.0f} ms of op time per step under the profiler ({FLAGS.steps} steps)\n")
    print("| op | ms per step | calls per step | share |")
    print("|---|---|---|---|")
    for op, (ms, n) in sorted(ops.items(), key=lambda kv: -kv[1][0]):
        if ms >= 0.5:
            print(f"| `{op}` | {ms:,.1f} | {n} | {100 * ms / total_ms:.1f}% |")
    print()
    print(f"dense matmuls: {(flops - batch_flops) / dense_ms / 1e6:.0f} GFLOP/s; attention batch matmuls: "
          f"{batch_flops / batch_ms / 1e6:.0f} GFLOP/s; everything else: {total_ms - dense_ms - batch_ms:,.0f} ms "
          f"({100 * (total_ms - dense_ms - batch_ms) / total_ms:.1f}%)")
    if FLAGS.peak and FLAGS.precision == "float32":
        peak = bench.matmul_peaks(tf, dtypes=("float32",))["float32"]
        reached = flops / total_ms / 1e6
        bound = flops / (dense_ms + batch_ms) / 1e6
        print(f"float32 matmul peak {peak:.0f} GFLOP/s: the forward under the profiler reaches {reached:.0f} "
              f"({100 * reached / peak:.0f}%); with every non-matmul op free, at these in-model matmul rates, "
              f"{bound:.0f} ({100 * bound / peak:.0f}%)")


if __name__ == "__main__":
    flags.DEFINE_enum("impl", "albert_tf", ["albert_tf", "keras_hub"], "The encoder profiled (keras_hub: "
                      "keras-hub's `AlbertBackbone`, to compare op by op).")
    flags.DEFINE_enum("size", "base", list(bench.SIZES), "Model size.")
    flags.DEFINE_integer("seq_len", 512, "Sequence length (at most max_position_embeddings, 512).", lower_bound=1,
                         upper_bound=bench.COMMON["max_position_embeddings"])
    flags.DEFINE_integer("batch_size", 8, "Batch size.", lower_bound=1)
    flags.DEFINE_enum("precision", "float32", list(bench.PRECISIONS), "Dtype policy.")
    flags.DEFINE_integer("steps", 2, "Profiled calls (after two untimed ones).", lower_bound=1)
    flags.DEFINE_integer("intra_op_threads", os.cpu_count(), "TF intra-op threads.", lower_bound=1)
    flags.DEFINE_bool("peak", True, "Also measure the float32 matmul peak (float32 only).")
    app.run(main)
