"""Fine-tunes and predicts SQuAD 1.1 or, with `--version_2_with_negative`, SQuAD 2.0 with ALBERT, as the original
`run_squad_v1.py` / `run_squad_v2.py`: it reads the SQuAD JSON `--train_file` and `--predict_file`, the
model's `--albert_config_file` and `--spm_model_file` (default: those that come with `--init_checkpoint`, as
for the other runners), and the initial weights of `--init_checkpoint`; it
writes the feature files (`--train_feature_file`, `--predict_feature_file`, `--predict_feature_left_file`,
default in `--output_dir`), `model.ckpt-<step>` checkpoints in `--output_dir`, and with `--do_predict` scores
every checkpoint (`eval_results.txt`, `best_trial.txt`, `model.ckpt-best`) and writes `predictions.json`,
`nbest_predictions.json` (v2: `null_odds.json`) from the best; `--export_dir` receives a SavedModel (v1 also
`albert_model.tflite`); checkpoints written by the original code in `--output_dir` are read as well.

SQuAD 2.0 uses the XLNet-style head with `--start_n_top`, `--end_n_top`, `--dropout_prob` and the null-score
threshold. Example (the README's SQuAD command):

    python run_squad.py --albert_config_file=albert_base/albert_config.json \\
      --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base/model.ckpt-best \\
      --train_file=train-v1.1.json --predict_file=dev-v1.1.json --train_feature_file=train.tf_record \\
      --predict_feature_file=dev.tf_record --predict_feature_left_file=dev_left_file.json \\
      --output_dir=squad_out --do_train --do_predict --max_seq_length=384 --doc_stride=128 \\
      --max_query_length=64 --train_batch_size=48 --learning_rate=5e-5 --num_train_epochs=2.0 \\
      --warmup_proportion=.1 --n_best_size=20 --max_answer_length=30
"""

from absl import flags

from albert_tf import cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

from albert_tf.tasks.squad import task as squad_task  # noqa: E402
from albert_tf.training import driver  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS
OPTIONS = (squad_task.SquadOptions, options.RuntimeOptions)
options.define_flags(OPTIONS, no_flag=("gradient_accumulation_steps",))


def main(argv):
    del argv
    driver.run(squad_task.SquadTask, *options.from_flags(FLAGS, *OPTIONS))


if __name__ == "__main__":
    flags.mark_flags_as_required(options.required_flags(OPTIONS))
    cli.run_app(main, __doc__)
