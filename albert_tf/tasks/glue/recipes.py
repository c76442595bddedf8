"""The GLUE recipes of `albert-reproduce` (`albert_tf.reproduce`): `run_glue.sh`'s per-task values, and the
published dev scores."""

from albert_tf.reproduce import DataDir, Recipe
from albert_tf.tasks.glue.task import ClassifierOptions, hparams_preset, run_classifier

GLUE_DIR = DataDir("glue_dir", "GLUE root (CoLA/, MNLI/, ...).")
# task -> (name in results.md, the metric that picks `model.ckpt-best` in `run_classifier` (a fraction, shown in
# percent), its label).
_TASKS = {"cola": ("CoLA", "matthew_corr", "MCC"), "sts-b": ("STS-B", "pearson", "Pearson"),
          "sst-2": ("SST-2", "eval_accuracy", "Accuracy"), "mnli": ("MNLI-m", "eval_accuracy", "Accuracy"),
          "qnli": ("QNLI", "eval_accuracy", "Accuracy"), "qqp": ("QQP", "eval_accuracy", "Accuracy"),
          "rte": ("RTE", "eval_accuracy", "Accuracy"), "mrpc": ("MRPC", "eval_accuracy", "Accuracy")}
# Published dev scores (percent), `albert_tf.reproduce.PUBLISHED_SOURCE`: MNLI and SST-2 for every model, the
# other tasks for xxlarge v1 only.
_PUBLISHED = {
    "mnli": {"base_v2": 84.6, "large_v2": 86.5, "xlarge_v2": 87.9, "xxlarge_v2": 90.6, "base_v1": 81.6,
             "large_v1": 83.5, "xlarge_v1": 86.4, "xxlarge_v1": 90.8},
    "sst-2": {"base_v2": 92.9, "large_v2": 94.9, "xlarge_v2": 95.4, "xxlarge_v2": 96.8, "base_v1": 90.3,
              "large_v1": 91.7, "xlarge_v1": 92.4, "xxlarge_v1": 96.9},
    "qnli": {"xxlarge_v1": 95.3}, "qqp": {"xxlarge_v1": 92.2}, "rte": {"xxlarge_v1": 89.2},
    "mrpc": {"xxlarge_v1": 90.9}, "cola": {"xxlarge_v1": 71.4}, "sts-b": {"xxlarge_v1": 93.0},
}


def _runner(task):
    _, key, label = _TASKS[task]

    def run(task_dir, init_checkpoint, data_dir, arguments, runtime):
        """Trains, then scores every checkpoint on dev (the best kept); returns its rows and best step."""
        common = dict(runtime, output_dir=task_dir, init_checkpoint=init_checkpoint, **arguments)
        result = run_classifier(task_name=task, data_dir=data_dir, do_train=True, do_eval=True, **common)
        return [(label, 100.0 * float(result["eval"][key]))], result["eval"].get("best_step")

    return run


RECIPES = tuple(
    Recipe(task, display, GLUE_DIR, ClassifierOptions, _runner(task), hparams_preset("albert", task),
           "run_glue.sh (the paper's Appendix A.4 has the same values)", published=_PUBLISHED.get(task, {}),
           order=index)
    for index, (task, (display, _, _)) in enumerate(_TASKS.items()))
