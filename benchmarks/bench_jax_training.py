"""The training step under KERAS_BACKEND=jax (`training/jax_trainer.py` in `training/loop.py`) against the TensorFlow loop
(`training/loop.py`, with and without XLA), interleaved: each round runs every configuration once, each in a fresh
process, so that a drift of the shared machine's speed reaches all of them alike.

Each process trains `AlbertPretrainer` (albert-base v2 shapes, dropout 0) with the runners' LAMB on random data of
the pretraining schema (seq 128, 20 predictions, batch 8 by default) through the runner's own loop, one device,
`iterations_per_loop=2`; the loop's first call (tracing and compilation) is left out and the median step time of
the others is the process's figure. The report gives, per configuration, the median over rounds of examples/s.

    .venv/bin/python benchmarks/bench_jax_training.py --rounds=3 --steps=8
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from absl import app, flags

flags.DEFINE_integer("rounds", 3, "Rounds; each runs every configuration once, in turn.")
flags.DEFINE_integer("steps", 8, "Training steps per process (the first loop of 2 is left out).")
flags.DEFINE_integer("batch_size", 8, "Global batch size.")
flags.DEFINE_integer("seq_length", 128, "Sequence length.")
flags.DEFINE_list("configs", ["jax", "tensorflow", "tensorflow_xla"], "Configurations, in the order of a round.")
flags.DEFINE_string("child", None, "Internal: run one configuration in this process and print its step times.")
FLAGS = flags.FLAGS

BASE = dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, hidden_act="gelu", num_hidden_groups=1, inner_group_num=1)
PREDICTIONS = 20


def _dataset(batch, seq):
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(0)
    n = batch * 4
    ids = rng.randint(5, BASE["vocab_size"], size=(n, seq)).astype(np.int32)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), PREDICTIONS, replace=False) for _ in range(n)]),
                        axis=1).astype(np.int32)
    features = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
                "masked_lm_positions": positions, "masked_lm_ids": np.take_along_axis(ids, positions, axis=1),
                "masked_lm_weights": np.ones((n, PREDICTIONS), np.float32),
                "next_sentence_labels": rng.randint(0, 2, size=(n, 1)).astype(np.int32)}
    return tf.data.Dataset.from_tensor_slices(features).repeat().batch(batch, drop_remainder=True)


def _child(config):
    """Trains in this process (its backend set by the parent); prints `RESULT {"step_times": [...]}`."""
    import albert_tf
    from albert_tf.tasks.pretraining.task import pretraining_loss_fn
    from albert_tf.training import optimization

    times = []
    dataset = _dataset(FLAGS.batch_size, FLAGS.seq_length)
    with tempfile.TemporaryDirectory() as model_dir:
        kwargs = dict(num_train_steps=FLAGS.steps, iterations_per_loop=2, save_checkpoints_steps=FLAGS.steps,
                      loop_callback=lambda stats: times.append(stats["step_time"]))
        if config == "jax":
            from albert_tf.training import jax_distribution, loop

            devices = jax_distribution.jax_devices()
            with devices.scope():
                model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(BASE))
                optimizer = optimization.create_optimizer(1e-4, 1000, 10, optimizer="lamb")
            loop.run_training(model, optimizer, pretraining_loss_fn, lambda context: dataset, devices, model_dir,
                              **kwargs)
        else:
            import tensorflow as tf
            from albert_tf.training import loop

            strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
            with strategy.scope():
                model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(BASE))
                optimizer = optimization.create_optimizer(1e-4, 1000, 10, optimizer="lamb")
            loop.run_training(model, optimizer, pretraining_loss_fn, lambda context: dataset, strategy, model_dir,
                              jit_compile=config == "tensorflow_xla", checkpoint_iterator=False, **kwargs)
    print("RESULT " + json.dumps({"step_times": times[1:]}))


def _run_config(config):
    env = dict(os.environ, KERAS_BACKEND="jax" if config == "jax" else "tensorflow", TF_CPP_MIN_LOG_LEVEL="2")
    argv = [sys.executable, os.path.abspath(__file__), f"--child={config}", f"--steps={FLAGS.steps}",
            f"--batch_size={FLAGS.batch_size}", f"--seq_length={FLAGS.seq_length}"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{config} failed:\n{proc.stderr[-3000:]}")
    return statistics.median(json.loads(lines[-1][len("RESULT "):])["step_times"])


def main(argv):
    del argv
    if FLAGS.child:
        _child(FLAGS.child)
        return
    per_config = {config: [] for config in FLAGS.configs}
    for round_index in range(FLAGS.rounds):
        for config in FLAGS.configs:
            seconds = _run_config(config)
            per_config[config].append(seconds)
            print(f"round {round_index + 1} {config}: {seconds:.3f} s/step, "
                  f"{FLAGS.batch_size / seconds:.2f} examples/s", flush=True)
    print(f"\nalbert-base, seq {FLAGS.seq_length}, batch {FLAGS.batch_size}, LAMB, one device, {FLAGS.rounds} "
          "interleaved rounds (median):")
    reference = statistics.median(per_config[FLAGS.configs[-1]])
    for config, values in per_config.items():
        median = statistics.median(values)
        print(f"  {config:15s} {median:.3f} s/step  {FLAGS.batch_size / median:.2f} examples/s  "
              f"(min {min(values):.3f}, max {max(values):.3f}; {reference / median:.2f}x {FLAGS.configs[-1]})")


if __name__ == "__main__":
    app.run(main)
