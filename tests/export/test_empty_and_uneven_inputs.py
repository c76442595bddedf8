"""Empty and uneven inputs say what they are: `model.predict` on no texts or on a dataset without elements, a
`serve_text` request without rows or with inputs of different lengths, and `pipeline(..., max_seq_length=0)` are
one clear line each (not a dtype, an `UnboundLocalError` or a ragged-op assertion), and the model answers the
next call as before."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the ops of `serve_text`)

from albert_tf import AlbertClassifier, AlbertPreprocessor
from albert_tf.errors import InputError
from albert_tf.export import saved_model as export
from albert_tf.export.session_model import SessionModel
from albert_tf.pipelines import KerasRunner
from albert_tf.tasks.glue.pipeline import TextClassificationPipeline
from albert_tf.text import tokenization
import squad_fixtures as fx


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("empty_inputs")
    spm_file, config, _ = fx.model_files(root)
    keras.utils.set_random_seed(2)
    model = AlbertClassifier(config, num_labels=2, preprocessor=AlbertPreprocessor(spm_file, max_seq_length=32))
    return root, spm_file, config, model


def test_predict_on_nothing_is_one_line_and_the_model_answers_after(env):
    _, _, _, model = env
    before = model.predict(["a tower ."], verbose=0)["probabilities"]
    empty_dataset = tf.data.Dataset.from_tensor_slices(["a"]).take(0).batch(2)
    filtered = tf.data.Dataset.from_tensor_slices(["a", "b"]).filter(lambda text: False).batch(2)
    for x, message in (([], "`x` holds no examples"), (np.array([], dtype=str), "`x` holds no examples"),
                       (([], []), "`x` holds no examples"),
                       (empty_dataset, "`x` is a dataset without elements"),
                       (filtered, "`x` yielded no batch")):
        with pytest.raises(InputError, match=message):
            model.predict(x, verbose=0)
        np.testing.assert_allclose(model.predict(["a tower ."], verbose=0)["probabilities"], before, atol=1e-6)


def test_serve_text_without_rows_or_with_uneven_rows_names_its_inputs(env):
    root, spm_file, _, model = env
    path = export.export_saved_model(model, str(root / "export"), spm_model_file=spm_file, max_seq_length=32,
                                     warmup=False)
    with SessionModel(path) as session:
        with pytest.raises(InputError, match="Input `text_a` of signature `serve_text` holds no rows"):
            session.run("serve_text", text_a=[], text_b=[])
        with pytest.raises(InputError, match="must have one batch size. Received: text_a 2, text_b 1"):
            session.run("serve_text", text_a=["a", "b"], text_b=[""])
    signature = tf.saved_model.load(path).signatures["serve_text"]
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="serve_text: `text_b` and `text_a` must have one row per example"):
        signature(text_a=tf.constant(["a tower .", "a lake ."]), text_b=tf.constant([""]))
    assert signature(text_a=tf.constant(["a tower ."]), text_b=tf.constant([""]))["probabilities"].shape == (1, 2)


@pytest.mark.parametrize("length", [0, 1, -5, 2.5])
def test_a_pipeline_length_below_three_is_refused(env, length):
    _, spm_file, _, model = env
    tokenizer = tokenization.FullTokenizer(spm_model_file=spm_file, do_lower_case=True)
    with pytest.raises(InputError, match=r"`max_seq_length` must be an int >= 3 .* Received: `max_seq_length="):
        TextClassificationPipeline(KerasRunner(model), tokenizer, True, max_seq_length=length)
