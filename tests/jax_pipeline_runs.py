"""`albert_tf.pipeline` on checkpoints of the original's layout, under the Keras backend of the process: run as a
script by tests/test_jax_pipelines.py, once under TensorFlow and once under JAX, whose answers it compares.

    python tests/jax_pipeline_runs.py ROOT OUT_JSON

ROOT receives, the first time (under TensorFlow), a release directory per task (a classifier and a SQuAD 1.1
model: TF1 names, `albert_config.json`, the SentencePiece model); OUT_JSON the pipelines' answers.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import squad_fixtures as fx  # noqa: E402

SENTENCES = ["a tower .", "the city lies at the tip of the lake and is home to a school founded in 1855 .",
             ("coffee", "she was born in warsaw")]
QUESTIONS = [{"question": "who built it ?", "context": paragraph} for paragraph, _, _ in fx.PARAGRAPHS[:2]]


def prepare(root):
    """The releases under `root` (written once, under TensorFlow)."""
    import tensorflow as tf
    from albert_tf import AlbertClassifier, AlbertSquadV1
    from albert_tf.checkpoints import save_tf1_checkpoint

    if os.path.exists(os.path.join(root, "ready")):
        return
    os.makedirs(root, exist_ok=True)
    spm_file, config, config_file = fx.model_files(root)
    for name, make in (("classifier", lambda: AlbertClassifier(config, num_labels=3)),
                       ("squad_v1", lambda: AlbertSquadV1(config))):
        tf.keras.utils.set_random_seed(len(name))
        model = make()
        ids = tf.ones([1, 8], tf.int32)
        model({"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids)})
        directory = os.path.join(root, name)
        os.makedirs(directory)
        save_tf1_checkpoint(model, os.path.join(directory, "model.ckpt-best"))
        shutil.copy(config_file, os.path.join(directory, "albert_config.json"))
        shutil.copy(spm_file, os.path.join(directory, "30k-clean.model"))
    open(os.path.join(root, "ready"), "w").close()


def answers(root):
    import albert_tf

    classify = albert_tf.pipeline("text-classification", os.path.join(root, "classifier"), max_seq_length=64)
    qa = albert_tf.pipeline("question-answering", os.path.join(root, "squad_v1"), max_seq_length=64,
                            doc_stride=16, max_query_length=12)
    return {"text-classification": classify(SENTENCES), "question-answering": qa(QUESTIONS)}


def main(root, out):
    import keras

    if keras.backend.backend() == "tensorflow":
        prepare(root)
    with open(out, "w") as f:
        json.dump({"backend": keras.backend.backend(), **answers(root)}, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
