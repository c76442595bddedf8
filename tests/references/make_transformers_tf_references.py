"""Writes transformers' own TensorFlow ALBERT files (`tf_model.h5`) and their outputs for the tests.

transformers v5 removed TensorFlow; its 4.x `TFAlbert*` classes wrote `config.json` + `tf_model.h5` (Keras 2
`save_weights` in HDF5) with `save_pretrained`. This script makes one such directory per class with a tiny random
config (every weight random, so a bias read from the wrong place shows), runs transformers on fixed token ids
tokenized by transformers' own `AlbertTokenizer` from a tiny SentencePiece model, and stores all of it here. The
tests (tests/checkpoints/test_transformers_tf.py, in an environment without transformers) load each directory with
albert_tf's `from_pretrained` and compare.

Command (from the repository root; a side environment, not the project's):

    /root/.pyenv/versions/3.11.7/bin/python -m venv .venv-side
    .venv-side/bin/pip install "tensorflow==2.20.*" "tf-keras==2.20.*" "transformers==4.57.*" sentencepiece h5py
    CUDA_VISIBLE_DEVICES= .venv-side/bin/python tests/references/make_transformers_tf_references.py

Versions used: Python 3.11.7, tensorflow 2.20.0, tf-keras 2.20.1, transformers 4.57.6, sentencepiece 0.2.3,
h5py 3.16.0.

It rewrites `transformers_tf/`:
  spiece.model                  the tiny SentencePiece model (identity normalization: a few KB)
  <TFAlbert class>/             `save_pretrained` of each of the 7 classes: config.json, tf_model.h5
  outputs.npz                   the token ids (`input_ids`, `attention_mask`, `token_type_ids`, and `mc_*` of shape
                                [2, 4, seq] for multiple choice) and each class's outputs as `<class>/<output name>`

With `--ours=DIR` it instead loads the `tf_model.h5` directory DIR that `albert-convert --format=hf_tf` wrote
(its `config.json` names the class) with transformers, runs it on the stored ids and adds its outputs, and the
`h5_digest` of the file it ran, to `transformers_tf/ours_outputs.npz` under `<class>/<output name>`. It was run
once for each class albert_tf writes, on the directories tests/checkpoints/test_transformers_tf.py writes from the
references, after the references themselves (which start `transformers_tf/` afresh), e.g.

    PYTHONPATH=$PWD /work/main/.venv-newest/bin/python tests/checkpoints/test_transformers_tf.py OUT_DIR   # albert_tf's env

    for d in OUT_DIR/*/; do
        .venv-side/bin/python tests/references/make_transformers_tf_references.py --ours=$d
    done
"""

import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "transformers_tf")
CLASSES = ("TFAlbertModel", "TFAlbertForPreTraining", "TFAlbertForMaskedLM", "TFAlbertForSequenceClassification",
           "TFAlbertForTokenClassification", "TFAlbertForQuestionAnswering", "TFAlbertForMultipleChoice")
LABELS = {"TFAlbertForSequenceClassification": ["negative", "neutral", "positive"],
          "TFAlbertForTokenClassification": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]}
TEXTS = [("the quick brown fox jumps over the lazy dog", "a dog sleeps"),
         ("albert shares its layers", "every layer has the same weights and the model is small")]
CORPUS = [pair[0] + " " + pair[1] for pair in TEXTS] + [
    "the cat sat on the mat", "models read text and write numbers", "a quick test of a small model",
    "layers share weights across the whole encoder", "brown dogs and lazy foxes sleep over there"] * 5


def make_spm(directory):
    import sentencepiece as spm

    corpus = os.path.join(directory, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(CORPUS) + "\n")
    prefix = os.path.join(directory, "spiece")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=90, pad_id=0, unk_id=1, eos_id=-1, bos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], normalization_rule_name="identity", character_coverage=1.0,
        model_type="unigram", hard_vocab_limit=False, num_threads=1, minloglevel=2)
    return prefix + ".model"


def token_ids(spm_file):
    """transformers' `AlbertTokenizer` (slow, sentencepiece) on TEXTS: [2, seq] pairs and [2, 4, seq] choices."""
    from transformers import AlbertTokenizer

    tokenizer = AlbertTokenizer(spm_file, do_lower_case=True, keep_accents=False)
    pairs = tokenizer([a for a, _ in TEXTS], [b for _, b in TEXTS], padding="max_length", max_length=30,
                      truncation=True, return_tensors="np")
    firsts = [a for a, _ in TEXTS for _ in range(4)]
    seconds = [b + " " + str(option) for _, b in TEXTS for option in ("one", "two", "three", "four")]
    choices = tokenizer(firsts, seconds, padding="max_length", max_length=24, truncation=True, return_tensors="np")
    ids = {name: pairs[name].astype(np.int32) for name in ("input_ids", "attention_mask", "token_type_ids")}
    ids.update({"mc_" + name: choices[name].astype(np.int32).reshape(2, 4, -1)
                for name in ("input_ids", "attention_mask", "token_type_ids")})
    return ids, len(tokenizer)


def config_for(name, vocab_size):
    from transformers import AlbertConfig

    config = AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_hidden_groups=2, num_attention_heads=2, intermediate_size=37, inner_group_num=1,
                          hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                          classifier_dropout_prob=0.0, max_position_embeddings=64)
    if name in LABELS:
        config.id2label = dict(enumerate(LABELS[name]))
        config.label2id = {label: i for i, label in enumerate(LABELS[name])}
    return config


def randomize(model, seed):
    """Every weight random (LayerNorm scales around 1), so no value is a default that could hide a misread."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        shape = tuple(weight.shape)
        value = rng.normal(0.0, 0.3, size=shape)
        if "LayerNorm/gamma" in weight.name:
            value += 1.0
        weight.assign(value.astype(np.float32))


def run(model, name, ids):
    prefix = "mc_" if name == "TFAlbertForMultipleChoice" else ""
    inputs = {key: ids[prefix + key] for key in ("input_ids", "attention_mask", "token_type_ids")}
    out = model(inputs, training=False)
    return {f"{name}/{key}": np.asarray(value) for key, value in out.items()
            if key not in ("hidden_states", "attentions") and value is not None}


def make_all():
    import transformers

    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    with tempfile.TemporaryDirectory() as work:
        spm_file = make_spm(work)
        shutil.copy(spm_file, os.path.join(OUT, "spiece.model"))
    ids, vocab_size = token_ids(os.path.join(OUT, "spiece.model"))
    arrays = dict(ids)
    for seed, name in enumerate(CLASSES):
        model = getattr(transformers, name)(config_for(name, vocab_size))
        model(model.dummy_inputs, training=False)
        randomize(model, seed)
        model.save_pretrained(os.path.join(OUT, name))
        arrays.update(run(model, name, ids))
        again = getattr(transformers, name).from_pretrained(os.path.join(OUT, name))
        for key, value in run(again, name, ids).items():   # The stored file gives the same outputs.
            np.testing.assert_allclose(value, arrays[key], atol=1e-6)
    np.savez_compressed(os.path.join(OUT, "outputs.npz"), **arrays)
    print("wrote", OUT, sorted(arrays))


def h5_digest(path):
    """sha256 over a `tf_model.h5`'s layer names, weight names and float32 values, in file order: the tests check
    that albert_tf's writer still writes what transformers was run on here."""
    import hashlib

    import h5py

    digest = hashlib.sha256()
    with h5py.File(path, "r") as handle:
        for layer in handle.attrs["layer_names"]:
            layer = layer.decode() if isinstance(layer, bytes) else str(layer)
            digest.update(layer.encode())
            for name in handle[layer].attrs["weight_names"]:
                name = name.decode() if isinstance(name, bytes) else str(name)
                digest.update(name.encode())
                digest.update(np.ascontiguousarray(handle[layer][name][()], np.float32).tobytes())
    return digest.hexdigest()


def run_ours(directory):
    """transformers' outputs from a directory albert_tf wrote (its `config.json` names the class)."""
    import json

    import transformers

    with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
        name = "TF" + json.load(f)["architectures"][0]
    ids = dict(np.load(os.path.join(OUT, "outputs.npz")))
    model = getattr(transformers, name).from_pretrained(directory)
    path = os.path.join(OUT, "ours_outputs.npz")
    arrays = dict(np.load(path)) if os.path.exists(path) else {}
    arrays.update(run(model, name, ids))
    arrays[f"{name}/sha256"] = np.asarray(h5_digest(os.path.join(directory, "tf_model.h5")))
    np.savez_compressed(path, **arrays)
    print("wrote", path, sorted(arrays))


def main(argv):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")   # transformers' TF classes run on tf-keras (Keras 2).
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", default=None, help="A tf_model.h5 directory albert_tf wrote, run by transformers.")
    args = parser.parse_args(argv)
    if args.ours:
        run_ours(args.ours)
    else:
        make_all()


if __name__ == "__main__":
    main(sys.argv[1:])
