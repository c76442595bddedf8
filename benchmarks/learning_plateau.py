"""How long the all-shared ALBERT encoder takes to learn to look at its neighbour: albert_tf against keras-hub.

A diagnostic for the quickstart's learning budget (`benchmarks/README.md`, "Pretraining on the
quickstart's corpus"): there, a 4-minute pretraining run stays at the unigram guess at `[MASK]` positions, and this
asks whether that is our encoder or the architecture. The task is the easiest one that needs context: every
sequence is pairs of equal random tokens (`a a b b c c ...`), `--predictions` of the second tokens of the pairs
are replaced by `[MASK]`, and the answer at a masked position is its left neighbour. One attention head that
looks one position to the left solves it exactly; without looking, chance is `1 / (vocab - 10)`.

Both encoders get the same shape (the quickstart's: H = 128, 4 layers sharing one block, 4 heads, E = 64,
FFN 512, no dropout), the same head (a `Dense(vocab)` on the gathered masked positions, so only the encoder
differs), the same batches and the same optimizer (Keras `AdamW` at a constant `--learning_rate`, or the
package's LAMB with the original's linear decay over `--steps`). Accuracy and loss are printed every
`--log_every` steps, each implementation in turn for every seed; the summary gives the first logged step at
which each run's accuracy reaches `--threshold`, and the last accuracy.

    .venv/bin/python benchmarks/learning_plateau.py --steps=1000 --seeds=1,2
"""

import sys
import time

import numpy as np
from absl import app, flags

flags.DEFINE_list("impls", ["albert_tf", "keras_hub"], "Encoders: albert_tf, keras_hub.")
flags.DEFINE_list("seeds", ["1"], "Initialisation seeds (the batches are the same for every run).")
flags.DEFINE_integer("steps", 1000, "Training steps per run.")
flags.DEFINE_integer("batch_size", 32, "Sequences per step.")
flags.DEFINE_integer("seq_length", 64, "Tokens per sequence (even).")
flags.DEFINE_integer("predictions", 10, "Masked positions per sequence.")
flags.DEFINE_integer("vocab_size", 200, "Vocabulary; tokens 10.. are the random ones, 4 is `[MASK]`.")
flags.DEFINE_integer("hidden_size", 128, "H.")
flags.DEFINE_integer("layers", 4, "Layers (one shared block).")
flags.DEFINE_integer("heads", 4, "Attention heads.")
flags.DEFINE_integer("embedding_size", 64, "E.")
flags.DEFINE_integer("intermediate_size", 512, "FFN width.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Keras AdamW (constant rate) or the package's LAMB.")
flags.DEFINE_float("learning_rate", 1e-3, "Learning rate (LAMB: peak, 10% warm-up, linear decay).")
flags.DEFINE_integer("log_every", 50, "Steps between log lines.")
flags.DEFINE_float("threshold", 0.5, "Accuracy the summary counts as 'learned'.")
FLAGS = flags.FLAGS
MASK_ID = 4


def batches(seed):
    """Endless `(input_ids, positions, labels)` batches of the pair task, from `seed`."""
    rng = np.random.default_rng(seed)
    b, t, p = FLAGS.batch_size, FLAGS.seq_length, FLAGS.predictions
    while True:
        ids = np.repeat(rng.integers(10, FLAGS.vocab_size, size=(b, t // 2)), 2, axis=1)
        positions = np.sort(np.stack([rng.choice(np.arange(1, t, 2), p, replace=False) for _ in range(b)]), axis=1)
        labels = np.take_along_axis(ids, positions, 1)
        np.put_along_axis(ids, positions, MASK_ID, 1)
        yield ids.astype(np.int32), positions.astype(np.int32), labels.astype(np.int32)


def build_encoder(impl):
    """`encode(ids, training) -> [batch, seq, H]` and the encoder's trainable variables."""
    import tensorflow as tf

    if impl == "albert_tf":
        import albert_tf

        model = albert_tf.AlbertModel(albert_tf.AlbertConfig(
            vocab_size=FLAGS.vocab_size, embedding_size=FLAGS.embedding_size, hidden_size=FLAGS.hidden_size,
            num_hidden_layers=FLAGS.layers, num_attention_heads=FLAGS.heads,
            intermediate_size=FLAGS.intermediate_size, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            max_position_embeddings=FLAGS.seq_length, type_vocab_size=2))

        def encode(ids, training):
            return model({"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": tf.zeros_like(ids)},
                         training=training)["sequence_output"]
    else:
        import keras_hub

        model = keras_hub.models.AlbertBackbone(
            vocabulary_size=FLAGS.vocab_size, num_layers=FLAGS.layers, num_heads=FLAGS.heads, num_groups=1,
            num_inner_repetitions=1, embedding_dim=FLAGS.embedding_size, hidden_dim=FLAGS.hidden_size,
            intermediate_dim=FLAGS.intermediate_size, dropout=0.0, max_sequence_length=FLAGS.seq_length)

        def encode(ids, training):
            return model({"token_ids": ids, "segment_ids": tf.zeros_like(ids), "padding_mask": tf.ones_like(ids)},
                         training=training)["sequence_output"]
    return encode, model


def run(impl, seed):
    """Trains one encoder; returns `[(step, loss, accuracy), ...]` at every log step."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    encode, encoder = build_encoder(impl)
    head = keras.layers.Dense(FLAGS.vocab_size, name="head")
    head.build((None, FLAGS.hidden_size))
    if FLAGS.optimizer == "lamb":
        from albert_tf.training.optimization import create_optimizer

        optimizer = create_optimizer(FLAGS.learning_rate, FLAGS.steps, FLAGS.steps // 10, optimizer="lamb")
    else:
        optimizer = keras.optimizers.AdamW(FLAGS.learning_rate)
    variables = encoder.trainable_variables + head.trainable_variables

    @tf.function(jit_compile=True)
    def step(ids, positions, labels):
        with tf.GradientTape() as tape:
            logits = head(tf.gather(encode(ids, True), positions, batch_dims=1))
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        hits = tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels)
        return loss, tf.reduce_mean(tf.cast(hits, tf.float32))

    curve, data, start = [], batches(0), time.time()
    for i in range(1, FLAGS.steps + 1):
        loss, accuracy = step(*next(data))
        if i % FLAGS.log_every == 0 or i == FLAGS.steps:
            curve.append((i, float(loss), float(accuracy)))
            print(f"{impl} seed {seed} step {i}: loss {float(loss):.3f} accuracy {float(accuracy):.3f} "
                  f"({i / (time.time() - start):.1f} steps/s)", flush=True)
    return curve


def _fail(message):
    """A bad flag: one line on stderr, exit status 2."""
    sys.stderr.write(f"learning_plateau.py: error: {message}\n")
    sys.exit(2)


def main(argv):
    del argv
    if FLAGS.seq_length % 2 or FLAGS.predictions > FLAGS.seq_length // 2:
        _fail("--seq_length must be even and --predictions at most half of it")
    unknown = [impl for impl in FLAGS.impls if impl not in ("albert_tf", "keras_hub")]
    if unknown or not FLAGS.impls:
        _fail(f"--impls must name albert_tf and/or keras_hub; got {','.join(FLAGS.impls)!r}")
    if min(FLAGS.steps, FLAGS.log_every, FLAGS.batch_size, FLAGS.predictions) < 1 or FLAGS.vocab_size <= 10:
        _fail("--steps, --log_every, --batch_size and --predictions must be >= 1, --vocab_size > 10")
    if not all(seed.strip().isdigit() for seed in FLAGS.seeds):
        _fail(f"--seeds must be comma-separated non-negative integers; got {','.join(FLAGS.seeds)!r}")
    results = {(impl, int(seed)): run(impl, int(seed)) for seed in FLAGS.seeds for impl in FLAGS.impls}
    print(f"\n| encoder | seed | first logged step with accuracy >= {FLAGS.threshold} | last accuracy | last loss |")
    print("|---|---|---|---|---|")
    for (impl, seed), curve in results.items():
        first = next((s for s, _, a in curve if a >= FLAGS.threshold), None)
        print(f"| {impl} | {seed} | {first or 'not within ' + str(FLAGS.steps)} | {curve[-1][2]:.3f} | "
              f"{curve[-1][1]:.3f} |")
    print(f"\nChance: {1 / (FLAGS.vocab_size - 10):.4f}; loss at chance: {np.log(FLAGS.vocab_size - 10):.3f}.")


if __name__ == "__main__":
    app.run(main)
