"""Pretraining throughput (examples/s): albert_tf's training loop against keras-hub's `AlbertBackbone`.

Measured in one process, on random data of the pretraining schema (seq 128, 20 predictions, batch 8 by
default), albert-base v2 shapes (V=30000, E=128, H=768, 12 layers, dropout 0):

* `albert_tf loop`: `loop.run_training` (the runner's real loop: `strategy.run`, LAMB with clipping,
  checkpoint at the end) on `AlbertPretrainer`, with and without `jit_compile`;
* `albert_tf step` and `keras-hub step`: the same hand-written `tf.function` train step (forward, the
  original MLM + SOP loss, backward, ALBERT LAMB) on `AlbertPretrainer` and on keras-hub's `AlbertBackbone`
  with a `MaskedLMHead` tied to its token embedding and a 2-way SOP dense layer, with and without XLA.

Each configuration is warmed up (trace/compile and `--warmup_steps` steps) before `--steps` timed steps.
The CPU may be shared with other jobs: compare rows of one run, not runs.

    .venv/bin/python benchmarks/bench_training.py --steps=5
"""

import json
import os
import tempfile
import time

import numpy as np
from absl import app, flags, logging

flags.DEFINE_integer("batch_size", 8, "Global batch size.")
flags.DEFINE_integer("seq_length", 128, "Sequence length.")
flags.DEFINE_integer("max_predictions", 20, "Masked positions per sequence.")
flags.DEFINE_integer("steps", 5, "Timed steps per configuration.")
flags.DEFINE_integer("warmup_steps", 1, "Untimed steps after tracing.")
flags.DEFINE_list("configs", ["albert_tf_loop", "albert_tf_loop_xla", "albert_tf_step", "albert_tf_step_xla",
                              "keras_hub_step", "keras_hub_step_xla"], "Configurations to run.")
flags.DEFINE_string("output", None, "Optional JSON file for the results.")
FLAGS = flags.FLAGS

BASE = dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, hidden_act="gelu")


def random_features(batch, seq, pred, vocab, seed=0):
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, vocab, size=(batch, seq)).astype(np.int32)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), pred, replace=False) for _ in range(batch)]),
                        axis=1).astype(np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
            "masked_lm_positions": positions,
            "masked_lm_ids": np.take_along_axis(ids, positions, axis=1),
            "masked_lm_weights": np.ones((batch, pred), np.float32),
            "next_sentence_labels": rng.randint(0, 2, size=(batch, 1)).astype(np.int32)}


def build_albert_tf():
    import albert_tf

    model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(BASE))

    def forward(features, training):
        return model(features, training=training)

    return model, forward


def build_keras_hub():
    import keras
    import keras_hub
    import tensorflow as tf

    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=BASE["vocab_size"], num_layers=12, num_heads=12, embedding_dim=128, hidden_dim=768,
        intermediate_dim=3072, num_groups=1, num_inner_repetitions=1, dropout=0.0, max_sequence_length=512)
    mlm_head = keras_hub.layers.MaskedLMHead(vocabulary_size=BASE["vocab_size"],
                                             token_embedding=backbone.token_embedding,
                                             intermediate_activation=keras.activations.gelu,
                                             layer_norm_epsilon=1e-12)
    sop_head = keras.layers.Dense(2)
    mlm_head.build((None, None, 768), (None, None))
    sop_head.build((None, 768))

    class Wrapper(keras.Model):
        def __init__(self):
            super().__init__()
            self.backbone, self.mlm_head, self.sop_head = backbone, mlm_head, sop_head

        def call(self, features, training=False):
            outputs = self.backbone({"token_ids": features["input_ids"],
                                     "segment_ids": features["segment_ids"],
                                     "padding_mask": features["input_mask"]}, training=training)
            return {"mlm_logits": self.mlm_head(outputs["sequence_output"],
                                                mask_positions=features["masked_lm_positions"]),
                    "sop_logits": self.sop_head(outputs["pooled_output"])}

    model = Wrapper()
    model.built = True

    def forward(features, training):
        return model(features, training=training)

    del tf
    return model, forward


def time_step(model, forward, features, jit_compile, steps, warmup):
    """Examples/s of a plain `tf.function` train step with the original loss and ALBERT's LAMB."""
    import tensorflow as tf

    from albert_tf.tasks.pretraining.model import pretraining_loss
    from albert_tf.training import optimization

    optimizer = optimization.create_optimizer(1e-4, 1000, 10, optimizer="lamb")
    variables = model.trainable_variables
    optimizer.build(variables)

    @tf.function(jit_compile=jit_compile)
    def grads_fn(batch):
        with tf.GradientTape() as tape:
            loss, _, _ = pretraining_loss(forward(batch, True), batch)
        return loss, tape.gradient(loss, variables)

    @tf.function
    def step(batch):
        loss, grads = grads_fn(batch)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    batch = {k: tf.constant(v) for k, v in features.items()}
    start = time.time()
    for _ in range(1 + warmup):
        step(batch).numpy()
    warm = time.time() - start
    start = time.time()
    for _ in range(steps):
        loss = step(batch).numpy()
    elapsed = time.time() - start
    return {"examples_per_second": steps * len(features["input_ids"]) / elapsed, "warmup_seconds": warm,
            "final_loss": float(loss)}


def time_loop(features, jit_compile, steps, warmup):
    """Examples/s of `loop.run_training` (the loop of run_pretraining.py) on a repeated in-memory batch."""
    import tensorflow as tf

    import albert_tf
    from albert_tf.training import distribution, loop, optimization
    from albert_tf.tasks.pretraining.task import pretraining_loss_fn

    strategy = distribution.get_strategy("one_device")
    with strategy.scope():
        model = albert_tf.AlbertPretrainer(albert_tf.AlbertConfig.from_dict(BASE))
        optimizer = optimization.create_optimizer(1e-4, 1000, 10, optimizer="lamb")

    def dataset_fn(context):
        return tf.data.Dataset.from_tensors(features).repeat()

    loops = []
    with tempfile.TemporaryDirectory() as model_dir:
        # Loop 1 (untimed): trace + `steps` steps; loop 2: the timed `steps` steps.
        del warmup
        start = time.time()
        loop.run_training(model, optimizer, pretraining_loss_fn, dataset_fn, strategy, model_dir, 2 * steps,
                          iterations_per_loop=steps, save_checkpoints_steps=0, jit_compile=jit_compile,
                          loop_callback=loops.append)
        total = time.time() - start
    timed = loops[-1]
    return {"examples_per_second": timed["examples_per_second"], "warmup_seconds": total - timed["seconds"],
            "final_loss": timed["loss"]}


def main(argv):
    del argv
    import tensorflow as tf

    logging.set_verbosity(logging.WARNING)
    features = random_features(FLAGS.batch_size, FLAGS.seq_length, FLAGS.max_predictions, BASE["vocab_size"])
    results = {}
    for config in FLAGS.configs:
        jit = config.endswith("_xla")
        tf.keras.utils.set_random_seed(0)
        if config.startswith("albert_tf_loop"):
            result = time_loop(features, jit, FLAGS.steps, FLAGS.warmup_steps)
        else:
            model, forward = build_albert_tf() if config.startswith("albert_tf") else build_keras_hub()
            result = time_step(model, forward, features, jit, FLAGS.steps, FLAGS.warmup_steps)
        results[config] = result
        print(f"{config:22s} {result['examples_per_second']:8.2f} examples/s  "
              f"(warm-up {result['warmup_seconds']:.0f} s, loss {result['final_loss']:.3f})", flush=True)
    info = {"batch_size": FLAGS.batch_size, "seq_length": FLAGS.seq_length, "steps": FLAGS.steps,
            "cpu_count": os.cpu_count(), "tensorflow": tf.__version__, "results": results}
    if FLAGS.output:
        with open(FLAGS.output + ".tmp", "w") as f:
            json.dump(info, f, indent=2)
        os.replace(FLAGS.output + ".tmp", FLAGS.output)


if __name__ == "__main__":
    app.run(main)
