"""The SQuAD 1.1 and 2.0 recipes of `albert-reproduce` (`albert_tf.reproduce`): the original README's commands,
the paper's values where they differ, and the published dev scores."""

import os

import tensorflow as tf

from albert_tf.errors import InputError
from albert_tf.reproduce import DataDir, Recipe
from albert_tf.tasks.squad.task import SquadOptions, run_squad

SQUAD_DIR = DataDir("squad_dir", "Directory of train-v1.1.json, dev-v1.1.json, train-v2.0.json, dev-v2.0.json.")
# The original README's SQuAD command (both versions).
_README = dict(max_seq_length=384, doc_stride=128, max_query_length=64, train_batch_size=48, learning_rate=5e-5,
               num_train_epochs=2.0, warmup_proportion=0.1, n_best_size=20, max_answer_length=30)
# Published dev (F1, EM), `albert_tf.reproduce.PUBLISHED_SOURCE`.
_PUBLISHED = {
    "squad1.1": {"base_v2": (90.2, 83.2), "large_v2": (91.8, 85.2), "xlarge_v2": (92.9, 86.4),
                 "xxlarge_v2": (94.6, 89.1), "base_v1": (89.3, 82.3), "large_v1": (90.6, 83.9),
                 "xlarge_v1": (92.5, 86.1), "xxlarge_v1": (94.8, 89.3)},
    "squad2.0": {"base_v2": (82.1, 79.3), "large_v2": (84.9, 81.8), "xlarge_v2": (87.9, 84.1),
                 "xxlarge_v2": (89.8, 86.9), "base_v1": (80.0, 77.1), "large_v1": (82.3, 79.4),
                 "xlarge_v1": (86.1, 83.1), "xxlarge_v1": (90.2, 87.4)},
}


def _files(squad_dir, version):
    files = {"train_file": os.path.join(squad_dir, f"train-v{version}.json"),
             "predict_file": os.path.join(squad_dir, f"dev-v{version}.json")}
    for name, path in files.items():
        if not tf.io.gfile.exists(path):
            raise InputError(f"SQuAD {version}: `{name}` {path!r} not found (the data directory holds "
                             f"train-v{version}.json and dev-v{version}.json).")
    return files


def _runner(version):
    def run(task_dir, init_checkpoint, data_dir, arguments, runtime):
        """Trains, then scores every checkpoint on dev (the best kept); returns F1 and EM and the best step."""
        common = dict(runtime, output_dir=task_dir, init_checkpoint=init_checkpoint, **arguments)
        result = run_squad(do_train=True, do_predict=True, **_files(data_dir, version), **common)
        metrics = result["eval"]
        exact = metrics["exact_match"] if "exact_match" in metrics else metrics["exact"]
        return [("F1", float(metrics["f1"])), ("EM", float(exact))], metrics.get("best_step")

    return run


RECIPES = (
    Recipe("squad1.1", "SQuAD 1.1", SQUAD_DIR, SquadOptions, _runner("1.1"),
           dict(_README, version_2_with_negative=False),
           "README's run_squad_v1 command (the paper: the same values, 3649 steps = 2 epochs)",
           published=_PUBLISHED["squad1.1"], order=100),
    Recipe("squad2.0", "SQuAD 2.0", SQUAD_DIR, SquadOptions, _runner("2.0"),
           dict(_README, version_2_with_negative=True),
           "README's run_squad_v2 command; the paper: learning rate 3e-5, max_seq_length 512, 3 epochs (8144 steps)",
           published=_PUBLISHED["squad2.0"], paper=dict(learning_rate=3e-5, max_seq_length=512, num_train_epochs=3.0),
           order=101),
)
