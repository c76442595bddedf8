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

from albert_tf.training import driver
from albert_tf.tasks.race import task as race_task  # noqa: E402
from albert_tf.training import flags as runtime_flags  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS

## Required parameters
flags.DEFINE_string("data_dir", None, "The input data dir. Should contain `RACE/{train,dev,test}/{middle,high}` "
                    "(per-level `all.txt` JSON lines or the per-article `*.txt` files).")
runtime_flags.define_task_flags(defaults={"do_train": True, "do_eval": True, "learning_rate": 1e-5,
                                          "save_checkpoints_steps": 100})
flags.DEFINE_string("task_name", "race", "The name of the task to train.")
flags.DEFINE_string("train_file", None, "path to preprocessed tfrecord file. The file will be generated if not "
                    "exst. Default: <output_dir>/train.tf_record.")
flags.DEFINE_string("eval_file", None, "path to preprocessed tfrecord file. The file will be generated if not "
                    "exst. Default: <output_dir>/eval.tf_record.")
flags.DEFINE_string("predict_file", None, "path to preprocessed tfrecord file. The file will be generated if "
                    "not exst. Default: <output_dir>/predict.tf_record.")

## Other parameters
flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")
flags.DEFINE_integer("max_qa_length", 128, "The maximum number of tokens of question+option (the last ones "
                     "are kept).")
flags.DEFINE_integer("num_keep_checkpoint", 5, "maximum number of keep checkpoints (unused, as in the original).")
flags.DEFINE_bool("high_only", False, "Whether to only run the model on the high school set.")
flags.DEFINE_bool("middle_only", False, "Whether to only run the model on the middle school set.")
flags.DEFINE_integer("train_step", 12000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 1000, "number of steps to perform linear learning rate warmup for.")
runtime_flags.define_runtime_flags(gradient_accumulation=True)
runtime_flags.define_seed_and_memory_flags()

# Each flag -> the option field it sets; `delete_non_best` has no flag (the original deletes them).
FLAG_TABLE = options.FlagTable(
    options.RaceOptions,
    dict(**runtime_flags.task_flag_fields(), **runtime_flags.runtime_flag_fields(gradient_accumulation=True),
         data_dir="data_dir", task_name="task_name", train_file="train_file", eval_file="eval_file",
         predict_file="predict_file", dropout_prob="dropout_prob", max_qa_length="max_qa_length",
         num_keep_checkpoint="num_keep_checkpoint", high_only="high_only", middle_only="middle_only",
         train_step="train_step", warmup_step="warmup_step"),
    no_flag=("optimizer", "delete_non_best"))


def main(argv):
    del argv
    driver.run(race_task.RaceTask, *options.from_flags(FLAGS, FLAG_TABLE, __name__))


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("output_dir")
    cli.run_app(main, __doc__, ["albert_tf.training.flags"])
