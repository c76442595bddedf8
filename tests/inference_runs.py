"""Every runner's evaluation and prediction on the tiny data of `task_fixtures`, from checkpoints in the
original's layout, under the Keras backend of the process: run as a script by the backend tests
(tests/training/test_jax_inference.py), once under TensorFlow and once under JAX, whose output files they
compare.

    python tests/inference_runs.py ROOT OUT

ROOT receives the data, a config, and one checkpoint per runner the first time (under TensorFlow: the original's
TF1 names with its Adam slots, `original_checkpoints.save_original_checkpoint`); OUT/<runner>/ the runs' output
directories. The MNLI checkpoint is the `model.ckpt-best` of the output directory, as a run of the original
leaves it; the others are `init_checkpoint`s. `max_seq_length` is 64 while the texts are short, so the runners'
length-aware batches run at the next multiple of 8 on TensorFlow (of 32 on JAX, which compiles each length).
"""

import glob
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import task_fixtures  # noqa: E402

SEQ = 64
# Large initial weights: a random tiny model whose outputs differ from row to row (0.02 gives near-constant ones).
CONFIG = dict(task_fixtures.TINY, max_position_embeddings=SEQ, initializer_range=0.5)
RUNNERS = ("mnli", "squad_v1", "squad_v2", "race", "ner", "pretraining")


def _model(name, config, paths):
    from albert_tf import AlbertClassifier, AlbertPretrainer, AlbertRace, AlbertSquadV1, AlbertSquadV2
    from albert_tf.tasks.ner import data as conll
    from albert_tf.tasks.ner.model import AlbertTokenClassifier

    if name == "ner":
        labels = conll.labels_from_sentences(conll.read_sentences(conll.split_path(paths["conll"], "train")))
        return AlbertTokenClassifier(config, num_labels=len(labels), labels=labels)
    return {"mnli": lambda: AlbertClassifier(config, num_labels=3), "squad_v1": lambda: AlbertSquadV1(config),
            "squad_v2": lambda: AlbertSquadV2(config, start_n_top=3, end_n_top=3),
            "race": lambda: AlbertRace(config), "pretraining": lambda: AlbertPretrainer(config)}[name]()


def prepare(root):
    """The data, the config and the checkpoints under `root` (written once, under TensorFlow)."""
    import keras
    import original_checkpoints as oc
    from albert_tf.config import AlbertConfig

    if os.path.exists(os.path.join(root, "ready")):
        return
    paths = task_fixtures.write_all(root)
    config = AlbertConfig(**dict(paths["config"].to_dict(), **CONFIG))
    config.to_json_file(os.path.join(root, "albert_config.json"))
    keras.utils.set_random_seed(5)
    for name in RUNNERS:
        model = _model(name, config, paths)
        ids = np.ones([1, 8], np.int32)
        inputs = {"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids}
        if name == "race":
            inputs = {key: np.stack([value] * 4, axis=1) for key, value in inputs.items()}
        if name == "pretraining":
            inputs.update(masked_lm_positions=np.ones([1, 2], np.int32))
        model(inputs, training=False)
        oc.save_original_checkpoint(model, os.path.join(root, "checkpoints", name, "model.ckpt-best"))
    open(os.path.join(root, "ready"), "w").close()


def run(root, out):
    """Each runner's evaluation and prediction into `out/<runner>`."""
    from albert_tf.tasks.glue.task import run_classifier
    from albert_tf.tasks.ner.task import run_ner
    from albert_tf.tasks.pretraining.task import run_pretraining
    from albert_tf.tasks.race.task import run_race
    from albert_tf.tasks.squad.task import run_squad

    common = dict(albert_config_file=os.path.join(root, "albert_config.json"), spm_model_file=os.path.join(root,
                  "spm.model"), max_seq_length=SEQ)
    batches = dict(eval_batch_size=4, predict_batch_size=4)

    def checkpoint(name):
        return os.path.join(root, "checkpoints", name, "model.ckpt-best")

    def directory(name):
        path = os.path.join(out, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    mnli = directory("mnli")
    shutil.copytree(os.path.dirname(checkpoint("mnli")), mnli)
    run_classifier("mnli", os.path.join(root, "glue"), mnli, do_predict=True, **common, **batches)
    for version, name in (("1.1", "squad_v1"), ("2.0", "squad_v2")):
        run_squad(output_dir=directory(name), predict_file=os.path.join(root, "squad", f"dev-v{version}.json"),
                  init_checkpoint=checkpoint(name), do_predict=True, doc_stride=16, max_query_length=8,
                  version_2_with_negative=version == "2.0", start_n_top=3, end_n_top=3, n_best_size=5,
                  predict_batch_size=4, **common)
    run_race(os.path.join(root, "race"), directory("race"), init_checkpoint=checkpoint("race"), do_train=False,
             do_eval=True, do_predict=True, max_qa_length=16, **common, **batches)
    run_ner(os.path.join(root, "conll"), directory("ner"), init_checkpoint=checkpoint("ner"), do_eval=True,
            do_predict=True, **common, **batches)
    pretraining = directory("pretraining")
    os.makedirs(pretraining)
    for path in glob.glob(checkpoint("pretraining") + ".*"):   # a checkpoint of the original's run to evaluate
        shutil.copy(path, os.path.join(pretraining, os.path.basename(path).replace("ckpt-best", "ckpt-300")))
    run_pretraining(input_file=os.path.join(root, "pretraining.tfrecord"), output_dir=pretraining,
                    do_train=False, do_eval=True, max_eval_steps=2,
                    eval_batch_size=4,
                    max_predictions_per_seq=task_fixtures.PRED, albert_config_file=common["albert_config_file"],
                    max_seq_length=task_fixtures.SEQ)


if __name__ == "__main__":
    prepare(sys.argv[1])
    run(sys.argv[1], sys.argv[2])
