"""`enable_lora` (`--lora_rank`) with a rank above the hidden size is refused in one line (issue 67): its
adapters would hold more weights than the kernels they adapt."""

import numpy as np
import pytest

import albert_tf
from albert_tf.errors import InputError
from training_fixtures import TINY_CLASSIFIER


def test_a_rank_above_the_hidden_size_is_refused():
    hidden = TINY_CLASSIFIER["hidden_size"]
    model = albert_tf.AlbertClassifier(albert_tf.AlbertConfig.from_dict(TINY_CLASSIFIER), num_labels=2)
    with pytest.raises(InputError) as e:
        model.enable_lora(hidden + 1)
    message = str(e.value)
    assert "\n" not in message and f"({hidden + 1}) is larger than the hidden size ({hidden})" in message, message
    model.enable_lora(hidden)   # a rank up to the hidden size is taken
    ids = np.ones([1, 8], np.int32)
    model({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids}, training=False)
