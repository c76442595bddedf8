"""Peak memory of one ALBERT training step: albert_tf with and without `recompute`, beside keras-hub.

For each `--sizes` (v2 configurations: base, large, xlarge, xxlarge; E=128, vocab 30000, no dropout) at
`--seq_len` (512), each implementation runs in a fresh process:

* `albert_tf`: `AlbertModel(config)`;
* `albert_tf_recompute`: `AlbertModel(config, recompute=True)`;
* `keras_hub`: keras-hub's `AlbertBackbone` with the same sizes.

The process builds the encoder and the library's optimizer (`create_optimizer(..., optimizer="lamb")`, the
original's pretraining optimizer; its two moment slots built before anything is measured), then runs
`--steps` training steps in one `tf.function` (forward, the loss `mean(sequence_output ** 2)` (the same
MLM-free loss for every implementation, so the comparison is the encoder's step) and backward in one, the
optimizer update in another).
It reports, from `/proc/self/status` on CPU:

* `state`: RSS after building the weights and the optimizer state, less the RSS after importing TensorFlow;
* `peak`: the peak RSS of the process (`VmHWM`) over all steps, less the same import baseline;
* `activations`: the peak RSS of the steps after the first (`VmHWM` reset through `/proc/self/clear_refs`)
  less the RSS before them (weights, optimizer state, the traced and optimized graph; measured after
  `malloc_trim`): the activations kept
  for the backward pass, the gradients and the step's temporaries;
* `update`: the optimizer update's peak above the memory at its start (the gradients already held): its
  temporaries;
* `step_s`: the wall time of the last step (the first one also traces).

Each worker runs with `TF_CPU_ALLOCATOR_USE_BFC=1`: TensorFlow's BFC allocator, which keeps the memory
statistics behind the step and update peaks on every CPU (the default one keeps them only where oneDNN is
on, i.e. on some Intel CPUs); `TF_ENABLE_ONEDNN_OPTS` passes through as the user set it.

On a GPU `state` and `peak` are `tf.config.experimental.get_memory_info("GPU:0")`'s (`current` after building,
`peak` of the steps) instead. The table is printed and written as markdown to `--output`; the raw results go beside it
as JSON.

Example (every size at seq 512, batch 1; about 25 minutes on 2 cores)::

    python benchmarks/bench_memory.py --sizes=large,xxlarge,base,xlarge --batch_size=1 --output=memory.md
"""

import json
import os
import subprocess
import sys
import time

from absl import app, flags, logging

SIZES = {
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "xlarge": dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192),
    "xxlarge": dict(hidden_size=4096, num_hidden_layers=12, num_attention_heads=64, intermediate_size=16384),
}
COMMON = dict(vocab_size=30000, embedding_size=128, max_position_embeddings=512, type_vocab_size=2)
IMPLS = ("albert_tf", "albert_tf_recompute", "keras_hub")
GIB = 1024.0 ** 3


def _status_bytes(field):
    """A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`) in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"`{field}` not in /proc/self/status")


def worker(args):
    """One configuration in this (fresh) process; returns the result dict."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args["intra_op_threads"])
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras
    import keras_hub

    from albert_tf import AlbertConfig, AlbertModel
    from albert_tf.training.optimization import create_optimizer

    gpu = bool(tf.config.list_physical_devices("GPU"))
    size, impl, batch, seq = args["size"], args["impl"], args["batch_size"], args["seq_len"]
    s = SIZES[size]
    ones = tf.ones([batch, seq], tf.int32)
    ids = tf.random.stateless_uniform([batch, seq], [1, 2], 0, COMMON["vocab_size"], tf.int32)
    segments = tf.concat([tf.zeros([batch, seq // 2], tf.int32), tf.ones([batch, seq - seq // 2], tf.int32)], 1)
    base_rss = _status_bytes("VmRSS")

    if impl == "keras_hub":
        model = keras_hub.models.AlbertBackbone(
            vocabulary_size=COMMON["vocab_size"], num_layers=s["num_hidden_layers"],
            num_heads=s["num_attention_heads"], embedding_dim=COMMON["embedding_size"],
            hidden_dim=s["hidden_size"], intermediate_dim=s["intermediate_size"], num_groups=1,
            num_inner_repetitions=1, dropout=0.0, max_sequence_length=COMMON["max_position_embeddings"],
            num_segments=COMMON["type_vocab_size"])
        inputs = {"token_ids": ids, "padding_mask": ones, "segment_ids": segments}
    else:
        config = AlbertConfig.from_dict(dict(COMMON, **s, num_hidden_groups=1, inner_group_num=1,
                                             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
        model = AlbertModel(config, recompute=impl == "albert_tf_recompute")
        inputs = {"input_ids": ids, "input_mask": ones, "segment_ids": segments}
    optimizer = create_optimizer(1e-4, 1000, 10, optimizer="lamb")
    optimizer.build(model.trainable_variables)
    variables = model.trainable_variables

    @tf.function
    def gradients(inputs):
        with tf.GradientTape() as tape:
            sequence_output = model(inputs, training=True)["sequence_output"]
            loss = tf.reduce_mean(tf.square(tf.cast(sequence_output, tf.float32)))
        grads = tape.gradient(loss, variables)
        # The pooler is not in the loss: zeros keep its update in the step, as in real training.
        return loss, [tf.zeros_like(v) if g is None else g for g, v in zip(grads, variables)]

    @tf.function
    def update(grads):
        optimizer.apply_gradients(zip(grads, variables))

    if gpu:
        tf.config.experimental.reset_memory_stats("GPU:0")
    state = (tf.config.experimental.get_memory_info("GPU:0")["current"] if gpu
             else _status_bytes("VmRSS") - base_rss)
    device = "GPU:0" if gpu else "CPU:0"
    times = []
    for i in range(args["steps"]):
        # The allocator's peak counter reset before each step, so that the last step's peaks are its own (the
        # first one also traces and optimizes the graphs).
        tf.config.experimental.reset_memory_stats(device)
        before = tf.config.experimental.get_memory_info(device)["current"]
        start = time.perf_counter()
        loss, grads = gradients(inputs)
        float(loss)
        backward_peak = tf.config.experimental.get_memory_info(device)["peak"]
        tf.config.experimental.reset_memory_stats(device)
        before_update = tf.config.experimental.get_memory_info(device)["current"]
        update(grads)
        times.append(time.perf_counter() - start)
        update_peak = tf.config.experimental.get_memory_info(device)["peak"]
        step_peak = max(backward_peak, update_peak)
        gradient_bytes = sum(int(tf.size(tf.convert_to_tensor(g))) * g.dtype.size for g in grads)
        del grads
    peak = step_peak if gpu else _status_bytes("VmHWM") - base_rss
    return {"size": size, "impl": impl, "batch_size": batch, "seq_len": seq, "device": "GPU" if gpu else "CPU",
            "params": int(sum(int(tf.size(v)) for v in variables)), "state_bytes": int(state),
            "peak_bytes": int(peak), "gradient_bytes": gradient_bytes,
            "activation_bytes": int(backward_peak - before - gradient_bytes),
            "step_peak_bytes": int(step_peak - before), "update_bytes": int(update_peak - before_update),
            "step_s": times[-1], "first_step_s": times[0], "keras": keras.__version__}


def run_worker(args):
    """Runs `worker(args)` in a fresh Python process; returns its result, or an `error` entry."""
    # TensorFlow's default CPU allocator keeps memory statistics only where oneDNN is on (some Intel CPUs);
    # the BFC allocator keeps them on every CPU, so every worker measures with it, oneDNN on or off.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_CPU_ALLOCATOR_USE_BFC="1")
    env.pop("TF_USE_LEGACY_KERAS", None)
    command = [sys.executable, os.path.abspath(__file__), "--worker=" + json.dumps(args)]
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=args["timeout_s"])
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        tail = out.stderr.strip().splitlines()[-3:]
        return dict(args, error=f"exit {out.returncode}: " + " | ".join(tail))
    return json.loads(lines[-1][len("RESULT "):])


def render(results):
    """The markdown table: per size, the three implementations and the ratios that the targets name."""
    lines = ["| size | batch | implementation | weights + optimizer state (GiB) | gradients (GiB) | activations (GiB) "
             "| update (GiB) | step peak (GiB) | peak RSS (GiB) | step (s) |", "|---|---|---|---|---|---|---|---|---|---|"]
    by = {(r["size"], r["impl"]): r for r in results}
    notes = []
    for size in SIZES:
        for impl in IMPLS:
            r = by.get((size, impl))
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {size} | {r['batch_size']} | {impl} | failed: {r['error'][:80]} | | | | | | |")
                continue
            lines.append(f"| {size} | {r['batch_size']} | {impl} | {r['state_bytes'] / GIB:.2f} | "
                         f"{r['gradient_bytes'] / GIB:.2f} | {r['activation_bytes'] / GIB:.2f} | "
                         f"{r['update_bytes'] / GIB:.2f} | "
                         f"{r['step_peak_bytes'] / GIB:.2f} | {r['peak_bytes'] / GIB:.2f} | {r['step_s']:.1f} |")
        plain, recompute, hub = (by.get((size, impl)) for impl in IMPLS)
        if plain and recompute and "error" not in plain and "error" not in recompute:
            notes.append(f"{size}: activations {plain['activation_bytes'] / recompute['activation_bytes']:.2f}x "
                         f"smaller with recompute; step time ratio {recompute['step_s'] / plain['step_s']:.2f}")
        if hub and "error" not in hub:
            for impl, r in (("albert_tf", plain), ("albert_tf_recompute", recompute)):
                if r and "error" not in r:
                    notes.append(f"{size}: {impl} / keras-hub: step peak "
                                 f"{r['step_peak_bytes'] / hub['step_peak_bytes']:.2f}, peak RSS "
                                 f"{r['peak_bytes'] / hub['peak_bytes']:.2f}, "
                                 f"step time {r['step_s'] / hub['step_s']:.2f}")
    return "\n".join(lines + [""] + [f"* {note}" for note in notes]) + "\n"


def main(argv):
    del argv
    FLAGS = flags.FLAGS
    if FLAGS.worker:
        print("RESULT " + json.dumps(worker(json.loads(FLAGS.worker))), flush=True)
        return
    from albert_tf.fileio import write_text_atomic

    sizes = [s for s in FLAGS.sizes.split(",") if s]
    impls = [i for i in FLAGS.impls.split(",") if i]
    for name, values, known in (("sizes", sizes, SIZES), ("impls", impls, IMPLS)):
        unknown = [v for v in values if v not in known]
        if unknown:
            raise app.UsageError(f"--{name}: unknown {unknown}; expected some of {', '.join(known)}.")
    batches = dict(zip(sizes, [int(b) for b in FLAGS.batch_sizes.split(",")])) if FLAGS.batch_sizes else {}
    results = []
    for size in sizes:
        for impl in impls:
            args = {"size": size, "impl": impl, "batch_size": batches.get(size, FLAGS.batch_size),
                    "seq_len": FLAGS.seq_len, "steps": FLAGS.steps, "intra_op_threads": FLAGS.intra_op_threads,
                    "timeout_s": FLAGS.timeout_s}
            start = time.time()
            result = run_worker(args)
            results.append(result)
            logging.info("%s %s: %s (%.0f s)", size, impl,
                         result.get("error") or "peak RSS %.2f GiB, state %.2f GiB, activations %.2f GiB, update "
                         "%.2f GiB, step peak %.2f GiB, step %.1f s" % (
                             result["peak_bytes"] / GIB, result["state_bytes"] / GIB,
                             result["activation_bytes"] / GIB, result["update_bytes"] / GIB,
                             result["step_peak_bytes"] / GIB, result["step_s"]),
                         time.time() - start)
            text = render(results)
            if FLAGS.output:
                write_text_atomic(FLAGS.output, text)
                write_text_atomic(os.path.splitext(FLAGS.output)[0] + ".json", json.dumps(results, indent=1))
    print(text)


if __name__ == "__main__":
    flags.DEFINE_string("sizes", "base,large,xlarge,xxlarge", "Comma-separated sizes: base, large, xlarge, xxlarge.")
    flags.DEFINE_string("impls", ",".join(IMPLS), "Implementations: albert_tf, albert_tf_recompute, keras_hub.")
    flags.DEFINE_integer("seq_len", 512, "Sequence length.", lower_bound=1, upper_bound=512)
    flags.DEFINE_integer("batch_size", 1, "Batch size of every size without an entry in --batch_sizes.",
                         lower_bound=1)
    flags.DEFINE_string("batch_sizes", "", "Optional comma-separated batch size per --sizes entry.")
    flags.DEFINE_integer("steps", 2, "Training steps per configuration (the first also traces; at least 2 to "
                         "measure the activations apart from the tracing).", lower_bound=1)
    flags.DEFINE_integer("intra_op_threads", os.cpu_count(), "TF intra-op threads.", lower_bound=1)
    flags.DEFINE_integer("timeout_s", 3600, "Seconds allowed per configuration.", lower_bound=1)
    flags.DEFINE_string("output", "", "Markdown output (raw results beside it as .json); empty to only print.")
    flags.DEFINE_string("worker", "", "Internal: run one configuration (JSON arguments) and print its result.")
    app.run(main)
