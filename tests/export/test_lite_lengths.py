"""LiteRT exports with resizable inputs (`albert_tf.export.lite`, `dynamic_shapes`, the default of `albert-export
--format=tflite`): every model kind runs at any batch size and length up to the export's, equal to the Keras
model at that shape; the pipeline runs each batch at its own length, equal to the fixed-shape export's answers;
the interpreter's threads (default: every core of the process's affinity) and the options' checks.

References: the Keras model of the same weights at the same shape (float export: 1e-4), and the fixed-shape export
of the same model (the answers a batch padded to `max_seq_length` gives).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints import save_tf1_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError
from albert_tf.export import lite
from albert_tf.models.albert_model import AlbertModel
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.text import vocab as vocab_lib

TINY = dict(embedding_size=16, hidden_size=32, num_hidden_groups=1, num_attention_heads=2, intermediate_size=64,
            inner_group_num=1, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            max_position_embeddings=64, type_vocab_size=2)
T = 32   # the export's max_seq_length
KINDS = {"encoder": lambda c: AlbertModel(c), "pretrainer": lambda c: AlbertPretrainer(c),
         "classifier": lambda c: AlbertClassifier(c, num_labels=3), "squad_v1": lambda c: AlbertSquadV1(c),
         "squad_v2": lambda c: AlbertSquadV2(c), "race": lambda c: AlbertRace(c)}


def _config(vocab_size=300):
    return AlbertConfig(vocab_size=vocab_size, num_hidden_layers=2, **TINY)


def _batch(model, batch, length, seed):
    """Random features of `model`'s serving inputs at `[batch, ..., length]`, rows of real lengths 3..length."""
    rng = np.random.default_rng(seed)
    shapes = lite.input_shapes(model, batch, length, max_predictions_per_seq=5)
    real = rng.integers(3, length + 1, [batch])
    out = {}
    for name, shape in shapes.items():
        positions = np.arange(length)
        reals = real.reshape([batch] + [1] * (len(shape) - 1))
        if name == "input_ids":
            out[name] = rng.integers(5, 300, shape)
        elif name == "input_mask":
            out[name] = np.broadcast_to(positions < reals, shape)
        elif name == "segment_ids":
            out[name] = np.broadcast_to(positions >= reals // 2, shape) * (positions < reals)
        elif name == "p_mask":
            out[name] = np.broadcast_to(positions >= reals // 2, shape)
        else:   # the pretrainer's mlm_positions
            out[name] = rng.integers(0, 3, shape)
    return {name: np.ascontiguousarray(value, np.int32) for name, value in out.items()}


def _keras(model, features):
    names = {"mlm_positions": "masked_lm_positions"}
    out = model({names.get(k, k): tf.constant(v) for k, v in features.items()}, training=False)
    if "sop_logits" in out:
        out = dict(out, sop_log_probs=tf.nn.log_softmax(out["sop_logits"], -1))
    return {k: v.numpy() for k, v in out.items() if not isinstance(v, (list, tuple))}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_runs_at_any_batch_and_length(kind):
    tf.keras.utils.set_random_seed(11)
    model = KINDS[kind](_config())
    runner = lite.LiteModel(lite.convert(model, T, batch_size=4, max_predictions_per_seq=5, dynamic_shapes=True))
    assert runner.dynamic_shapes and runner.input_specs["input_ids"].shape[0] is None
    assert runner.input_specs["input_ids"].shape[-1] is None
    for batch, length in ((3, 9), (5, T), (1, 17)):   # resized up, up again, then down
        features = _batch(model, batch, length, seed=batch)
        got, want = runner(features), _keras(model, features)
        assert set(got) <= set(want)
        for name, value in got.items():
            assert value.shape == want[name].shape, (name, batch, length)
            if value.dtype.kind == "f":
                np.testing.assert_allclose(value, want[name], atol=1e-4, err_msg=f"{name} {batch}x{length}")
            else:
                np.testing.assert_array_equal(value, want[name], err_msg=f"{name} {batch}x{length}")


def test_dynamic_int8_at_its_own_length_matches_the_fixed_export():
    """Dynamic-range int8 quantizes each row's activations on the fly: a row gives the same probabilities padded
    to the fixed length or cut to its batch's longest (the attention mask hides the padding)."""
    tf.keras.utils.set_random_seed(12)
    model = AlbertClassifier(_config(), num_labels=2)
    fixed = lite.LiteModel(lite.convert(model, T, 4, "dynamic"))
    resizable = lite.LiteModel(lite.convert(model, T, 4, "dynamic", dynamic_shapes=True))
    features = _batch(model, 6, 12, seed=3)
    padded = {k: np.pad(v, [(0, 0), (0, T - 12)]) for k, v in features.items()}
    np.testing.assert_allclose(resizable(features)["probabilities"], fixed(padded)["probabilities"], atol=2e-3)


def test_threads_default_to_the_process_cores_and_are_checked():
    tf.keras.utils.set_random_seed(13)
    flatbuffer = lite.convert(AlbertModel(_config()), T, dynamic_shapes=True)
    assert lite.LiteModel(flatbuffer).num_threads == len(os.sched_getaffinity(0))
    assert lite.LiteModel(flatbuffer, num_threads=1).num_threads == 1
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(InputError, match="`num_threads` must be a positive int"):
            lite.LiteModel(flatbuffer, num_threads=bad)


@pytest.fixture(scope="module")
def classifier_exports(tmp_path_factory):
    """A tiny classifier's release directory (TF1 checkpoint, config, SentencePiece model) and its dynamic-range
    int8 LiteRT exports, resizable and fixed."""
    root = tmp_path_factory.mktemp("lite_lengths")
    corpus = root / "corpus.txt"
    words = ["amazon", "nile", "rhine", "danube", "river", "sea", "flows", "mountain", "city", "lake"]
    corpus.write_text("\n".join(" ".join(words[(i * k) % len(words)] for k in range(1, 4 + i % 9))
                                for i in range(200)))
    vocab_lib.train_sentencepiece([str(corpus)], str(root / "sp"), vocab_size=60, hard_vocab_limit=False)
    import sentencepiece as spm
    vocab_size = spm.SentencePieceProcessor(model_file=str(root / "sp.model")).get_piece_size()
    tf.keras.utils.set_random_seed(14)
    model = AlbertClassifier(_config(vocab_size), num_labels=2)
    release = root / "release"
    release.mkdir()
    model({"input_ids": tf.ones([1, 8], tf.int32), "input_mask": tf.ones([1, 8], tf.int32),
           "segment_ids": tf.zeros([1, 8], tf.int32)}, training=False)
    save_tf1_checkpoint(model, str(release / "model.ckpt-1"))
    model.config.to_json_file(str(release / "albert_config.json"))
    (release / "30k-clean.model").write_bytes((root / "sp.model").read_bytes())
    exports = {}
    for name, dynamic in (("resizable", True), ("fixed", False)):
        exports[name] = lite.export_tflite(model, str(root / name), spm_model_file=str(root / "sp.model"),
                                           max_seq_length=T, batch_size=4, quantize="dynamic", dynamic_shapes=dynamic)
    texts = [" ".join(words[(i + k) % len(words)] for k in range(1 + (7 * i) % 20)) for i in range(11)]
    return {"release": str(release), "texts": texts, **exports}


def test_pipeline_runs_each_batch_at_its_own_length(classifier_exports):
    pipe = albert_tf.pipeline("text-classification", classifier_exports["resizable"], progress=False)
    assert pipe.runner.dynamic_lengths and pipe.batch_size == 4   # the export's batch_size
    assert pipe.runner.model.num_threads == len(os.sched_getaffinity(0))
    shapes = []
    run = pipe.runner.model.runner

    def recording(**features):
        shapes.append(features["input_ids"].shape)
        return run(**features)

    pipe.runner.model.runner = recording
    got = pipe(classifier_exports["texts"])
    rows, _ = pipe._encode([pipe._check(t, i) for i, t in enumerate(classifier_exports["texts"])])
    real = sorted(int(np.sum(row["input_mask"])) for row in rows)
    # Sorted by length, 4 rows a batch, each cut to its longest row exactly.
    assert sorted(shapes) == sorted((len(real[i:i + 4]), max(real[i:i + 4])) for i in range(0, len(real), 4))
    want = albert_tf.pipeline("text-classification", classifier_exports["fixed"], progress=False)(
        classifier_exports["texts"])
    assert [g["label"] for g in got] == [w["label"] for w in want]
    np.testing.assert_allclose([g["scores"] for g in got], [w["scores"] for w in want], atol=2e-3)
    # A larger batch runs in sorted runs of at most `rows_per_run` (8) rows, each cut to its own longest row.
    wide = albert_tf.pipeline("text-classification", classifier_exports["resizable"], batch_size=32, progress=False)
    shapes.clear()
    wide.runner.model.runner = recording
    np.testing.assert_allclose([g["scores"] for g in wide(classifier_exports["texts"])],
                               [g["scores"] for g in got], atol=2e-3)
    assert sorted(shapes) == sorted((len(real[i:i + 8]), max(real[i:i + 8])) for i in range(0, len(real), 8))
    short = albert_tf.pipeline("text-classification", classifier_exports["resizable"], max_seq_length=16,
                               batch_size=3, num_threads=1, progress=False)
    assert short.runner.model.num_threads == 1 and short.batch_size == 3
    assert len(short(classifier_exports["texts"])) == len(classifier_exports["texts"])


def test_export_metadata_and_option_errors(classifier_exports):
    meta = json.loads(open(os.path.join(os.path.dirname(classifier_exports["resizable"]), lite.METADATA_FILE)).read())
    assert meta["dynamic_shapes"] is True and meta["inputs"]["input_ids"] == [None, None]
    assert meta["batch_size"] == 4 and meta["max_seq_length"] == T
    fixed = json.loads(open(os.path.join(os.path.dirname(classifier_exports["fixed"]), lite.METADATA_FILE)).read())
    assert fixed["dynamic_shapes"] is False and fixed["inputs"]["input_ids"] == [4, T]
    with pytest.raises(InputError, match="`num_threads` must be a positive int"):
        albert_tf.pipeline("text-classification", classifier_exports["resizable"], num_threads=0)
    with pytest.raises(InputError, match="`num_threads` applies to a LiteRT export"):
        albert_tf.pipeline("text-classification", classifier_exports["release"], num_threads=2)
