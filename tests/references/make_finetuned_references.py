"""Fine-tunes a tiny ALBERT on small learnable synthetic tasks, one per head kind, and stores the fine-tuned
weights under the original TF1 names, held-out inputs and their float outputs: the goldens that
tests/models/test_keras_backends.py quantizes (`quantize("int8")` must keep every argmax of them).

Random weights give near ties (an argmax that any rounding flips); a model fine-tuned on a task it learns gives
the decisions a deployed model makes. Each task is one the head is made for, on a 64-piece vocabulary (0 pad,
2 `[CLS]`, 3 `[SEP]`, 4 `[MASK]`, 5-63 words), sequences of 16:

  glue         sentence pairs, 3 labels: the band (words 5-24, 25-44, 45-63) most of the pair's words are from
  squad_v1     `[CLS] q [SEP] context [SEP]`: the answer is the two words after the marker word 5
  squad_v2     the same, half of the contexts without the marker (unanswerable: start = end = 0)
  race         4 choices of `[CLS] article [SEP] option [SEP]`: the option holding the marker word 6
  ner          5 tags (O, B-X, I-X, B-Y, I-Y): runs of X words (5-14) and Y words (15-24) between O words
  pretraining  MLM + SOP on runs of consecutive words (59 wraps to 5): two masked words per row to predict,
               and whether the two segments are swapped

The stored float outputs are the NumPy forward pass of the original (`tests/numpy_reference.py` and the heads'
formulas of the original scripts, written out below) on the stored weights, float64 cast to float32, not
albert_tf's; the script checks that albert_tf (TensorFlow backend) gives them to 1e-4 and that every held-out
decision is clear (the top two probabilities at least `MIN_MARGIN` apart), and prints each task's held-out
accuracy and smallest margin.

Command (from the repository root; the newest set's environment, CPU, about a minute):

    PYTHONPATH=$PWD:$PWD/tests TF_CPP_MIN_LOG_LEVEL=2 CUDA_VISIBLE_DEVICES= KERAS_BACKEND=tensorflow \\
        /work/main/.venv-newest/bin/python tests/references/make_finetuned_references.py

It rewrites `finetuned_goldens.npz` (compressed, about 360 KB): `config` (the JSON of the `albert_config.json`),
and for each task `<task>/weights/<original TF1 name>` (float32), `<task>/inputs/<name>` (int32) and
`<task>/outputs/<name>` (float32):

  glue         logits [16, 3]
  squad_v1     start_logits, end_logits [16, 16]
  squad_v2     start_log_probs [16, 16]; end_log_probs [16, 16] (the ends of the best start); cls_logits [16]
  race         logits [16, 4]
  ner          logits [16, 16, 5]
  pretraining  mlm_logits [16, 2, 64]; sop_logits [16, 2]
"""

import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))     # tests/: numpy_reference, original_checkpoints
import numpy_reference as ref  # noqa: E402
OUT = os.path.join(HERE, "finetuned_goldens.npz")

CONFIG = dict(vocab_size=64, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_hidden_groups=1,
              num_attention_heads=4, intermediate_size=64, inner_group_num=1, hidden_act="gelu",
              max_position_embeddings=16, type_vocab_size=2, initializer_range=0.2,
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
TASKS = ("glue", "squad_v1", "squad_v2", "race", "ner", "pretraining")
SEQ, CLS, SEP, MASK, FIRST_WORD = 16, 2, 3, 4, 5
NUM_TRAIN, NUM_HELD_OUT = 2048, 16
MIN_MARGIN = 0.1      # the smallest gap between the top two held-out probabilities the script accepts
ATOL = 1e-4


def _pack(first, second=None):
    """`[CLS] first [SEP] (second [SEP])` padded to SEQ: (ids, mask, segments), each [SEQ] int32."""
    ids = [CLS] + list(first) + [SEP]
    segments = [0] * len(ids)
    if second is not None:
        ids += list(second) + [SEP]
        segments += [1] * (len(second) + 1)
    assert len(ids) <= SEQ, ids
    pad = SEQ - len(ids)
    return (np.array(ids + [0] * pad, np.int32), np.array([1] * len(ids) + [0] * pad, np.int32),
            np.array(segments + [0] * pad, np.int32))


def _stack(rows):
    ids, mask, segments = (np.stack(column) for column in zip(*rows))
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def glue_data(rng, n):
    """Pairs of 3-6 words each; the label is the band most of the words are from (a clear majority)."""
    bands = [np.arange(5, 25), np.arange(25, 45), np.arange(45, 64)]
    rows, labels = [], []
    while len(labels) < n:
        label = int(rng.integers(3))
        words = [int(rng.choice(bands[label])) if rng.random() < 0.75 else int(rng.integers(5, 64))
                 for _ in range(int(rng.integers(7, 13)))]
        counts = np.bincount([0 if w < 25 else 1 if w < 45 else 2 for w in words], minlength=3)
        if counts.argmax() != label or np.sort(counts)[-2] >= counts[label] - 1:
            continue
        cut = int(rng.integers(3, len(words) - 2))
        rows.append(_pack(words[:cut], words[cut:]))
        labels.append(label)
    return _stack(rows), np.array(labels, np.int32)


def squad_data(rng, n, v2=False):
    """`[CLS] q [SEP] context(12) [SEP]`; the answer is the two words after the marker (5), placed at context
    position 0-9; with `v2`, half of the contexts have no marker (start = end = 0, `is_impossible` 1)."""
    rows, start, end, impossible = [], [], [], []
    for i in range(n):
        context = [int(w) for w in rng.integers(6, 64, size=12)]
        if v2 and i % 2:
            start.append(0), end.append(0), impossible.append(1)
        else:
            p = int(rng.integers(0, 10))
            context[p] = 5
            start.append(3 + p + 1), end.append(3 + p + 2), impossible.append(0)
        rows.append(_pack([int(rng.integers(6, 64))], context))
    targets = {"start_positions": np.array(start, np.int32), "end_positions": np.array(end, np.int32)}
    if v2:
        targets["is_impossible"] = np.array(impossible, np.int32)
    return _stack(rows), targets


def race_data(rng, n):
    """4 choices of `[CLS] article(8) [SEP] option(4) [SEP]`; the answer is the option holding the marker (6)."""
    features, labels = [], []
    for _ in range(n):
        article = [int(w) for w in rng.integers(7, 64, size=8)]
        label = int(rng.integers(4))
        choices = []
        for c in range(4):
            option = [int(w) for w in rng.integers(7, 64, size=4)]
            if c == label:
                option[int(rng.integers(4))] = 6
            choices.append(_pack(article, option))
        features.append(_stack(choices))
        labels.append(label)
    return {k: np.stack([f[k] for f in features]) for k in features[0]}, np.array(labels, np.int32)


def ner_data(rng, n):
    """`[CLS] words(10-14) [SEP]`: runs of 1-3 X words (5-14, B-X then I-X) or Y words (15-24, B-Y, I-Y), each
    followed by an O word (25-63); labels -100 on `[CLS]`, `[SEP]` and padding."""
    rows, labels = [], []
    for _ in range(n):
        words, tags = [], []
        while len(words) < 10:
            kind = int(rng.integers(3))
            if kind < 2:
                low, begin = (5, 1) if kind == 0 else (15, 3)
                for j in range(int(rng.integers(1, 4))):
                    words.append(int(rng.integers(low, low + 10)))
                    tags.append(begin if j == 0 else begin + 1)
            words.append(int(rng.integers(25, 64)))
            tags.append(0)
        words, tags = words[:14], tags[:14]
        rows.append(_pack(words))
        labels.append([-100] + tags + [-100] * (SEQ - 1 - len(tags)))
    return _stack(rows), np.array(labels, np.int32)


def pretraining_data(rng, n):
    """Progressions `5 + (a + i) mod 59` split into two segments of 6, swapped for SOP label 1;
    two non-adjacent words masked (`[MASK]`) for the MLM."""
    rows, positions, ids, sop = [], [], [], []
    for _ in range(n):
        a = int(rng.integers(59))
        words = [FIRST_WORD + (a + i) % 59 for i in range(12)]
        swapped = int(rng.integers(2))
        first, second = (words[6:], words[:6]) if swapped else (words[:6], words[6:])
        row = _pack(first, second)
        slots = [p for p in range(SEQ) if row[0][p] >= FIRST_WORD]
        p1 = int(rng.choice(slots))
        p2 = int(rng.choice([p for p in slots if abs(p - p1) > 1]))
        pair = sorted((p1, p2))
        ids.append([int(row[0][p]) for p in pair])
        row[0][pair] = MASK
        rows.append(row)
        positions.append(pair)
        sop.append(swapped)
    inputs = dict(_stack(rows), masked_lm_positions=np.array(positions, np.int32))
    targets = {"masked_lm_ids": np.array(ids, np.int32), "masked_lm_weights": np.ones((n, 2), np.float32),
               "next_sentence_labels": np.array(sop, np.int32)}
    return inputs, targets


def data(task, rng, n):
    if task in ("squad_v1", "squad_v2"):
        return squad_data(rng, n, v2=task == "squad_v2")
    return {"glue": glue_data, "race": race_data, "ner": ner_data, "pretraining": pretraining_data}[task](rng, n)


# --- the models and their training -----------------------------------------------------------------------------

NER_LABELS = ["O", "B-X", "I-X", "B-Y", "I-Y"]
EPOCHS = {"glue": 12, "squad_v1": 12, "squad_v2": 16, "race": 12, "ner": 40, "pretraining": 60}
LEARNING_RATES = {"pretraining": 3e-3}   # Adam's; 1e-3 for the others


def build(task):
    from albert_tf import AlbertClassifier, AlbertPretrainer, AlbertRace, AlbertSquadV1, AlbertSquadV2
    from albert_tf.tasks.ner.model import AlbertTokenClassifier

    return {"glue": lambda: AlbertClassifier(CONFIG, num_labels=3, dropout_rate=0.0),
            "squad_v1": lambda: AlbertSquadV1(CONFIG),
            "squad_v2": lambda: AlbertSquadV2(CONFIG, dropout_prob=0.0),
            "race": lambda: AlbertRace(CONFIG, dropout_prob=0.0),
            "ner": lambda: AlbertTokenClassifier(CONFIG, num_labels=5, labels=NER_LABELS, dropout_rate=0.0),
            "pretraining": lambda: AlbertPretrainer(CONFIG)}[task]()


def fine_tune(task, seed):
    """The task's model fine-tuned from a seeded initialization with Adam (the task's own loss, `compile()`)."""
    import keras

    keras.utils.set_random_seed(seed)
    model = build(task)
    x, y = data(task, np.random.default_rng(seed), NUM_TRAIN)
    if task == "squad_v2":
        x = dict(x, start_positions=y["start_positions"])   # teacher forcing of the end logits
    model.compile(optimizer=keras.optimizers.Adam(LEARNING_RATES.get(task, 1e-3)))
    history = model.fit(x, y, batch_size=64, epochs=EPOCHS[task], shuffle=True, verbose=0)
    print(f"{task}: training loss {history.history['loss'][0]:.4f} -> {history.history['loss'][-1]:.4f}")
    return model


# --- the outputs of the original's heads, in NumPy ------------------------------------------------------------

def log_softmax(x, axis=-1):
    x = x - x.max(axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis, keepdims=True))


def squad_v2_outputs(w, seq, p_mask):
    """`squad_utils.create_v2_model` at inference: start log-probs, the end log-probs of the best start, and
    the answer class logit."""
    start_logits = (seq @ w["start_logits/dense/kernel"])[..., 0] + w["start_logits/dense/bias"][0]
    start_logits = start_logits * (1 - p_mask) - 1e30 * p_mask
    start = start_logits.argmax(-1)
    start_features = np.repeat(seq[np.arange(len(seq)), start][:, None], seq.shape[1], axis=1)
    x = np.tanh(np.concatenate([seq, start_features], -1) @ w["end_logits/dense_0/kernel"]
                + w["end_logits/dense_0/bias"])
    x = ref.layer_norm(x, w["end_logits/LayerNorm/gamma"], w["end_logits/LayerNorm/beta"])
    end_logits = (x @ w["end_logits/dense_1/kernel"])[..., 0] + w["end_logits/dense_1/bias"][0]
    end_logits = end_logits * (1 - p_mask) - 1e30 * p_mask
    start_p = np.exp(log_softmax(start_logits))
    feature = np.concatenate([np.einsum("bl,blh->bh", start_p, seq), seq[:, 0]], -1)
    hidden = np.tanh(feature @ w["answer_class/dense_0/kernel"] + w["answer_class/dense_0/bias"])
    return {"start_log_probs": log_softmax(start_logits), "end_log_probs": log_softmax(end_logits),
            "cls_logits": (hidden @ w["answer_class/dense_1/kernel"])[:, 0]}


def default_p_mask(inputs):
    """1 except on `[CLS]` and the context words (segment 1, before the last `[SEP]`)."""
    mask, segments = inputs["input_mask"], inputs["segment_ids"]
    positions = np.arange(SEQ)[None]
    last = mask.sum(1, keepdims=True) - 1
    return 1.0 - (((segments == 1) & (mask == 1) & (positions < last)) | (positions == 0))


def numpy_outputs(task, weights, inputs):
    """The float outputs of the original's model of `task` on `inputs` (float64)."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    if task == "race":
        flat = {k: v.reshape(-1, SEQ) for k, v in inputs.items()}
        pooled = ref.albert_forward(w, CONFIG, flat["input_ids"], flat["input_mask"], flat["segment_ids"])
        scores = pooled["pooled_output"] @ w["output_weights"].T + w["output_bias"]
        return {"logits": scores.reshape(-1, 4)}
    forward = ref.albert_forward(w, CONFIG, inputs["input_ids"], inputs["input_mask"], inputs["segment_ids"])
    seq, pooled = forward["sequence_output"], forward["pooled_output"]
    if task == "glue":
        return {"logits": pooled @ w["output_weights"].T + w["output_bias"]}
    if task == "squad_v1":
        span = seq @ w["cls/squad/output_weights"].T + w["cls/squad/output_bias"]
        return {"start_logits": span[..., 0], "end_logits": span[..., 1]}
    if task == "squad_v2":
        return squad_v2_outputs(w, seq, default_p_mask(inputs))
    if task == "ner":
        return {"logits": seq @ w["token_classification/output_weights"].T + w["token_classification/output_bias"]}
    mlm, sop = ref.pretraining_heads(w, CONFIG, seq, pooled, inputs["masked_lm_positions"])
    return {"mlm_logits": mlm, "sop_logits": sop}


def decisions(task, outputs):
    """`{name: probabilities [..., classes]}` of each decision of `task`'s outputs (the last axis decides)."""
    softmax = lambda x: np.exp(log_softmax(x))   # noqa: E731
    if task == "squad_v2":
        cls = 1 / (1 + np.exp(-outputs["cls_logits"]))
        return {"start": np.exp(outputs["start_log_probs"]), "end": np.exp(outputs["end_log_probs"]),
                "answer_class": np.stack([1 - cls, cls], -1)}
    if task == "squad_v1":
        return {"start": softmax(outputs["start_logits"]), "end": softmax(outputs["end_logits"])}
    if task == "pretraining":
        return {"mlm": softmax(outputs["mlm_logits"]), "sop": softmax(outputs["sop_logits"])}
    return {"label": softmax(outputs["logits"])}


def held_out_accuracy(task, outputs, y, inputs):
    """The fraction of the held-out decisions that are right."""
    found = {name: p.argmax(-1) for name, p in decisions(task, outputs).items()}
    if task == "glue" or task == "race":
        right = [found["label"] == y]
    elif task == "ner":
        right = [(found["label"] == y)[y >= 0]]
    elif task == "pretraining":
        right = [found["mlm"] == y["masked_lm_ids"], found["sop"] == y["next_sentence_labels"]]
    else:
        right = [found["start"] == y["start_positions"], found["end"] == y["end_positions"]]
        if task == "squad_v2":
            answerable = y["is_impossible"] == 0
            right = [r[answerable] for r in right] + [found["answer_class"] == y["is_impossible"]]
    return float(np.mean(np.concatenate([np.ravel(r) for r in right])))


def smallest_margin(task, outputs, inputs):
    """The smallest gap between the top two probabilities of the held-out decisions (NER: the words only, not
    `[CLS]`, `[SEP]` or padding, which carry no tag)."""
    margins = []
    for name, p in decisions(task, outputs).items():
        top2 = np.sort(p, -1)[..., -2:]
        gap = top2[..., 1] - top2[..., 0]
        if task == "ner":
            gap = gap[inputs["input_ids"] >= FIRST_WORD]
        margins.append(float(gap.min()))
    return min(margins)


# --- the goldens ----------------------------------------------------------------------------------------------

def check_albert_tf(task, model, inputs, want):
    """albert_tf's float outputs (TensorFlow) against the NumPy ones, to ATOL (probabilities where masked
    log-probabilities reach -1e30)."""
    got = {k: np.asarray(v) for k, v in model(inputs, training=False).items()}
    if task != "squad_v2":
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, atol=ATOL, err_msg=f"{task} {name}")
        return
    np.testing.assert_allclose(np.exp(got["start_log_probs"]), np.exp(want["start_log_probs"]), atol=ATOL)
    np.testing.assert_array_equal(got["start_top_index"][:, 0], want["start_log_probs"].argmax(-1))
    ends = np.sort(want["end_log_probs"], -1)[:, ::-1][:, :model.end_n_top]
    np.testing.assert_allclose(np.exp(got["end_top_log_probs"][:, :model.end_n_top]), np.exp(ends), atol=ATOL)
    np.testing.assert_allclose(got["cls_logits"], want["cls_logits"], atol=ATOL)


def golden(task, seed):
    """`{key: array}` of `task`'s part of the file (see the module docstring)."""
    from original_checkpoints import original_tensors

    model = fine_tune(task, seed)
    weights = {name: np.asarray(value, np.float32) for name, value in original_tensors(model)}
    inputs, targets = data(task, np.random.default_rng(1000 + seed), NUM_HELD_OUT)
    outputs = numpy_outputs(task, weights, inputs)
    check_albert_tf(task, model, inputs, outputs)
    accuracy, margin = held_out_accuracy(task, outputs, targets, inputs), smallest_margin(task, outputs, inputs)
    print(f"{task}: held-out accuracy {accuracy:.3f}, smallest margin {margin:.3f}")
    if margin < MIN_MARGIN:
        raise SystemExit(f"{task}: a held-out decision is not clear (margin {margin:.4f} < {MIN_MARGIN}): "
                         "train longer or change the task.")
    part = {f"{task}/weights/{name}": value for name, value in weights.items()}
    part.update((f"{task}/inputs/{name}", value.astype(np.int32)) for name, value in inputs.items())
    part.update((f"{task}/outputs/{name}", value.astype(np.float32)) for name, value in outputs.items())
    return part


def main():
    import tensorflow as tf

    tf.config.experimental.enable_op_determinism()
    stored = {"config": np.array(json.dumps(CONFIG, sort_keys=True))}
    for seed, task in enumerate(TASKS):
        stored.update(golden(task, seed))
    temporary = OUT + ".tmp.npz"
    np.savez_compressed(temporary, **stored)
    os.replace(temporary, OUT)
    print(f"Wrote {OUT} ({os.path.getsize(OUT)} bytes).")


if __name__ == "__main__":
    main()
