"""`albert-convert` of the original's fine-tuned MNLI `model.ckpt-best`, which holds the classifier's
`output_weights`/`output_bias` (3 labels) and also the pretraining heads of its initial checkpoint
(`cls/predictions`, `cls/seq_relationship`): the fine-tuned head is kept with its label count, under `auto`
and under `--model=classifier` (issue 67)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertClassifier, AlbertPretrainer
from albert_tf.checkpoints.convert import convert
from harness import TINY_CONFIG, token_inputs
from original_checkpoints import original_tensors


@pytest.fixture(scope="module")
def mnli_best(tmp_path_factory):
    root = tmp_path_factory.mktemp("mnli")
    tf.keras.utils.set_random_seed(3)
    pretrainer, classifier = AlbertPretrainer(TINY_CONFIG), AlbertClassifier(TINY_CONFIG, num_labels=3)
    inputs = token_inputs()
    classifier(inputs, training=False)
    pretrainer(dict(inputs, masked_lm_positions=np.zeros([2, 3], np.int32)), training=False)
    tensors = dict(original_tensors(pretrainer))
    tensors.update(original_tensors(classifier))   # the fine-tuned encoder and its 3-label head
    names = sorted(tensors)
    prefix = str(root / "model.ckpt-best")
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tensors[n] for n in names])
    TINY_CONFIG.to_json_file(str(root / "albert_config.json"))
    return prefix, classifier(inputs, training=False)["logits"].numpy()


@pytest.mark.parametrize("model", ["auto", "classifier"])
def test_the_fine_tuned_head_is_kept_with_its_label_count(mnli_best, tmp_path, model):
    prefix, want = mnli_best
    out = str(tmp_path / "out")
    result = convert(prefix, out, output_format="keras", model=model)
    assert result["model"] == "AlbertClassifier"
    loaded = AlbertClassifier(TINY_CONFIG, num_labels=3)
    loaded(token_inputs(), training=False)
    loaded.load_weights(os.path.join(out, "model.weights.h5"))
    np.testing.assert_allclose(loaded(token_inputs(), training=False)["logits"].numpy(), want, atol=1e-5)
