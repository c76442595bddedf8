"""The CPU int8 route on the fine-tuned goldens: each golden model (tests/references/make_finetuned_references.py:
a tiny ALBERT fine-tuned per head kind, with held-out inputs and the original's float outputs) exported as
`albert-export --format=tflite --quantize=dynamic` writes it (resizable inputs) and run as the pipeline runs it
(rows sorted by length, each batch cut to its longest row) keeps every decision of the float outputs, with
probabilities within LiteRT int8's tolerance of docs/deploying_small.md.

Reference: the stored float outputs of the original's code (`finetuned_goldens.npz`), NumPy decisions.
"""

import os

import numpy as np
import pytest

import repo_paths
from albert_tf import AlbertClassifier, AlbertPretrainer, AlbertRace, AlbertSquadV1, AlbertSquadV2
from albert_tf.export import lite
from albert_tf.pipelines import real_length
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from original_checkpoints import write_google_checkpoint

# docs/deploying_small.md: LiteRT's dynamic-range int8 quantizes each row's activations on the fly, per tensor; on
# the goldens it keeps every decision and moves a probability by at most 0.09 (the masked-LM word of one row, NER
# 0.05, every other head under 0.005), more than Keras' quantize("int8") (0.05, test_keras_backends.py).
INT8_PROBABILITY_TOLERANCE = 0.1
GOLDENS = os.path.join(repo_paths.REFERENCES, "finetuned_goldens.npz")
MODELS = {"glue": (AlbertClassifier, dict(num_labels=3)), "squad_v1": (AlbertSquadV1, {}),
          "squad_v2": (AlbertSquadV2, {}), "race": (AlbertRace, {}),
          "ner": (AlbertTokenClassifier, dict(num_labels=5)), "pretraining": (AlbertPretrainer, {})}
FIRST_WORD = 5   # the goldens' vocabulary: 0 pad, 2 [CLS], 3 [SEP], 4 [MASK], words from 5
BATCH = 4
BEAM = 5         # SQuAD 2.0's start_n_top / end_n_top


def _softmax(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _golden(task, tmp_path):
    stored = np.load(GOLDENS)
    part = {key[len(task) + 1:]: stored[key] for key in stored.files if key.startswith(task + "/")}
    weights = {k[len("weights/"):]: v for k, v in part.items() if k.startswith("weights/")}
    write_google_checkpoint(weights, str(tmp_path / "model.ckpt-best"), optimizer_slots=False)
    (tmp_path / "albert_config.json").write_text(str(stored["config"]))
    inputs = {k[len("inputs/"):]: v for k, v in part.items() if k.startswith("inputs/")}
    outputs = {k[len("outputs/"):]: v.astype(np.float64) for k, v in part.items() if k.startswith("outputs/")}
    return str(tmp_path), inputs, outputs


def decisions(task, outputs, inputs, serving):
    """`{decision: (argmax, probabilities)}` from the stored float outputs (`serving` False) or the LiteRT
    export's serving outputs: SQuAD 2.0 compares the best start, the best start's ends and the answer class,
    each with its top `BEAM` probabilities; NER the words' tags."""
    if task == "squad_v2":
        cls = 1 / (1 + np.exp(-outputs["cls_logits"]))
        if serving:
            start, end = np.exp(outputs["start_top_log_probs"]), np.exp(outputs["end_top_log_probs"][:, :BEAM])
            return {"start": (outputs["start_top_index"][:, 0], start), "end": (outputs["end_top_index"][:, 0], end),
                    "answer_class": (cls > 0.5, cls)}
        start, end = np.exp(outputs["start_log_probs"]), np.exp(outputs["end_log_probs"])
        return {"start": (start.argmax(-1), -np.sort(-start, -1)[:, :BEAM]),
                "end": (end.argmax(-1), -np.sort(-end, -1)[:, :BEAM]), "answer_class": (cls > 0.5, cls)}
    if task == "pretraining":
        sop = np.exp(outputs["sop_log_probs"]) if serving else _softmax(outputs["sop_logits"])
        mlm = _softmax(outputs["mlm_logits"])
        return {"mlm": (mlm.argmax(-1), mlm), "sop": (sop.argmax(-1), sop)}
    if task == "squad_v1":
        return {name: (_softmax(outputs[f"{name}_logits"]).argmax(-1), _softmax(outputs[f"{name}_logits"]))
                for name in ("start", "end")}
    probabilities = _softmax(outputs["logits"]) if "logits" in outputs else outputs["probabilities"]
    if task == "ner":
        words = inputs["input_ids"] >= FIRST_WORD
        return {"tags": (probabilities.argmax(-1)[words], probabilities[words])}
    return {"label": (probabilities.argmax(-1), probabilities)}


# The outputs with a per-token axis (axis 1), padded back to the inputs' length after a batch cut to its longest.
TOKEN_OUTPUTS = {"squad_v1": ("start_logits", "end_logits"), "ner": ("logits", "probabilities")}


def run_at_own_lengths(task, model, inputs):
    """The LiteRT outputs of `inputs` (rows in their order), run as the pipeline runs them: sorted by real length,
    `BATCH` rows a batch, each cut to its longest row."""
    renamed = {"masked_lm_positions": "mlm_positions"}
    features = {renamed.get(k, k): np.asarray(v, np.int32) for k, v in inputs.items()}
    full = features["input_ids"].shape[-1]
    lengths = [real_length(row) for row in features["input_mask"]]
    order = np.argsort(lengths, kind="stable")
    results = {}
    for start in range(0, len(order), BATCH):
        rows = order[start:start + BATCH]
        cut = max(lengths[i] for i in rows)
        batch = {k: v[rows] if k == "mlm_positions" else v[rows][..., :cut] for k, v in features.items()}
        for name, value in model(batch).items():
            if name in ("sequence_output", "pooled_output", "predictions"):   # no decision of the goldens
                continue
            if name in TOKEN_OUTPUTS.get(task, ()):
                pad = [(0, 0), (0, full - cut)] + [(0, 0)] * (value.ndim - 2)
                value = np.pad(value, pad, constant_values=-1e4 if name.endswith("logits") else 0.0)
            results.setdefault(name, [None] * len(order))
            for k, i in enumerate(rows):
                results[name][i] = value[k]
    return {name: np.stack(values) for name, values in results.items()}


@pytest.mark.parametrize("task", list(MODELS))
def test_dynamic_int8_at_own_lengths_keeps_the_golden_decisions(task, tmp_path):
    directory, inputs, want = _golden(task, tmp_path)
    cls, kwargs = MODELS[task]
    model = cls.from_pretrained(directory, **kwargs)
    lengths = {"max_predictions_per_seq": inputs["masked_lm_positions"].shape[-1]} if task == "pretraining" else {}
    exported = lite.LiteModel(lite.convert(model, inputs["input_ids"].shape[-1], BATCH, "dynamic",
                                           dynamic_shapes=True, **lengths))
    got = decisions(task, run_at_own_lengths(task, exported, inputs), inputs, serving=True)
    golden = decisions(task, want, inputs, serving=False)
    for name, (argmax, probabilities) in golden.items():
        np.testing.assert_array_equal(got[name][0], argmax, err_msg=f"{task}: {name} argmax")
        print(f"{task} {name}: largest probability change {np.max(np.abs(got[name][1] - probabilities)):.4f}")
        np.testing.assert_allclose(got[name][1], probabilities, atol=INT8_PROBABILITY_TOLERANCE,
                                   err_msg=f"{task}: {name} probabilities")
