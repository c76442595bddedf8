"""`serve_text` cuts each batch to its longest text (rounded up to a multiple of 8), in TF Serving's session
loader: the outputs equal `serving_default`'s on the same ids padded to the export's `max_seq_length` (1e-5), and
`serving_default` takes any length up to the maximum."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the ops of `serve_text`)

from albert_tf.config import TOKEN_INPUTS
from albert_tf.text import ops as text_ops

from albert_tf.export import saved_model as export
from albert_tf.export.session_model import SessionModel
from albert_tf.models.albert_model import AlbertModel
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.squad.model import AlbertSquadV1
import squad_fixtures as fx

MAX = 64   # the fixture config's max_position_embeddings

SHORT = ["the tower was built in 1889 .", "a city by the lake ."]
LONG = [" ".join(["the river discharges water into the ocean and its basin covers nine countries ."] * 5)]
KINDS = {"classifier": lambda c: AlbertClassifier(c, num_labels=3), "encoder": AlbertModel, "squad_v1": AlbertSquadV1}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve_text_lengths")
    spm_file, config, _ = fx.model_files(root)
    paths, specs = {}, {}
    for kind, build in KINDS.items():
        keras.utils.set_random_seed(1)
        model = build(config)
        specs[kind] = export.serving_spec(model)
        paths[kind] = export.export_saved_model(model, str(root / kind), spm_model_file=spm_file,
                                                max_seq_length=MAX, warmup=False, max_query_length=8)
    with open(spm_file, "rb") as f:
        pipeline = text_ops.TextPipeline(f.read(), True, MAX, config.vocab_size, max_query_length=8)
    return paths, specs, pipeline


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_serve_text_runs_at_the_longest_text_and_equals_the_padded_ids(exports, kind):
    paths, specs, pipeline = exports
    session = SessionModel(paths[kind])
    for texts in (SHORT, SHORT + LONG):
        feed = ({"question": ["what ?"] * len(texts), "context": texts} if kind == "squad_v1"
                else {"text_a": texts, "text_b": [""] * len(texts)})
        got = session.run("serve_text", **feed)
        # The same packing at the maximum length, through serving_default.
        packed = specs[kind].text_features(pipeline, {name: tf.constant(value) for name, value in feed.items()})
        tokens = {name: packed[name].numpy() for name in TOKEN_INPUTS}
        longest = int(tokens["input_mask"].any(0).nonzero()[0].max()) + 1
        length = min(-(-longest // 8) * 8, MAX)        # the next multiple of 8, at most the export's length
        assert (length < 32) == (texts is SHORT)
        assert got["input_ids"].shape == (len(texts), length)
        np.testing.assert_array_equal(got["input_ids"], tokens["input_ids"][:, :length])
        assert not tokens["input_mask"][:, length:].any()
        full = session.run("serving_default", **tokens)
        short = session.run("serving_default", **{name: value[:, :length] for name, value in tokens.items()})
        mask = tokens["input_mask"][:, :length].astype(bool)
        for name, value in full.items():
            cut = value[:, :length] if value.ndim > 1 and value.shape[1] == MAX else value
            np.testing.assert_allclose(short[name], cut, atol=1e-5, rtol=0, err_msg=name)
            keep = mask if cut.ndim > 1 and cut.shape[1] == length else slice(None)
            np.testing.assert_allclose(got[name][keep], cut[keep], atol=1e-5, rtol=0, err_msg=name)
