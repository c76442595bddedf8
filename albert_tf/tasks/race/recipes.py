"""The RACE recipe of `albert-reproduce` (`albert_tf.reproduce`): the original README's command, the paper's
learning rate for v1 models, and the published dev scores."""

from albert_tf.reproduce import DataDir, Recipe
from albert_tf.tasks.race.task import RaceOptions, run_race

RACE_DIR = DataDir("race_dir", "Directory holding RACE/.")
# The original README's RACE command.
_README = dict(max_seq_length=512, max_qa_length=128, train_batch_size=32, learning_rate=1e-5, train_step=12000,
               warmup_step=1000)
# Published dev accuracy (percent), `albert_tf.reproduce.PUBLISHED_SOURCE`.
_PUBLISHED = {"base_v2": 66.8, "large_v2": 75.2, "xlarge_v2": 80.7, "xxlarge_v2": 86.8, "base_v1": 64.0,
              "large_v1": 68.5, "xlarge_v1": 74.8, "xxlarge_v1": 86.5}


def _run(task_dir, init_checkpoint, data_dir, arguments, runtime):
    """Trains, then scores every checkpoint on dev (the best kept); returns the accuracy and the best step."""
    common = dict(runtime, output_dir=task_dir, init_checkpoint=init_checkpoint, **arguments)
    result = run_race(data_dir=data_dir, do_train=True, do_eval=True, **common)
    return [("Accuracy", 100.0 * float(result["eval"]["eval_accuracy"]))], result["eval"].get("best_step")


RECIPES = (Recipe("race", "RACE", RACE_DIR, RaceOptions, _run, dict(_README),
                  "README's run_race command (v2 models); the paper for v1 models: learning rate 2e-5",
                  published=_PUBLISHED, paper_v1=dict(learning_rate=2e-5), order=200),)
