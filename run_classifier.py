"""Fine-tunes, evaluates and predicts a GLUE task with ALBERT, as the original `run_classifier.py`: it reads the
task's TSV files under `--data_dir`, the model's `--albert_config_file` and `--spm_model_file`, and the
initial weights of `--init_checkpoint` (or `--albert_hub_module_handle`); `--do_train` writes cached
`<task>_{train,eval,predict}.tf_record` features (in `--cached_dir`, default `--output_dir`) and
`model.ckpt-<step>` checkpoints in `--output_dir`, `--do_eval` scores every checkpoint on the dev set and keeps
the best as `model.ckpt-best` with `eval_results.txt` and `best_trial.txt`, `--do_predict` writes
`test_results.tsv`, `submit_results.tsv` and the GLUE leaderboard file there, and `--export_dir` receives a
SavedModel; checkpoints written by the original code in `--output_dir` are read as well.

Example (the paper's RTE setup from `run_glue.sh`, starting from an MNLI run):

    python run_classifier.py --task_name=rte --hparams_preset=albert --data_dir=glue \\
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/30k-clean.model \\
      --init_checkpoint=mnli_out/model.ckpt-best --output_dir=rte_out --do_train --do_eval --do_predict
"""

from absl import flags

from albert_tf import cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

from albert_tf.training import driver
from albert_tf.tasks.glue import task as classifier_task  # noqa: E402
from albert_tf.training import flags as runtime_flags  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS

## Required parameters
flags.DEFINE_string("data_dir", None,
                    "The input data dir. Should contain the .tsv files (or other data files) for the task.")
runtime_flags.define_task_flags()
flags.DEFINE_string("task_name", None, "The name of the task to train: cola mnli mismnli mrpc rte sst-2 sts-b "
                    "qqp qnli wnli (or ax: GLUE diagnostic, predict only).")
flags.DEFINE_string("cached_dir", None, "Path to cached training and dev tfrecord file. "
                    "The file will be generated if not exist.")

## Other parameters
flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 0, "number of steps to perform linear learning rate warmup for.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "How many checkpoints to keep (unused, as in the original: every "
                     "checkpoint is kept for --do_eval).")
flags.DEFINE_string("optimizer", "adamw", "Optimizer to use")
flags.DEFINE_float("threshold_to_export", float("nan"),
                   "The threshold value that should be used with the exported classifier. When specified, "
                   "the threshold will be attached to the exported SavedModel, and served along with the "
                   "predictions.")
flags.DEFINE_enum("hparams_preset", None, ["albert"], "Optional: 'albert' sets the per-task learning_rate, "
                    "train_batch_size, train_step, warmup_step, save_checkpoints_steps, max_seq_length, "
                    "optimizer and do_lower_case of the original run_glue.sh (flags given explicitly win).")
runtime_flags.define_runtime_flags()
runtime_flags.define_seed_and_memory_flags()

# Each flag -> the option field it sets; `hparams_preset` is read here, to fill in the flags not given.
FLAG_TABLE = options.FlagTable(
    options.ClassifierOptions,
    dict(**runtime_flags.task_flag_fields(), **runtime_flags.runtime_flag_fields(), data_dir="data_dir",
         task_name="task_name", cached_dir="cached_dir", train_step="train_step", warmup_step="warmup_step",
         keep_checkpoint_max="keep_checkpoint_max", optimizer="optimizer",
         threshold_to_export="threshold_to_export"),
    runner_only=("hparams_preset",), no_flag=("gradient_accumulation_steps",))


def main(argv):
    del argv
    preset = {}
    if FLAGS.hparams_preset:
        preset = {name: value for name, value in
                  classifier_task.hparams_preset(FLAGS.hparams_preset, FLAGS.task_name).items()
                  if not FLAGS[name].present}
    driver.run(classifier_task.GlueTask, *options.from_flags(FLAGS, FLAG_TABLE, __name__, overrides=preset))


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("output_dir")
    cli.run_app(main, __doc__, ["albert_tf.training.flags"])
