"""The models on whichever Keras backend the run has (`KERAS_BACKEND=tensorflow`, `jax` or `torch`): the
encoder and every head built from a checkpoint the original TF1 code's way (`tf.compat.v1` variables, `Saver`,
the original names) give the NumPy reference's outputs (`tests/numpy_reference.py` and the heads' formulas from
the original scripts, written out below); three SGD steps of `fit` give the losses written in
`BACKEND_LOSSES` (the same numbers on every backend); a `.keras` file written under JAX by a fresh process loads
here with the same outputs; LoRA; `quantize("int8")` keeps every decision of the fine-tuned goldens (one per head
kind, `tests/references/make_finetuned_references.py`); `fit`, `evaluate`, `predict` and calls on raw strings
(the preprocessor in the `tf.data` pipeline) give what the model gives on the packed ids.

The CI runs this file under each backend (`.ci/run`, the `backends` tier; see docs/testing.md).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import numpy_reference as ref
from albert_tf import AlbertClassifier, AlbertModel, AlbertPretrainer, AlbertRace, AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.layers.base import sublayers
from original_checkpoints import write_google_checkpoint
import repo_paths

BACKEND = keras.backend.backend()
CONFIG = dict(vocab_size=61, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=2,
              num_attention_heads=4, intermediate_size=24, inner_group_num=1, hidden_act="gelu",
              max_position_embeddings=16, type_vocab_size=2, initializer_range=0.02,
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
ATOL = 1e-4


def numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x), np.float64)


def make_inputs(batch=2, seq=8, seed=3):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, CONFIG["vocab_size"], size=(batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[1, 5:] = 0
    seg = np.zeros((batch, seq), np.int32)
    seg[:, 4:] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": seg}


def head_weights(rng):
    """Random weights of every task head under the original scripts' names (and the NER head's own scope)."""
    H = CONFIG["hidden_size"]

    def n(*shape):
        return rng.normal(0.0, 0.3, size=shape).astype(np.float32)

    return {
        "output_weights": n(3, H), "output_bias": n(3),                                  # classifier_utils
        "cls/squad/output_weights": n(2, H), "cls/squad/output_bias": n(2),              # squad_utils v1
        "token_classification/output_weights": n(5, H), "token_classification/output_bias": n(5),
        "start_logits/dense/kernel": n(H, 1), "start_logits/dense/bias": n(1),           # squad_utils v2
        "end_logits/dense_0/kernel": n(2 * H, H), "end_logits/dense_0/bias": n(H),
        "end_logits/LayerNorm/beta": n(H), "end_logits/LayerNorm/gamma": 1.0 + n(H),
        "end_logits/dense_1/kernel": n(H, 1), "end_logits/dense_1/bias": n(1),
        "answer_class/dense_0/kernel": n(2 * H, H), "answer_class/dense_0/bias": n(H),
        "answer_class/dense_1/kernel": n(H, 1),
    }


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A directory with `albert_config.json` and a TF1 checkpoint of the encoder, the pretraining heads and each
    task head (the classifier's `output_weights` of 3 labels; RACE reads its own `[1, H]` checkpoint below)."""
    weights = ref.random_weights(CONFIG, np.random.default_rng(11), heads=True)
    weights.update(head_weights(np.random.default_rng(12)))
    directory = tmp_path_factory.mktemp("release")
    write_google_checkpoint(weights, str(directory / "model.ckpt-best"))
    (directory / "albert_config.json").write_text(json.dumps(CONFIG))
    return str(directory), {k: v.astype(np.float64) for k, v in weights.items()}


def reference(weights, inputs):
    return ref.albert_forward(weights, CONFIG, inputs["input_ids"], inputs["input_mask"], inputs["segment_ids"])


def log_softmax(x, axis=-1):
    x = x - x.max(axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis, keepdims=True))


def test_encoder_reproduces_the_original(release):
    directory, w = release
    inputs = make_inputs()
    out = AlbertModel.from_pretrained(directory)(inputs, training=False)
    want = reference(w, inputs)
    for name in ("sequence_output", "pooled_output", "embedding_output"):
        np.testing.assert_allclose(numpy(out[name]), want[name], atol=ATOL, err_msg=name)
    for got, exp in zip(out["encoder_outputs"], want["all_encoder_layers"]):
        np.testing.assert_allclose(numpy(got), exp, atol=ATOL)


def test_pretraining_heads_reproduce_the_original(release):
    directory, w = release
    inputs = dict(make_inputs(), masked_lm_positions=np.array([[1, 2, 6], [0, 3, 4]], np.int32))
    out = AlbertPretrainer.from_pretrained(directory)(inputs, training=False)
    want = reference(w, inputs)
    mlm, sop = ref.pretraining_heads(w, CONFIG, want["sequence_output"], want["pooled_output"],
                                     inputs["masked_lm_positions"])
    np.testing.assert_allclose(numpy(out["mlm_logits"]), mlm, atol=ATOL)
    np.testing.assert_allclose(numpy(out["sop_logits"]), sop, atol=ATOL)


def test_classifier_squad_v1_and_ner_heads_reproduce_the_original(release):
    directory, w = release
    inputs = make_inputs()
    want = reference(w, inputs)
    seq, pooled = want["sequence_output"], want["pooled_output"]
    logits = pooled @ w["output_weights"].T + w["output_bias"]
    out = AlbertClassifier.from_pretrained(directory, num_labels=3)(inputs, training=False)
    np.testing.assert_allclose(numpy(out["logits"]), logits, atol=ATOL)
    np.testing.assert_array_equal(numpy(out["predictions"]), logits.argmax(-1))
    span = seq @ w["cls/squad/output_weights"].T + w["cls/squad/output_bias"]
    out = AlbertSquadV1.from_pretrained(directory)(inputs, training=False)
    np.testing.assert_allclose(numpy(out["start_logits"]), span[..., 0], atol=ATOL)
    np.testing.assert_allclose(numpy(out["end_logits"]), span[..., 1], atol=ATOL)
    tags = seq @ w["token_classification/output_weights"].T + w["token_classification/output_bias"]
    out = AlbertTokenClassifier.from_pretrained(directory, num_labels=5)(inputs, training=False)
    np.testing.assert_allclose(numpy(out["logits"]), tags, atol=ATOL)


def test_race_head_reproduces_the_original(release, tmp_path):
    directory, w = release
    rng = np.random.default_rng(13)
    race = {"output_weights": rng.normal(0, 0.3, (1, CONFIG["hidden_size"])).astype(np.float32),
            "output_bias": rng.normal(0, 0.3, (1,)).astype(np.float32)}
    encoder = {k: v.astype(np.float32) for k, v in w.items() if k.startswith("bert/")}
    write_google_checkpoint(dict(encoder, **race), str(tmp_path / "model.ckpt-best"))
    (tmp_path / "albert_config.json").write_text(json.dumps(CONFIG))
    choices = [make_inputs(seed=s) for s in range(4)]
    inputs = {k: np.stack([c[k] for c in choices], axis=1) for k in choices[0]}          # [2, 4, 8]
    pooled = np.stack([reference(w, c)["pooled_output"] for c in choices], axis=1)      # [2, 4, H]
    logits = (pooled @ race["output_weights"].T.astype(np.float64))[..., 0] + race["output_bias"][0]
    out = AlbertRace.from_pretrained(str(tmp_path))(inputs, training=False)
    np.testing.assert_allclose(numpy(out["logits"]), logits, atol=ATOL)


def test_squad_v2_head_reproduces_the_original(release):
    """`squad_utils.create_v2_model` with teacher forcing: start and end log-probs and the answer class."""
    directory, w = release
    inputs = make_inputs()
    p_mask = np.zeros_like(inputs["input_mask"])
    p_mask[:, 1:4] = 1
    start = np.array([5, 4], np.int32)
    out = AlbertSquadV2.from_pretrained(directory)(dict(inputs, p_mask=p_mask, start_positions=start),
                                                   training=False)
    seq = reference(w, inputs)["sequence_output"]
    start_logits = (seq @ w["start_logits/dense/kernel"])[..., 0] + w["start_logits/dense/bias"][0]
    start_logits = start_logits * (1 - p_mask) - 1e30 * p_mask
    np.testing.assert_allclose(numpy(out["start_log_probs"]), log_softmax(start_logits), atol=ATOL)
    start_features = np.repeat(seq[np.arange(2), start][:, None], seq.shape[1], axis=1)
    x = np.tanh(np.concatenate([seq, start_features], -1) @ w["end_logits/dense_0/kernel"]
                + w["end_logits/dense_0/bias"])
    x = ref.layer_norm(x, w["end_logits/LayerNorm/gamma"], w["end_logits/LayerNorm/beta"])
    end_logits = (x @ w["end_logits/dense_1/kernel"])[..., 0] + w["end_logits/dense_1/bias"][0]
    end_logits = end_logits * (1 - p_mask) - 1e30 * p_mask
    np.testing.assert_allclose(numpy(out["end_log_probs"]), log_softmax(end_logits), atol=ATOL)
    start_p = np.exp(log_softmax(start_logits))
    feature = np.concatenate([np.einsum("bl,blh->bh", start_p, seq), seq[:, 0]], -1)
    hidden = np.tanh(feature @ w["answer_class/dense_0/kernel"] + w["answer_class/dense_0/bias"])
    np.testing.assert_allclose(numpy(out["cls_logits"]), (hidden @ w["answer_class/dense_1/kernel"])[:, 0],
                               atol=ATOL)


# --- fit: the same losses on every backend ---------------------------------------------------------------------

# The losses of `sgd_losses()` (3 SGD steps of `fit` on one fixed batch from the fixture's weights), as the
# TensorFlow backend gives them; JAX and PyTorch must give the same to 1e-4.
BACKEND_LOSSES = [1.1094470, 1.0755886, 0.9266922]


def sgd_losses(directory, recompute=False):
    """Three steps of `fit` (SGD, lr 0.5, batch 4, no shuffling) of a 3-label classifier from the checkpoint."""
    model = AlbertClassifier.from_pretrained(directory, num_labels=3, dropout_rate=0.0, recompute=recompute)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    inputs = {k: np.concatenate([v, v[::-1]]) for k, v in make_inputs().items()}
    labels = np.array([0, 2, 1, 1], np.int32)
    history = model.fit(inputs, labels, batch_size=4, epochs=3, shuffle=False, verbose=0)
    return history.history["loss"]


def test_three_sgd_steps_give_the_same_losses_on_every_backend(release):
    losses = sgd_losses(release[0])
    assert len(losses) == 3 and losses[2] < losses[0], losses
    np.testing.assert_allclose(losses, BACKEND_LOSSES, atol=1e-4)


def test_recompute_gives_the_same_losses(release):
    """`recompute=True`: TensorFlow's layer-by-layer recomputing backward, `keras.remat` on JAX and PyTorch."""
    np.testing.assert_allclose(sgd_losses(release[0], recompute=True), BACKEND_LOSSES, atol=1e-4)


# --- .keras across backends ------------------------------------------------------------------------------------

JAX_SAVE = """
import sys
import numpy as np
import keras
import albert_tf
model = albert_tf.AlbertClassifier.from_pretrained(sys.argv[1], num_labels=3)
model.save(sys.argv[2])
inputs = {k: np.load(sys.argv[3])[k] for k in ("input_ids", "input_mask", "segment_ids")}
np.save(sys.argv[4], keras.ops.convert_to_numpy(model(inputs, training=False)["logits"]))
"""


@pytest.mark.e2e
def test_keras_file_saved_under_jax_loads_here(release, tmp_path):
    pytest.importorskip("jax")
    inputs = make_inputs()
    np.savez(tmp_path / "inputs.npz", **inputs)
    path, logits = str(tmp_path / "model.keras"), str(tmp_path / "logits.npy")
    env = dict(os.environ, KERAS_BACKEND="jax")
    subprocess.run([sys.executable, "-c", JAX_SAVE, release[0], path, str(tmp_path / "inputs.npz"), logits],
                   env=env, check=True, timeout=600)
    model = keras.saving.load_model(path)
    np.testing.assert_allclose(numpy(model(inputs, training=False)["logits"]), np.load(logits), atol=1e-5)


# --- LoRA ------------------------------------------------------------------------------------------------------

BASE = dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
            intermediate_size=3072)


def count(variables):
    return sum(int(np.prod(v.shape)) for v in variables)


def test_lora_leaves_outputs_unchanged_and_trains_few_weights(release):
    model = AlbertClassifier.from_pretrained(release[0], num_labels=3)
    inputs = make_inputs()
    before = numpy(model(inputs, training=False)["logits"])
    model.enable_lora(4)
    np.testing.assert_array_equal(numpy(model(inputs, training=False)["logits"]), before)
    layers = [layer for layer in sublayers(model) if getattr(layer, "lora_enabled", False)]
    assert sorted({layer.name for layer in layers}) == ["query", "value"]
    # Under 10% of a small model's weights (H=128: in the 16-wide model here the head and biases alone weigh
    # 5%), under 1% of base's.
    for config, fraction in ((dict(BASE, vocab_size=1000, embedding_size=64, hidden_size=128, num_attention_heads=2,
                                   intermediate_size=512), 0.10), (BASE, 0.01)):
        big = AlbertClassifier(config, num_labels=2)
        big.enable_lora(4)
        assert count(big.trainable_weights) < fraction * count(big.weights)


def test_lora_trains_saves_loads_and_merges(release, tmp_path):
    """One SGD step moves the adapters; the adapters (with the head) load into a fresh model with the same
    outputs; the merged copy the exports write gives them too, without adapters."""
    model = AlbertClassifier.from_pretrained(release[0], num_labels=3, dropout_rate=0.0)
    model.enable_lora(2, target_names=("query", "value", "ffn"))
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    inputs = make_inputs()
    model.fit(inputs, np.array([0, 2], np.int32), batch_size=2, epochs=1, verbose=0)
    b = [layer.lora_kernel_b for layer in sublayers(model) if getattr(layer, "lora_enabled", False)]
    assert max(float(np.abs(numpy(v)).max()) for v in b) > 0
    want = numpy(model(inputs, training=False)["logits"])
    path = str(tmp_path / "adapters.lora.h5")
    model.save_lora_weights(path)
    fresh = AlbertClassifier.from_pretrained(release[0], num_labels=3, dropout_rate=0.0)
    fresh.enable_lora(2, target_names=("query", "value", "ffn"))
    fresh.load_lora_weights(path)
    np.testing.assert_allclose(numpy(fresh(inputs, training=False)["logits"]), want, atol=1e-6)
    from albert_tf.models.lora import lora_layers, merged_copy
    merged = merged_copy(fresh)
    assert not lora_layers(merged)
    np.testing.assert_allclose(numpy(merged(inputs, training=False)["logits"]), want, atol=1e-5)


# --- int8 ------------------------------------------------------------------------------------------------------

INT8_PROBABILITY_TOLERANCE = 0.05   # docs/deploying_small.md

# Fine-tuned goldens, one per head kind (tests/references/make_finetuned_references.py): a tiny ALBERT fine-tuned
# on a small synthetic task the head is made for, its weights under the original TF1 names, held-out inputs and
# the original's float outputs on them (NumPy), every held-out decision clear (top two probabilities >= 0.1
# apart).
GOLDENS = os.path.join(repo_paths.REFERENCES, "finetuned_goldens.npz")
GOLDEN_MODELS = {"glue": (AlbertClassifier, dict(num_labels=3)), "squad_v1": (AlbertSquadV1, {}),
                 "squad_v2": (AlbertSquadV2, {}), "race": (AlbertRace, {}),
                 "ner": (AlbertTokenClassifier, dict(num_labels=5)), "pretraining": (AlbertPretrainer, {})}
FIRST_WORD = 5   # the goldens' vocabulary: 0 pad, 2 [CLS], 3 [SEP], 4 [MASK], words from 5


@pytest.fixture(scope="module")
def goldens(tmp_path_factory):
    """`{task: (release directory, inputs, outputs)}`: each task's weights written as the original TF1 code
    writes a checkpoint, with `albert_config.json`."""
    stored = np.load(GOLDENS)
    config = json.loads(str(stored["config"]))
    result = {}
    for task in GOLDEN_MODELS:
        part = {key[len(task) + 1:]: stored[key] for key in stored.files if key.startswith(task + "/")}
        weights = {k[len("weights/"):]: v for k, v in part.items() if k.startswith("weights/")}
        directory = tmp_path_factory.mktemp(task)
        write_google_checkpoint(weights, str(directory / "model.ckpt-best"), optimizer_slots=False)
        (directory / "albert_config.json").write_text(json.dumps(config))
        result[task] = (str(directory),
                        {k[len("inputs/"):]: v for k, v in part.items() if k.startswith("inputs/")},
                        {k[len("outputs/"):]: v.astype(np.float64) for k, v in part.items()
                         if k.startswith("outputs/")})
    return result


def softmax(x):
    return np.exp(log_softmax(x))


def golden_decisions(task, outputs, inputs):
    """`{decision: (argmax, probabilities)}` of the stored outputs; SQuAD v2's end: the ends of the best start,
    as the top `end_n_top` (5) probabilities in order; NER: the words only (`[CLS]`, `[SEP]`, padding carry no
    tag)."""
    if task == "squad_v2":
        end = np.exp(outputs["end_log_probs"])
        cls = 1 / (1 + np.exp(-outputs["cls_logits"]))
        return {"start": (outputs["start_log_probs"].argmax(-1), np.exp(outputs["start_log_probs"])),
                "end": (end.argmax(-1), -np.sort(-end, -1)[:, :5]),
                "answer_class": (cls > 0.5, cls)}
    if task == "squad_v1":
        return {name: (outputs[f"{name}_logits"].argmax(-1), softmax(outputs[f"{name}_logits"]))
                for name in ("start", "end")}
    if task == "pretraining":
        return {name: (outputs[f"{name}_logits"].argmax(-1), softmax(outputs[f"{name}_logits"]))
                for name in ("mlm", "sop")}
    probabilities = softmax(outputs["logits"])
    if task == "ner":
        words = inputs["input_ids"] >= FIRST_WORD
        return {"tags": (probabilities.argmax(-1)[words], probabilities[words])}
    return {"label": (probabilities.argmax(-1), probabilities)}


def model_decisions(task, model, inputs):
    """The model's decisions on `inputs`, as `golden_decisions` gives them (SQuAD v2: its beam's best start
    and that start's best ends)."""
    out = {k: numpy(v) for k, v in model(inputs, training=False).items()}
    if task != "squad_v2":
        return golden_decisions(task, out, inputs), out
    cls = 1 / (1 + np.exp(-out["cls_logits"]))
    return {"start": (out["start_top_index"][:, 0], np.exp(out["start_log_probs"])),
            "end": (out["end_top_index"][:, 0], np.exp(out["end_top_log_probs"][:, :model.end_n_top])),
            "answer_class": (cls > 0.5, cls)}, out


def assert_same_decisions(got, want, atol, what):
    for name, (argmax, probabilities) in want.items():
        np.testing.assert_array_equal(got[name][0], argmax, err_msg=f"{what}: {name} argmax")
        np.testing.assert_allclose(got[name][1], probabilities, atol=atol, err_msg=f"{what}: {name} probabilities")


@pytest.mark.parametrize("task", list(GOLDEN_MODELS))
def test_int8_keeps_the_decisions_of_the_finetuned_goldens(goldens, task, tmp_path):
    """The golden checkpoint gives the stored float outputs (1e-4); `quantize("int8")` keeps every argmax (the
    label, SQuAD's start and end and answer class, RACE's choice, each word's tag, the MLM word at each mask
    and SOP) with probabilities within 0.05 of float; the saved `.keras` file reloads quantized with the same
    outputs."""
    directory, inputs, want = goldens[task]
    cls, kwargs = GOLDEN_MODELS[task]
    model = cls.from_pretrained(directory, **kwargs)
    golden = golden_decisions(task, want, inputs)
    got, out = model_decisions(task, model, inputs)
    assert_same_decisions(got, golden, ATOL, "float")
    for name, value in want.items():
        if name in out and not name.endswith("log_probs"):
            np.testing.assert_allclose(out[name], value, atol=ATOL, err_msg=name)
    model.quantize("int8")
    quantized, _ = model_decisions(task, model, inputs)
    assert_same_decisions(quantized, golden, INT8_PROBABILITY_TOLERANCE, "int8")
    path = str(tmp_path / f"{task}.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert {layer.quantization_mode for layer in sublayers(loaded)
            if isinstance(layer, keras.layers.Dense)} == {"int8"}
    reloaded, _ = model_decisions(task, loaded, inputs)
    assert_same_decisions(reloaded, {k: v for k, v in quantized.items()}, 1e-6, "reloaded")


def test_quantize_modes_other_than_int8_are_refused():
    from albert_tf.errors import InputError
    with pytest.raises(InputError, match="int8"):
        AlbertModel(CONFIG).quantize("float8")


# --- Keras training on strings: the preprocessor in the tf.data pipeline, the model on the backend ---------------

@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    """A SentencePiece model of at most 61 pieces (the release's `vocab_size`), trained on the sentiment text."""
    import random

    from albert_tf.text.vocab import train_sentencepiece
    from glue_fixtures import sentiment_sentence

    root = tmp_path_factory.mktemp("spm")
    rng = random.Random(0)
    (root / "corpus.txt").write_text("\n".join(sentiment_sentence(rng, rng.random() < 0.5).lower()
                                               for _ in range(300)) + "\n")
    return train_sentencepiece([str(root / "corpus.txt")], str(root / "spm"), vocab_size=50,
                               hard_vocab_limit=False, character_coverage=1.0, minloglevel=2)


TEXTS = ["the movie was good .", "a bad film .", "great plot and a happy end", "awful and sad",
         "the story was nice", "poor acting", "it was fine", "ugly"]
QUESTIONS = {"question": ["what was good ?"] * 4 + ["what was bad ?"] * 4, "context": TEXTS}
RACE_TEXTS = {"article": TEXTS[:4], "question": ["what was it ?"] * 4,
              "options": [["good", "bad", "sad", "nice"], ["bad", "good", "poor", "fine"],
                          ["ugly", "fine", "sad", "happy"], ["poor", "nice", "sad", "good"]]}


def text_model(kind, directory, spm_file):
    from albert_tf.text.preprocessor import AlbertPreprocessor

    pre = AlbertPreprocessor(spm_file, max_seq_length=CONFIG["max_position_embeddings"], max_query_length=5,
                             max_qa_length=6)
    if kind == "classifier":
        model = AlbertClassifier.from_pretrained(directory, num_labels=3, dropout_rate=0.0, preprocessor=pre)
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True))
        return model, TEXTS, np.array([0, 2, 1, 1, 0, 2, 1, 0], np.int32), "probabilities"
    if kind == "race":
        keras.utils.set_random_seed(5)   # The head is new (the release's `output_weights` are the classifier's).
        model = AlbertRace(encoder=AlbertModel.from_pretrained(directory), dropout_prob=0.0, preprocessor=pre)
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True))
        return model, RACE_TEXTS, np.array([0, 1, 3, 2], np.int32), "probabilities"
    model = AlbertSquadV1.from_pretrained(directory, preprocessor=pre)
    model.compile(optimizer=keras.optimizers.SGD(0.5))   # the original's SQuAD loss (`task_loss`)
    positions = {"start_positions": np.array([7, 8, 7, 9, 8, 7, 9, 8], np.int32),
                 "end_positions": np.array([8, 9, 10, 9, 9, 8, 10, 9], np.int32)}
    return model, QUESTIONS, positions, "start_logits"


@pytest.mark.parametrize("kind", ["classifier", "squad_v1", "race"])
def test_fit_evaluate_predict_and_calls_on_strings(release, spm_model, kind):
    """`fit`, `evaluate`, `predict` and calls on raw strings, packed by the preprocessor in a `tf.data`
    pipeline (TensorFlow) for the model on this backend, give what the same model gives on the packed ids."""
    model, texts, y, name = text_model(kind, release[0], spm_model)
    ids = {key: value.numpy() for key, value in model.preprocess(texts).items()}
    on_ids, _, _, _ = text_model(kind, release[0], spm_model)
    losses = model.fit(texts, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    id_losses = on_ids.fit(ids, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    assert len(losses) == 2 and np.isfinite(losses).all(), losses
    np.testing.assert_allclose(losses, id_losses, atol=1e-5)
    np.testing.assert_allclose(model.evaluate(texts, y, batch_size=4, verbose=0),
                               on_ids.evaluate(ids, y, batch_size=4, verbose=0), atol=1e-5)
    predicted = model.predict(texts, batch_size=4, verbose=0)
    np.testing.assert_array_equal(predicted["input_ids"], ids["input_ids"])
    want = numpy(on_ids(ids, training=False)[name])
    np.testing.assert_allclose(predicted[name], want, atol=1e-5)
    np.testing.assert_allclose(numpy(model(texts, training=False)[name]), want, atol=1e-5)
