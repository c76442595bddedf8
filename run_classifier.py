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

from albert_tf.tasks.glue import task as classifier_task  # noqa: E402
from albert_tf.training import driver  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS
OPTIONS = (classifier_task.ClassifierOptions, options.RuntimeOptions)
# `hparams_preset` is read here, to fill in the flags not given.
options.define_flags(OPTIONS + (classifier_task.PresetOptions,), no_flag=("gradient_accumulation_steps",))


def main(argv):
    del argv
    preset = {}
    if FLAGS.hparams_preset:
        preset = {name: value for name, value in
                  classifier_task.hparams_preset(FLAGS.hparams_preset, FLAGS.task_name).items()
                  if not FLAGS[name].present}
    driver.run(classifier_task.GlueTask, *options.from_flags(FLAGS, *OPTIONS, overrides=preset))


if __name__ == "__main__":
    flags.mark_flags_as_required(options.required_flags(OPTIONS))
    cli.run_app(main, __doc__)
