"""Shared pieces of the MediaPipe tests: a classifier the original code fine-tuned (the GLUE golden of
tests/references/finetuned_goldens.npz, 3 labels, sequences of 16) with a 64-piece SentencePiece model trained
here, raw sentences, the original's probabilities on them (its tokenizer and the NumPy forward pass), and the
MediaPipe client run in its own environment."""

import json
import os
import random
import subprocess

import numpy as np
import sentencepiece as spm

import normalization_corpus
import numpy_reference
from original_checkpoints import write_google_checkpoint
from albert_tf.text.vocab import train_sentencepiece

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
GOLDENS = os.path.join(TESTS, "references", "finetuned_goldens.npz")
CLIENT = os.path.join(TESTS, "mediapipe_client.py")
# The MediaPipe environment (`mediapipe` from PyPI, no TensorFlow, no albert_tf): .ci/run creates .venv-mediapipe.
MEDIAPIPE_PYTHON = os.environ.get("ALBERT_MEDIAPIPE_PYTHON", os.path.join(REPO, ".venv-mediapipe", "bin", "python"))
LABELS = ("first", "second", "third")
SEQ, CLS, SEP = 16, 2, 3
MIN_MARGIN = 0.1
WORDS = ("the cafe was very good bad naive resume film story and it is a not great awful plot movie quite "
         "wonderful terrible boring exciting jokes music actors ending").split()
# Raw sentences as users type them: capitals, accents, typographic quotes, Unicode spaces.
SENTENCES = ("The Café was “very” GOOD", "A terrible, AWFUL film", "Naïve jokes and wonderful music",
             "THE ENDING WAS NOT ‘great’", "Résumé:  the   plot is boring", "«Exciting» actors, quite wonderful",
             "It Was Très Bad", "the\u00a0story and the música", "ÉXCITING FILM", "not a great movie\u2009— awful",
             "„Quite“ BORING actors", "Wonderful Café Story")


def _styled(rng, word):
    accented = {"e": "é", "a": "à", "i": "ï", "o": "ô", "u": "ü", "c": "ç"}
    if rng.random() < 0.3:
        word = "".join(accented.get(c, c) if rng.random() < 0.5 else c for c in word)
    return rng.choice((word, word.upper(), word.capitalize(), f"“{word}”"))


def random_sentences(count, seed):
    rng = random.Random(seed)
    return [" ".join(_styled(rng, rng.choice(WORDS)) for _ in range(rng.randint(3, 8))) for _ in range(count)]


def build_release(root):
    """`{"spm", "config", "checkpoint", "weights"}`: the golden classifier saved as the original TF1 code saves
    a checkpoint, with `albert_config.json`, and a 64-piece SentencePiece model (the original's spm_train
    flags) on lower-cased sentences of `WORDS`."""
    root = str(root)
    os.makedirs(root, exist_ok=True)
    corpus = os.path.join(root, "corpus.txt")
    rng = random.Random(0)
    with open(corpus, "w", encoding="utf-8") as f:
        for _ in range(400):
            f.write(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + "\n")
    model = train_sentencepiece(corpus, os.path.join(root, "spm"), vocab_size=64, character_coverage=1.0,
                                minloglevel=2)
    stored = np.load(GOLDENS)
    config = json.loads(str(stored["config"]))
    weights = {k[len("glue/weights/"):]: stored[k] for k in stored.files if k.startswith("glue/weights/")}
    checkpoint = write_google_checkpoint(weights, os.path.join(root, "ckpt", "model.ckpt-best"),
                                         optimizer_slots=False)
    config_file = os.path.join(root, "ckpt", "albert_config.json")
    with open(config_file, "w") as f:
        json.dump(config, f)
    return {"spm": model, "config": config, "config_file": config_file, "checkpoint": checkpoint,
            "weights": weights}


def original_features(spm_file, texts):
    """The original's features of single sentences: `preprocess_text(lower=True)`, `encode_pieces`,
    `[CLS] a [SEP]` truncated and padded to `SEQ` (classifier_utils.convert_single_example)."""
    sp_model = spm.SentencePieceProcessor(model_file=spm_file)
    ids, mask = np.zeros([len(texts), SEQ], np.int32), np.zeros([len(texts), SEQ], np.int32)
    for row, text in enumerate(texts):
        pieces = normalization_corpus.original_ids(sp_model, text, lower=True)[0][:SEQ - 2]
        tokens = [CLS] + pieces + [SEP]
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    return ids, mask, np.zeros_like(ids)


def original_outputs(release, texts):
    """`(probabilities, pooled_output)` of the original on raw `texts` (NumPy forward pass, float64)."""
    out = numpy_reference.albert_forward(release["weights"], release["config"], *original_features(release["spm"],
                                                                                                    texts))
    pooled = out["pooled_output"]
    logits = pooled @ np.asarray(release["weights"]["output_weights"], np.float64).T + release["weights"]["output_bias"]
    logits = logits - logits.max(-1, keepdims=True)
    probabilities = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    return probabilities, pooled


def clear_sentences(release, texts):
    """The texts whose top two original probabilities are at least `MIN_MARGIN` apart."""
    probabilities, _ = original_outputs(release, texts)
    top = np.sort(probabilities, axis=-1)
    return [t for t, row in zip(texts, top) if row[-1] - row[-2] >= MIN_MARGIN]


def mediapipe_missing():
    """Why the MediaPipe environment cannot run here (a skip reason), or None."""
    if not os.path.isfile(MEDIAPIPE_PYTHON):
        return (f"no MediaPipe environment at {MEDIAPIPE_PYTHON}: create it with .ci/run (python3.12 -m venv "
                ".venv-mediapipe && .venv-mediapipe/bin/pip install mediapipe==1.2.3) or set ALBERT_MEDIAPIPE_PYTHON")
    return None


def run_client(task, model_path, texts):
    """MediaPipe's answers (`mediapipe_client.py`) on `texts`, run without TensorFlow and albert_tf."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([MEDIAPIPE_PYTHON, CLIENT, task, model_path], input=json.dumps(list(texts)),
                          capture_output=True, text=True, env=env, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def as_matrix(answers, labels=LABELS):
    return np.array([[answer[label] for label in labels] for answer in answers], np.float64)
