"""What a plain Transformer encoder learns in the quickstart's budget, on the quickstart's own records.

A reference for `benchmarks/README.md`, "Pretraining on the quickstart's corpus": the quickstart's small
ALBERT reaches a held-out masked-LM accuracy of about 0.16 in 1500 steps, against a goal of 0.30. This trains
an encoder that is not ALBERT on the same records, with the same batches, steps and metric, to tell the
architecture's share from the budget's:

* BERT-style embeddings at the full width H (token + position + segment, LayerNorm; no factorization);
* `--layers` Transformer blocks, their own weights each (or one shared block with `--shared`), post-LN as BERT
  and ALBERT (`--norm=post`) or pre-LN with a final LayerNorm (`--norm=pre`, the form known to train fastest);
* BERT's masked-LM head (dense + GELU + LayerNorm, the output tied to the token embeddings, a bias);
* Keras `AdamW` (weight decay 0.01) with linear warm-up over 10% of `--steps` and linear decay to zero.

The held-out accuracy is the quickstart's: the weighted share of masked positions whose argmax is the target,
over the whole batches of one pass of `heldout.tfrecord`. It reads a finished quickstart's output directory
(`albert_config.json` gives the vocabulary and sequence length):

    .venv/bin/albert-quickstart --output_dir=/tmp/qs
    .venv/bin/python benchmarks/quickstart_reference.py --quickstart_dir=/tmp/qs --norm=pre,post
"""

import json
import os
import sys
import time

from absl import app, flags

flags.DEFINE_string("quickstart_dir", "quickstart_output", "A finished quickstart's --output_dir.")
flags.DEFINE_list("norm", ["pre", "post"], "Encoders to train, in turn: pre (pre-LN), post (post-LN).")
flags.DEFINE_integer("steps", 1500, "Training steps (the quickstart's default).")
flags.DEFINE_integer("batch_size", 32, "Sequences per step (the quickstart's default).")
flags.DEFINE_float("learning_rate", 1e-3, "Peak AdamW learning rate.")
flags.DEFINE_integer("hidden_size", 128, "H (the quickstart's).")
flags.DEFINE_integer("layers", 4, "Transformer blocks (the quickstart's L).")
flags.DEFINE_integer("heads", 4, "Attention heads.")
flags.DEFINE_integer("intermediate_size", 512, "FFN width.")
flags.DEFINE_bool("shared", False, "One block applied --layers times (ALBERT's sharing) instead of --layers blocks.")
flags.DEFINE_integer("eval_every", 500, "Steps between held-out evaluations.")
flags.DEFINE_integer("seed", 1, "Initialisation and input-order seed.")
FLAGS = flags.FLAGS


def build(norm, vocab_size, seq_length):
    """`(logits_fn, variables)`: `logits_fn(features, training) -> [batch, predictions, vocab]`."""
    import keras
    import tensorflow as tf

    init = keras.initializers.TruncatedNormal(stddev=0.02)
    h = FLAGS.hidden_size

    def layer_norm():
        return keras.layers.LayerNormalization(epsilon=1e-12)

    token = keras.layers.Embedding(vocab_size, h, embeddings_initializer=init)
    position = keras.layers.Embedding(seq_length, h, embeddings_initializer=init)
    segment = keras.layers.Embedding(2, h, embeddings_initializer=init)
    embedding_norm, final_norm = layer_norm(), layer_norm()
    blocks = []
    for _ in range(1 if FLAGS.shared else FLAGS.layers):
        blocks.append({
            "attention": keras.layers.MultiHeadAttention(FLAGS.heads, h // FLAGS.heads, kernel_initializer=init),
            "ffn_in": keras.layers.Dense(FLAGS.intermediate_size, activation="gelu", kernel_initializer=init),
            "ffn_out": keras.layers.Dense(h, kernel_initializer=init),
            "norm_1": layer_norm(), "norm_2": layer_norm()})
    head_dense = keras.layers.Dense(h, activation="gelu", kernel_initializer=init)
    head_norm = layer_norm()
    output_bias = tf.Variable(tf.zeros([vocab_size]), name="output_bias")

    def encode(features):
        ids = features["input_ids"]
        x = token(ids) + position(tf.range(tf.shape(ids)[1]))[None] + segment(features["segment_ids"])
        x = embedding_norm(x)
        mask = tf.cast(features["input_mask"][:, None, :], tf.bool)
        for i in range(FLAGS.layers):
            b = blocks[0 if FLAGS.shared else i]
            if norm == "post":
                x = b["norm_1"](x + b["attention"](x, x, attention_mask=mask))
                x = b["norm_2"](x + b["ffn_out"](b["ffn_in"](x)))
            else:
                y = b["norm_1"](x)
                x = x + b["attention"](y, y, attention_mask=mask)
                x = x + b["ffn_out"](b["ffn_in"](b["norm_2"](x)))
        return x if norm == "post" else final_norm(x)

    def logits_fn(features):
        picked = tf.gather(encode(features), features["masked_lm_positions"], batch_dims=1)
        return tf.einsum("bph,vh->bpv", head_norm(head_dense(picked)), token.embeddings) + output_bias

    # Build every layer once so that the variable list is complete before the first step.
    ones = tf.ones([1, seq_length], tf.int32)
    logits_fn({"input_ids": ones, "input_mask": ones, "segment_ids": 0 * ones,
               "masked_lm_positions": tf.zeros([1, 1], tf.int32)})
    layers = [token, position, segment, embedding_norm, head_dense, head_norm]
    layers += [layer for b in blocks for layer in b.values()] + ([final_norm] if norm == "pre" else [])
    variables = [v for layer in layers for v in layer.trainable_variables] + [output_bias]
    return logits_fn, variables


def run(norm, train_file, heldout_file, vocab_size, seq_length, predictions):
    """Trains one encoder; returns `[(step, training loss, held-out accuracy, seconds), ...]`."""
    import keras
    import tensorflow as tf

    from albert_tf.tasks.pretraining.inputs import pretraining_dataset

    keras.utils.set_random_seed(FLAGS.seed)
    logits_fn, variables = build(norm, vocab_size, seq_length)
    warmup = max(1, FLAGS.steps // 10)

    def rate():
        step = tf.cast(optimizer.iterations, tf.float32)
        return FLAGS.learning_rate * tf.minimum((step + 1) / warmup, 1.0 - step / FLAGS.steps)

    optimizer = keras.optimizers.AdamW(rate, weight_decay=0.01)

    def terms(features):
        logits = logits_fn(features)
        labels, weights = features["masked_lm_ids"], features["masked_lm_weights"]
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        hits = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
        return tf.reduce_sum(nll * weights) / tf.reduce_sum(weights), tf.reduce_sum(hits * weights), \
            tf.reduce_sum(weights)

    @tf.function(jit_compile=True)
    def train_step(features):
        with tf.GradientTape() as tape:
            loss, _, _ = terms(features)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    eval_step = tf.function(terms, jit_compile=True)
    eval_batches = max(1, sum(1 for _ in tf.data.TFRecordDataset(heldout_file)) // 64)

    def heldout_accuracy():
        hits = total = 0.0
        for features in pretraining_dataset(heldout_file, seq_length, predictions, 64,
                                            is_training=False).take(eval_batches):
            _, h, w = eval_step(features)
            hits, total = hits + float(h), total + float(w)
        return hits / total

    data = iter(pretraining_dataset(train_file, seq_length, predictions, FLAGS.batch_size, is_training=True,
                                    seed=FLAGS.seed))
    curve, start = [], time.time()
    for i in range(1, FLAGS.steps + 1):
        loss = train_step(next(data))
        if i % FLAGS.eval_every == 0 or i == FLAGS.steps:
            seconds = time.time() - start
            accuracy = heldout_accuracy()
            curve.append((i, float(loss), accuracy, seconds))
            print(f"{norm}-LN step {i}/{FLAGS.steps}: training MLM loss {float(loss):.3f}, held-out MLM accuracy "
                  f"{accuracy:.4f} ({i / seconds:.1f} steps/s)", flush=True)
    return curve


def _fail(message):
    """A bad flag or input: one line on stderr, exit status 2."""
    sys.stderr.write(f"quickstart_reference.py: error: {message}\n")
    sys.exit(2)


def main(argv):
    del argv
    if not FLAGS.norm or any(norm not in ("pre", "post") for norm in FLAGS.norm):
        _fail(f"--norm must name pre and/or post; got {','.join(FLAGS.norm)!r}")
    if min(FLAGS.steps, FLAGS.batch_size, FLAGS.layers, FLAGS.heads, FLAGS.eval_every) < 1:
        _fail("--steps, --batch_size, --layers, --heads and --eval_every must be >= 1")
    if FLAGS.hidden_size % FLAGS.heads:
        _fail(f"--hidden_size ({FLAGS.hidden_size}) must divide by --heads ({FLAGS.heads})")
    paths = {name: os.path.join(FLAGS.quickstart_dir, name)
             for name in ("albert_config.json", "train.tfrecord", "heldout.tfrecord", "quickstart_summary.json")}
    missing = [name for name, path in paths.items() if not os.path.exists(path)]
    if missing:
        _fail(f"--quickstart_dir={FLAGS.quickstart_dir} is not a finished quickstart's output: no "
              f"{', '.join(missing)} (run `albert-quickstart --output_dir={FLAGS.quickstart_dir}` first)")
    with open(paths["albert_config.json"], encoding="utf-8") as f:
        config = json.load(f)
    with open(paths["quickstart_summary.json"], encoding="utf-8") as f:
        summary = json.load(f)
    seq_length = config["max_position_embeddings"]
    # The records' masked positions per sequence: the width of their `masked_lm_ids` feature.
    import tensorflow as tf

    record = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(paths["heldout.tfrecord"]))).numpy())
    predictions = len(record.features.feature["masked_lm_ids"].int64_list.value)
    results = {norm: run(norm, paths["train.tfrecord"], paths["heldout.tfrecord"], config["vocab_size"],
                         seq_length, predictions) for norm in FLAGS.norm}
    albert = summary["trained"]["masked_lm_accuracy"]
    print("\n| encoder | steps | held-out MLM accuracy | training seconds |\n|---|---|---|---|")
    print(f"| the quickstart's ALBERT (from quickstart_summary.json) | {summary['trained_step']} | {albert:.4f} | "
          f"{summary['timings_s']['pretrain']:.0f} (pretrain step) |")
    for norm, curve in results.items():
        step, _, accuracy, seconds = curve[-1]
        kind = "one shared block" if FLAGS.shared else f"{FLAGS.layers} blocks"
        print(f"| plain Transformer, {norm}-LN, H = {FLAGS.hidden_size}, {kind} | {step} | {accuracy:.4f} | "
              f"{seconds:.0f} |")
    print(f"\nUnigram baseline (always the most frequent target): {summary['chance']['mlm_unigram_accuracy']:.4f}.")


if __name__ == "__main__":
    app.run(main)
