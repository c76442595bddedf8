"""What the Python API promises: labels checked before tracing, `.keras` reload after `import albert_tf`,
`pipeline` lengths from the export, and the question-length warning."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from albert_tf import AlbertClassifier, AlbertPreprocessor, AlbertTokenClassifier
from albert_tf.errors import InputError
from test_glue import model_files  # noqa: F401  (a fixture)


def test_labels_outside_the_range_are_refused_before_tracing(model_files):  # noqa: F811
    """Issue row: `AlbertClassifier.fit` on strings with a label of 5 for `num_labels=3` names the value and its
    index at once, where Keras fails inside the traced loss."""
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=16)
    model = AlbertClassifier(model_files["config"], num_labels=3, preprocessor=pre)
    model.compile()
    texts = ["a good film .", "a bad film .", "it was fine ."]
    with pytest.raises(InputError, match=r"^`y\[1\]` is 5: labels must be integers in \[0, 3\) for "
                                         r"`num_labels=3`\.$"):
        model.fit(texts, np.array([0, 5, 2]), epochs=1, verbose=0)
    with pytest.raises(InputError, match=r"`y\[0\]` is -1"):
        model.evaluate(texts, [-1, 0, 1], verbose=0)
    with pytest.raises(InputError, match=r"`validation_data y\[2\]` is 3"):
        model.fit(texts, [0, 1, 2], validation_data=(texts, [0, 1, 3]), epochs=1, verbose=0)
    with pytest.raises(InputError, match=r"`y\[0\]` is 0.5"):
        model.fit(texts, [0.5, 1.0, 2.0], epochs=1, verbose=0)
    tagger = AlbertTokenClassifier(model_files["config"], num_labels=3)
    tagger.check_labels(np.array([[0, -100, 2]]))   # the ignored id passes
    with pytest.raises(InputError, match=r"`y\[0, 2\]` is 3: .*\(or -100, ignored\)"):
        tagger.check_labels(np.array([[0, -100, 3]]))
