"""Pretraining input pipeline throughput (examples/s) next to the training step it feeds (issue 11, item 3).

Usage:
    python benchmarks/bench_input.py --input_file=quickstart_output/train.tfrecord --max_seq_length=128 \
        --max_predictions_per_seq=20 --batch_size=32

Reads the TFRecords with `albert_tf.tasks.pretraining.inputs.pretraining_dataset` exactly as `run_pretraining.py`
does (training mode: file shuffle, interleave, shuffle(100), parse, int32 cast, batch with drop_remainder) and
reports examples/s of the reader alone; with `--step_config=base_v2` it also times the albert_tf training step
(forward + backward + LAMB) at the same batch and sequence length, so the two rates can be compared.
"""

import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "TFRecord glob(s) written by albert-create-pretraining-data.")
flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per record.")
flags.DEFINE_integer("batch_size", 32, "Batch size.")
flags.DEFINE_integer("batches", 300, "Batches to time for the reader.")
flags.DEFINE_string("step_config", "base_v2", "Preset of the model whose training step is timed ('' to skip).")
flags.DEFINE_integer("steps", 3, "Training steps to time (after one warm-up step).")
flags.mark_flag_as_required("input_file")


def main(argv):
    del argv
    import tensorflow as tf

    import albert_tf
    from albert_tf.tasks.pretraining.inputs import pretraining_dataset
    from albert_tf.tasks.pretraining.model import pretraining_loss
    from albert_tf.training.optimization import create_optimizer

    ds = pretraining_dataset(FLAGS.input_file, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
                             FLAGS.batch_size, is_training=True)
    it = iter(ds)
    next(it)
    start = time.perf_counter()
    for _ in range(FLAGS.batches):
        next(it)
    reader = FLAGS.batches * FLAGS.batch_size / (time.perf_counter() - start)
    print(f"reader: {reader:.0f} examples/s (batch {FLAGS.batch_size}, seq {FLAGS.max_seq_length})")
    if not FLAGS.step_config:
        return
    config = albert_tf.AlbertConfig.from_preset(FLAGS.step_config)
    config.max_position_embeddings = max(config.max_position_embeddings, FLAGS.max_seq_length)
    model = albert_tf.AlbertPretrainer(config)
    opt = create_optimizer(1e-4, 1000, 10, optimizer="lamb")

    @tf.function
    def step(features):
        with tf.GradientTape() as tape:
            loss, _, _ = pretraining_loss(model(features, training=True), features)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    batch = next(it)
    batch = dict(batch, input_ids=tf.minimum(batch["input_ids"], config.vocab_size - 1),
                 masked_lm_ids=tf.minimum(batch["masked_lm_ids"], config.vocab_size - 1))
    step(batch)
    start = time.perf_counter()
    for _ in range(FLAGS.steps):
        step(batch)
    trainer = FLAGS.steps * FLAGS.batch_size / (time.perf_counter() - start)
    print(f"training step ({FLAGS.step_config}): {trainer:.1f} examples/s; reader / step = {reader / trainer:.0f}x")


if __name__ == "__main__":
    app.run(main)
