"""Every registered model kind through the harness (`tests/harness.py`): build, call, one training step and the
config round trip (fast tier); the TF1-name checkpoint round trip (fast tier, in process); the `.keras` file and
the SavedModel, each reloaded in a fresh process (`e2e`).

A kind registered without a case here fails `test_every_registered_kind_has_a_case`: a new head gets the same
checks by adding one `Case`.
"""

import dataclasses

import numpy as np
import pytest

from albert_tf import registry
import harness
from harness import BATCH, SEQ, TINY_CONFIG, masked_lm_inputs, token_inputs

H, E, V, L = TINY_CONFIG.hidden_size, TINY_CONFIG.embedding_size, TINY_CONFIG.vocab_size, TINY_CONFIG.num_hidden_layers
ENCODER_SHAPES = {"sequence_output": (BATCH, SEQ, H), "pooled_output": (BATCH, H),
                  "embedding_output": (BATCH, SEQ, E), "encoder_outputs": [(BATCH, SEQ, H)] * L}
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@dataclasses.dataclass
class Case:
    """What `harness.run_task_test` takes for one kind (the class comes from the registry)."""

    init_kwargs: dict
    inputs: dict
    labels: object
    shapes: dict
    train_inputs: dict = None
    loss: object = None
    dropout: bool = False
    unchanged: tuple = ()


def _token_labels(inputs, num_labels, seed=4):
    labels = np.random.default_rng(seed).integers(0, num_labels, size=inputs["input_ids"].shape)
    labels[:, 0] = -100                                   # [CLS]
    labels[inputs["input_mask"] == 0] = -100              # padding
    return labels.astype(np.int32)


def _cases():
    tokens = token_inputs()
    squad_train = dict(tokens, start_positions=np.array([4, 0], np.int32))
    return {
        "encoder": Case({}, tokens, {"pooled_output": np.random.default_rng(3).normal(size=(BATCH, H))},
                        ENCODER_SHAPES, loss={"pooled_output": "mse"}),
        "pretrainer": Case(
            {}, masked_lm_inputs(predictions=3),
            {"masked_lm_ids": np.array([[7, 8, 9], [10, 11, 12]], np.int32),
             "masked_lm_weights": np.array([[1, 1, 1], [1, 1, 0]], np.float32),
             "next_sentence_labels": np.array([0, 1], np.int32)},
            dict(ENCODER_SHAPES, mlm_logits=(BATCH, 3, V), sop_logits=(BATCH, 2))),
        "classifier": Case({"num_labels": 3, "dropout_rate": 0.2}, tokens, np.array([0, 2], np.int32),
                           {"logits": (BATCH, 3), "probabilities": (BATCH, 3), "predictions": (BATCH,)},
                           dropout=True),
        "squad_v1": Case({}, tokens, {"start_positions": np.array([4, 0]), "end_positions": np.array([5, 0])},
                         dict(ENCODER_SHAPES, start_logits=(BATCH, SEQ), end_logits=(BATCH, SEQ)),
                         unchanged=("pooler",)),
        "squad_v2": Case(
            {"start_n_top": 3, "end_n_top": 2, "dropout_prob": 0.2}, tokens,
            {"start_positions": np.array([4, 0]), "end_positions": np.array([5, 0]),
             "is_impossible": np.array([0, 1])},
            dict(ENCODER_SHAPES, start_log_probs=(BATCH, SEQ), start_top_log_probs=(BATCH, 3),
                 start_top_index=(BATCH, 3), end_top_log_probs=(BATCH, 6), end_top_index=(BATCH, 6),
                 cls_logits=(BATCH,)),
            # The start bias, and the end LayerNorm's beta and bias, add one number to every start (end) logit of
            # a softmax: no gradient.
            train_inputs=squad_train, dropout=True,
            unchanged=("pooler", "start_logits_dense/bias", "end_logits_LayerNorm/beta", "end_logits_dense_1/bias")),
        "race": Case({"dropout_prob": 0.2}, token_inputs(choices=4), np.array([1, 3], np.int32),
                     {"logits": (BATCH, 4), "probabilities": (BATCH, 4), "predictions": (BATCH,)}, dropout=True,
                     unchanged=("race_head/output_bias",)),   # one bias for the four choices of a softmax
        "token_classifier": Case(
            {"num_labels": 5, "labels": TAGS, "dropout_rate": 0.2}, tokens, _token_labels(tokens, 5),
            {"logits": (BATCH, SEQ, 5), "probabilities": (BATCH, SEQ, 5), "predictions": (BATCH, SEQ)},
            dropout=True, unchanged=("pooler",)),
    }


CASES = _cases()
KINDS = sorted(CASES, key=lambda name: registry.get(name).order)


def test_every_registered_kind_has_a_case():
    # The package's kinds (a kind a test registers for itself is defined outside `albert_tf`).
    ours = [kind.name for kind in registry.kinds() if kind.model_class.__module__.startswith("albert_tf.")]
    assert sorted(ours) == sorted(CASES)


@pytest.mark.parametrize("kind", KINDS)
def test_task(kind):
    case = CASES[kind]
    harness.run_task_test(registry.get(kind).model_class, case.init_kwargs, case.inputs, case.labels, case.shapes,
                          train_inputs=case.train_inputs, loss=case.loss, dropout=case.dropout,
                          unchanged=case.unchanged)


@pytest.mark.parametrize("kind", KINDS)
def test_convert(kind, tmp_path):
    case = CASES[kind]
    harness.run_convert_test(registry.get(kind).model_class, case.init_kwargs, case.inputs, str(tmp_path),
                             registry.get(kind).tf1_names)


@pytest.mark.e2e
@pytest.mark.parametrize("kind", KINDS)
def test_saving(kind, tmp_path):
    case = CASES[kind]
    harness.run_saving_test(registry.get(kind).model_class, case.init_kwargs, case.inputs, str(tmp_path))


@pytest.mark.e2e
@pytest.mark.parametrize("kind", KINDS)
def test_export(kind, tmp_path):
    case = CASES[kind]
    harness.run_export_test(registry.get(kind).model_class, case.init_kwargs, case.inputs, str(tmp_path))
