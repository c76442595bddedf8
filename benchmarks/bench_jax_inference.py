"""The encoder's inference step under KERAS_BACKEND=jax against TensorFlow's, interleaved: each round runs every
configuration once, each in a fresh process, so that a drift of the shared machine's speed reaches all of them
alike.

Each process builds `AlbertModel` (albert-base v2 shapes, random weights, dropout 0) and times its forward at
seq 128, batch 8 and batch 1:

* `jax`: `jax.jit` over `model.stateless_call` (the variables' values are arguments of the compiled function,
  not constants folded into it), the step `training/inference.py` runs on JAX;
* `tensorflow`: `tf.function` over `model(inputs, training=False)` (the TensorFlow runners' inference step
  without XLA, the CPU default), with oneDNN off (`tensorflow_onednn0`, `TF_ENABLE_ONEDNN_OPTS=0`) or on
  (`tensorflow_onednn1`);
* `tensorflow_xla`: the same `tf.function` with `jit_compile=True`.

Two warm-up calls (tracing and compilation) are left out; each timed call waits for its outputs, and the
process's figure is the median call time. The report gives, per configuration and batch, the median over rounds
of sequences/s, and the machine's load average during the run (the machine may be shared).

    .venv/bin/python benchmarks/bench_jax_inference.py --rounds=3
"""

import json
import os
import statistics
import subprocess
import sys
import time

from absl import app, flags

CONFIGS = {"jax": dict(KERAS_BACKEND="jax"),
           "tensorflow_onednn0": dict(KERAS_BACKEND="tensorflow", TF_ENABLE_ONEDNN_OPTS="0"),
           "tensorflow_onednn1": dict(KERAS_BACKEND="tensorflow", TF_ENABLE_ONEDNN_OPTS="1"),
           "tensorflow_xla": dict(KERAS_BACKEND="tensorflow")}

flags.DEFINE_integer("rounds", 3, "Rounds; each runs every configuration once, in turn.")
flags.DEFINE_list("batch_sizes", ["8", "1"], "Batch sizes, each timed in every process.")
flags.DEFINE_integer("seq_length", 128, "Sequence length.")
flags.DEFINE_float("seconds", 8.0, "Timed seconds per batch size and process (at least 3 calls).")
flags.DEFINE_list("configs", list(CONFIGS), "Configurations, in the order of a round.")
flags.DEFINE_string("child", None, "Internal: run one configuration in this process and print its call times.")
FLAGS = flags.FLAGS

BASE = dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, hidden_act="gelu", num_hidden_groups=1, inner_group_num=1)
OUTPUTS = ("sequence_output", "pooled_output")


def _forward(config, model):
    """`fn(inputs) -> (sequence_output, pooled_output)` as NumPy-readable arrays, compiled for `config`."""
    if config == "jax":
        import jax

        @jax.jit
        def step(trainable, non_trainable, inputs):
            outputs, _ = model.stateless_call(trainable, non_trainable, inputs, training=False)
            return tuple(outputs[key] for key in OUTPUTS)

        return lambda inputs: step([v.value for v in model.trainable_variables],
                                   [v.value for v in model.non_trainable_variables], inputs)
    import tensorflow as tf

    @tf.function(jit_compile=config == "tensorflow_xla")
    def forward(inputs):
        outputs = model(inputs, training=False)
        return tuple(outputs[key] for key in OUTPUTS)

    return forward


def _child(config):
    """Times the forward in this process (its backend set by the parent); prints `RESULT {batch: [seconds]}`."""
    import numpy as np

    import albert_tf

    model = albert_tf.AlbertModel(albert_tf.AlbertConfig.from_dict(BASE))
    forward = _forward(config, model)
    rng = np.random.RandomState(0)
    times = {}
    for batch in (int(b) for b in FLAGS.batch_sizes):
        ids = rng.randint(5, BASE["vocab_size"], size=(batch, FLAGS.seq_length)).astype(np.int32)
        inputs = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
        for _ in range(2):
            [np.asarray(out) for out in forward(inputs)]
        calls = []
        while len(calls) < 3 or sum(calls) < FLAGS.seconds:
            start = time.perf_counter()
            [np.asarray(out) for out in forward(inputs)]
            calls.append(time.perf_counter() - start)
        times[batch] = calls
    print("RESULT " + json.dumps({"times": times, "load": os.getloadavg()[0]}))


def _run_config(config):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **CONFIGS[config])
    argv = [sys.executable, os.path.abspath(__file__), f"--child={config}", f"--seq_length={FLAGS.seq_length}",
            f"--batch_sizes={','.join(FLAGS.batch_sizes)}", f"--seconds={FLAGS.seconds}"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{config} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    return {int(batch): statistics.median(calls) for batch, calls in result["times"].items()}, result["load"]


def main(argv):
    del argv
    if FLAGS.child:
        _child(FLAGS.child)
        return
    unknown = sorted(set(FLAGS.configs) - set(CONFIGS))
    if unknown:
        raise app.UsageError(f"--configs: unknown {unknown}; expected some of {sorted(CONFIGS)}.")
    per_config = {config: {} for config in FLAGS.configs}
    loads = [os.getloadavg()[0]]
    start = time.time()
    for round_index in range(FLAGS.rounds):
        for config in FLAGS.configs:
            seconds, load = _run_config(config)
            loads.append(load)
            for batch, value in seconds.items():
                per_config[config].setdefault(batch, []).append(value)
            rates = ", ".join(f"batch {b}: {b / s:.2f} seq/s" for b, s in seconds.items())
            print(f"round {round_index + 1} {config}: {rates} (load {load:.1f})", flush=True)
    print(f"\nalbert-base encoder forward, seq {FLAGS.seq_length}, float32, {FLAGS.rounds} interleaved rounds "
          f"(medians), {time.time() - start:.0f} s, 1-min load average {min(loads):.1f}-{max(loads):.1f}:")
    print("| configuration | " + " | ".join(f"batch {b} seq/s (min-max)" for b in FLAGS.batch_sizes) + " |")
    print("|---|" + "---|" * len(FLAGS.batch_sizes))
    for config, per_batch in per_config.items():
        cells = []
        for batch in (int(b) for b in FLAGS.batch_sizes):
            rates = [batch / s for s in per_batch[batch]]
            cells.append(f"{statistics.median(rates):.2f} ({min(rates):.2f}-{max(rates):.2f})")
        print(f"| {config} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    app.run(main)
