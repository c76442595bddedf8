"""Fine-tunes, evaluates and predicts RACE with ALBERT, as the original `run_race.py`: it reads the
`RACE/{train,dev,test}/{middle,high}` files under `--data_dir`, the model's `--albert_config_file` and
`--spm_model_file` (or those of a release directory given as `--init_checkpoint`), and the initial weights;
it writes cached `{train,eval,predict}.tf_record` features and `model.ckpt-<step>` checkpoints in
`--output_dir`, scores every checkpoint on the dev set (`eval_results.txt`, `best_trial.txt`,
`model.ckpt-best`), writes `predict_results.txt` and `predictions.tsv` for the test set with `--do_predict`,
and a SavedModel in `--export_dir`; checkpoints written by the original code in `--output_dir` are read as
well.

Example (the README's command):

    python run_race.py --data_dir=$DATA --albert_config_file=$ALBERT/albert_config.json \\
      --spm_model_file=$ALBERT/30k-clean.model --init_checkpoint=$ALBERT/model.ckpt-best \\
      --output_dir=$OUT --max_seq_length=512 --max_qa_length=128 --train_batch_size=32 \\
      --learning_rate=1e-5 --train_step=12000 --warmup_step=1000 --save_checkpoints_steps=100
"""

from absl import flags

from albert_tf import cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

from albert_tf.tasks.race import task as race_task  # noqa: E402
from albert_tf.training import driver  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS
OPTIONS = (race_task.RaceOptions, options.RuntimeOptions)
# The original `run_race.py` has no --optimizer: AdamW.
options.define_flags(OPTIONS, no_flag=("optimizer",))


def main(argv):
    del argv
    driver.run(race_task.RaceTask, *options.from_flags(FLAGS, *OPTIONS))


if __name__ == "__main__":
    flags.mark_flags_as_required(options.required_flags(OPTIONS))
    cli.run_app(main, __doc__)
