"""The runners' predict step on short inputs: each batch at its longest real length (length-aware, the default)
against every batch at `--max_seq_length` (what the runners did before), on the Keras backend of the process.

The step is the GLUE runner's (`albert_tf.tasks.glue.task.make_inference_step` with `run_model_on_dataset`: the
model, its per-example loss, the NumPy results), on an `AlbertClassifier` with random weights, over a `tf.data`
dataset of packed rows whose real lengths are drawn from 20 to 60 tokens (GLUE's sentence pairs), padded to
`--max_seq_length`. Rounds alternate the two ways in one process (the first pass of each, which traces and
compiles, is not timed); medians of the rounds' examples/s are printed, and whether the two ways' probabilities
are equal (bytes on TensorFlow; the largest difference is printed).

Quick check that it runs (tiny model, a few seconds)::

    .venv/bin/python benchmarks/bench_predict_lengths.py --size=tiny --rounds=1

The measurement (albert-base, batch 8, max_seq_length 128 and 512, each backend)::

    KERAS_BACKEND=tensorflow .venv/bin/python benchmarks/bench_predict_lengths.py --size=base --max_seq_length=128
    KERAS_BACKEND=jax .venv/bin/python benchmarks/bench_predict_lengths.py --size=base --max_seq_length=128
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.tasks.glue.model import AlbertClassifier  # noqa: E402
from albert_tf.tasks.glue.task import make_inference_step, run_model_on_dataset  # noqa: E402

SIZES = {"tiny": dict(vocab_size=1000, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=64),
         "base": dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12,
                      num_attention_heads=12, intermediate_size=3072)}


def dataset(num_rows, max_seq_length, batch_size, seed=0):
    """Packed rows of 20-60 real tokens, padded to `max_seq_length`, with the GLUE runner's feature names."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 61, num_rows)
    mask = (np.arange(max_seq_length)[None, :] < lengths[:, None]).astype(np.int32)
    features = {"input_ids": rng.integers(5, 1000, [num_rows, max_seq_length]).astype(np.int32) * mask,
                "input_mask": mask, "segment_ids": np.zeros_like(mask),
                "label_ids": np.zeros([num_rows], np.int32), "is_real_example": np.ones([num_rows], np.int32)}
    return tf.data.Dataset.from_tensor_slices(features).batch(batch_size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="base")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--num_rows", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    config = AlbertConfig(max_position_embeddings=max(512, args.max_seq_length), hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0, **SIZES[args.size])
    model = AlbertClassifier(config, num_labels=3)
    data = dataset(args.num_rows, args.max_seq_length, args.batch_size)
    strategy = tf.distribute.get_strategy()
    ways = {"length-aware": (make_inference_step(model), args.max_seq_length),
            "full length": (make_inference_step(model, length_aware=False), None)}
    rates, outputs = {name: [] for name in ways}, {}
    for round_index in range(args.rounds + 1):
        for name, (step, max_length) in ways.items():
            start = time.perf_counter()
            arrays = run_model_on_dataset(model, data, strategy, step=step, max_seq_length=max_length)
            seconds = time.perf_counter() - start
            outputs[name] = arrays["probabilities"]
            if round_index:   # the first pass traces and compiles
                rates[name].append(args.num_rows / seconds)
    print(f"backend={keras.backend.backend()} size={args.size} batch={args.batch_size} "
          f"max_seq_length={args.max_seq_length} rows={args.num_rows} (real lengths 20-60) rounds={args.rounds}")
    for name, values in rates.items():
        print(f"  {name:13s} {statistics.median(values):8.2f} examples/s  (rounds: "
              f"{', '.join(f'{v:.2f}' for v in values)})")
    speedup = statistics.median(rates["length-aware"]) / statistics.median(rates["full length"])
    same = outputs["length-aware"].tobytes() == outputs["full length"].tobytes()
    difference = float(np.max(np.abs(outputs["length-aware"] - outputs["full length"])))
    print(f"  speed-up {speedup:.2f}x; probabilities equal in bytes: {same} (largest difference {difference:.2e})")


if __name__ == "__main__":
    main()
