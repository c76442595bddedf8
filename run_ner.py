"""Fine-tunes, evaluates and predicts token classification (NER) with ALBERT on CoNLL-2003-layout data: it
reads `train.txt`, `valid.txt` (or `dev.txt`) and `test.txt` under `--data_dir` (`word POS chunk tag` lines,
IOB1 or IOB2 tags), the model's `--albert_config_file` and `--spm_model_file` (or those of a release directory
given as `--init_checkpoint`) and the initial weights; it writes `train.tf_record` and `model.ckpt-<step>`
checkpoints in `--output_dir`, scores every checkpoint on the dev set with `conlleval`'s entity F1
(`eval_results.txt`, `best_trial.txt`, `model.ckpt-best`), writes `predictions.txt` (the test file with the
predicted tag as a last column) and `predict_results.txt` with `--do_predict`, and a SavedModel in
`--export_dir`.

Example:

    python run_ner.py --data_dir=$CONLL --albert_config_file=$ALBERT/albert_config.json \\
      --spm_model_file=$ALBERT/30k-clean.model --init_checkpoint=$ALBERT/model.ckpt-best \\
      --output_dir=$OUT --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 \\
      --learning_rate=5e-5 --train_step=3000 --warmup_step=300 --save_checkpoints_steps=500
"""

from absl import flags

from albert_tf import cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

from albert_tf.tasks.ner import task as ner_task  # noqa: E402
from albert_tf.training import driver  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS
OPTIONS = (ner_task.NerOptions, options.RuntimeOptions)
options.define_flags(OPTIONS)


def main(argv):
    del argv
    driver.run(ner_task.NerTask, *options.from_flags(FLAGS, *OPTIONS))


if __name__ == "__main__":
    flags.mark_flags_as_required(options.required_flags(OPTIONS))
    cli.run_app(main, __doc__)
