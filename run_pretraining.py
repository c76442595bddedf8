"""Pretrains ALBERT with the masked-LM and sentence-order losses, as the original `run_pretraining.py`: it reads
the TFRecords of `create_pretraining_data.py` (`--input_file`), the model's `--albert_config_file` and
optionally the initial weights of `--init_checkpoint`; `--do_train` writes `model.ckpt-<step>` checkpoints and
TensorBoard summaries in `--output_dir` (a restarted job resumes from the latest), and `--do_eval` scores
every checkpoint there (ours or the original's) and writes `eval_results.txt`, `best_trial.txt` and
`model.ckpt-best`.

Example (the README command, on a v3-512 TPU pod; any strategy works the same way):

    python run_pretraining.py --input_file=data/*.tfrecord --output_dir=out \\
      --albert_config_file=albert_base/albert_config.json --do_train --do_eval \\
      --train_batch_size=4096 --max_seq_length=512 --max_predictions_per_seq=20 --optimizer=lamb \\
      --learning_rate=0.00176 --num_train_steps=125000 --num_warmup_steps=3125 --save_checkpoints_steps=5000 \\
      --use_tpu --tpu_name=my-tpu
"""

from absl import flags

from albert_tf import cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

from albert_tf.tasks.pretraining import task as pretraining  # noqa: E402
from albert_tf.training import driver  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS
OPTIONS = (pretraining.PretrainingOptions, options.RuntimeOptions)
options.define_flags(OPTIONS)


def main(argv):
    del argv
    driver.run(pretraining.PretrainingTask, *options.from_flags(FLAGS, *OPTIONS))


if __name__ == "__main__":
    flags.mark_flags_as_required(options.required_flags(OPTIONS))
    cli.run_app(main, __doc__)
