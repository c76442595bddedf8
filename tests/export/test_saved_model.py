"""SavedModel export: every model kind, every signature, reloaded in a fresh process.

The parent process builds tiny models, exports them, and computes the expected outputs with the Keras models on
features made by the Python data pipeline (`albert_tf.text.tokenization` + `albert_tf.tasks.glue.data/squad/race`), which
is independent of the in-graph text ops. One subprocess (`import tensorflow_text`, nothing from `albert_tf`)
loads every export with `tf.saved_model.load`, calls every signature and bad inputs, and writes what it got.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf.export import saved_model as export
from albert_tf.text import ops as text_ops
from albert_tf.text import packing
from albert_tf.checkpoints import save_tf1_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.data import features as features_lib
from albert_tf.tasks.glue import data as glue
from albert_tf.tasks.race import data as race
from albert_tf.tasks.squad import data as squad
from albert_tf.models.albert_model import AlbertModel
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.text.tokenization import FullTokenizer, encode_pieces, preprocess_text

MAX_SEQ = 16
VOCAB_SIZE = 90
MAX_PRED = 4
MAX_QUERY = 5
MAX_QA = 6
ATOL = 1e-5

WORDS = ("the cat sat on a mat while the dog ran to the river near an old house . in 1990, 2000, and 2010, "
         "people of the city built red blue green bridges ; what did they see ? Zürich café naïve résumé "
         "question answer article option true false").split()

# text_a / text_b pairs: short, long (truncation), ties, empty text_b, whitespace, case, accents, digits.
PAIRS = [
    ("The cat sat on the mat.", ""),
    ("  the   DOG\tran to the\nriver  ", "what did they see ?"),
    ("in 1990, 2000, and 2010, people of the city built red blue green bridges near an old house",
     "the cat"),
    ("a cat", "in 1990, 2000, and 2010, people of the city built red blue green bridges near an old house"),
    ("the dog ran to the river near an old house", "people of the city built red blue green bridges"),
    ("Zürich café naïve résumé", "   "),
    ("", "the cat sat"),
]
MASKED_PAIRS = [
    ("the cat [MASK] on the mat", ""),
    ("[mask] dog ran to the [MASK]", "what did they [MASK] ?"),
    ("no mask here at all", "the river near an old house"),
]
SQUAD_QA = [
    ("What did the cat see?", "The cat sat on the mat. The dog ran to the river near an old house."),
    ("who built red blue green bridges in the city in 1990, 2000, and 2010?",
     "In 1990, 2000, and 2010, people of the city built red blue green bridges."),
    ("Zürich?", "Café naïve résumé."),
]
RACE_ITEMS = [
    ("The cat sat on the mat. The dog ran to the river near an old house.", "what did the _ see ?",
     ["cat", "dog", "the old house near the river", "bridges"]),
    ("People of the city built red blue green bridges in 1990, 2000, and 2010, near the river.",
     "what is true about the city", ["red", "the people built bridges near the river in 2010", "café", ""]),
]

# The tensorflow-text ops `serve_text` may use (docs/serving.md lists them for model-server builds).
TEXT_OPS = {"SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceIdToStringOp", "SentencepieceStringToIdOp",
            "NormalizeUTF8"}

KINDS = ("encoder", "pretrainer", "classifier", "squad_v1", "squad_v2", "race")


def _train_spm(directory):
    from albert_tf.text.vocab import train_sentencepiece

    rng = np.random.RandomState(0)
    lines = [" ".join(rng.choice(WORDS, size=rng.randint(4, 16))) for _ in range(2000)]
    corpus = os.path.join(directory, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    train_sentencepiece(corpus, os.path.join(directory, "tiny"), vocab_size=VOCAB_SIZE, character_coverage=1.0,
                        minloglevel=2)
    return os.path.join(directory, "tiny.model")


def _config(vocab_size):
    return AlbertConfig(vocab_size=vocab_size, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                        num_hidden_groups=2, num_attention_heads=2, intermediate_size=24,
                        max_position_embeddings=32)


# --- The Python pipeline (reference) -------------------------------------------------------------------


class _MaskAwareTokenizer:
    """`FullTokenizer.tokenize` on preprocessed text, with each literal `[MASK]` kept as the `[MASK]` piece."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def tokenize(self, text):
        pieces = []
        for i, chunk in enumerate(re.split(r"(?i)\[mask\]", text)):
            if i:
                pieces.append("[MASK]")
            pieces.extend(encode_pieces(self.tokenizer.sp_model, preprocess_text(chunk, lower=True)))
        return pieces

    def convert_tokens_to_ids(self, tokens):
        return self.tokenizer.convert_tokens_to_ids(tokens)


def _glue_features(pairs, tokenizer, preprocess=True):
    rows = []
    for i, (a, b) in enumerate(pairs):
        if preprocess:
            a, b = preprocess_text(a, lower=True), preprocess_text(b, lower=True)
        example = glue.InputExample(guid=str(i), text_a=a, text_b=b, label="0")
        f = glue.convert_single_example(10, example, ["0", "1", "2"], MAX_SEQ, tokenizer, "mnli")
        rows.append((f.input_ids, f.input_mask, f.segment_ids))
    return {name: np.array([r[k] for r in rows], np.int32)
            for k, name in enumerate(("input_ids", "input_mask", "segment_ids"))}


def _mlm_positions(input_ids, mask_id, width=None):
    rows = [np.flatnonzero(row == mask_id) for row in input_ids]
    width = max(len(r) for r in rows) if width is None else width
    positions = np.zeros([len(rows), width], np.int32)
    weights = np.zeros([len(rows), width], np.int32)
    for i, r in enumerate(rows):
        positions[i, :len(r)] = r
        weights[i, :len(r)] = 1
    return positions, weights


def _squad_features(tokenizer):
    examples = [squad.SquadExample(qas_id=str(i), question_text=q, paragraph_text=c)
                for i, (q, c) in enumerate(SQUAD_QA)]
    out = []
    squad.convert_examples_to_features(examples, tokenizer, MAX_SEQ, doc_stride=128, max_query_length=MAX_QUERY,
                                       is_training=False, output_fn=out.append, do_lower_case=True)
    first = [next(f for f in out if f.example_index == i) for i in range(len(examples))]
    feats = {name: np.array([getattr(f, name) for f in first], np.int32)
             for name in ("input_ids", "input_mask", "segment_ids", "p_mask")}
    feats["unique_ids"] = np.array([f.unique_id for f in first], np.int64)
    return feats


def _race_features(tokenizer):
    process = race.make_process_text(do_lower_case=True)
    rows = []
    for i, (article, question, options) in enumerate(RACE_ITEMS):
        obj = {"id": str(i), "article": article, "questions": [question], "options": [options], "answers": ["A"]}
        (example,) = race.examples_from_object(obj, "test", "high", process)
        rows.append(race.encode_example(example, tokenizer, MAX_SEQ, MAX_QA)[:3])
    return {name: np.array([r[k] for r in rows], np.int32)
            for k, name in enumerate(("input_ids", "input_mask", "segment_ids"))}


def _serialize(features, kind):
    examples = []
    batch = len(features["input_ids"])
    for i in range(batch):
        feature = {}
        for name in ("input_ids", "input_mask", "segment_ids"):
            feature[name] = features_lib.int64_feature(np.reshape(features[name][i], [-1]))
        if kind == "pretrainer":
            feature["masked_lm_positions"] = features_lib.int64_feature(features["mlm_positions"][i])
        if kind.startswith("squad"):
            feature["unique_ids"] = features_lib.int64_feature([features["unique_ids"][i]])
            feature["p_mask"] = features_lib.int64_feature(features["p_mask"][i])
        examples.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return np.array(examples, dtype=object)


def _keras_outputs(model, kind, features):
    """The serving outputs computed from the Keras model directly."""
    inputs = {name: tf.constant(features[name]) for name in ("input_ids", "input_mask", "segment_ids")}
    if kind == "pretrainer":
        inputs["masked_lm_positions"] = tf.constant(features["mlm_positions"])
    if kind == "squad_v2" and "p_mask" in features:
        inputs["p_mask"] = tf.constant(features["p_mask"])
    out = {name: np.asarray(t) for name, t in model(inputs, training=False).items() if not isinstance(t, list)}
    names = {
        "encoder": ("sequence_output", "pooled_output"),
        "pretrainer": ("sequence_output", "pooled_output", "mlm_logits"),
        "classifier": ("probabilities", "predictions"),
        "squad_v1": ("start_logits", "end_logits"),
        "squad_v2": ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
                     "cls_logits"),
        "race": ("logits", "probabilities", "predictions"),
    }[kind]
    expected = {name: out[name] for name in names}
    if kind == "pretrainer":
        logits = out["sop_logits"].astype(np.float64)
        expected["sop_log_probs"] = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    if kind == "classifier":
        expected["threshold"] = np.full([len(features["input_ids"])], 0.25, np.float32)
    return expected


# --- Fixture: export everything, run one fresh process ----------------------------------------------------

_CHILD = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops the serve_text signatures use)

from tensorflow.core.protobuf import saved_model_pb2

cases = np.load(sys.argv[1], allow_pickle=True)
report = {"signatures": {}, "errors": {}, "non_core_ops": {}, "xla_functions": {}}
got = {}
loaded = {}
for key in cases.files:
    kind, signature, part, name = key.split("/")
    if kind not in loaded:
        path = cases[f"{kind}/-/path/-"].item()
        loaded[kind] = tf.saved_model.load(path)
        report["signatures"][kind] = sorted(loaded[kind].signatures)
        proto = saved_model_pb2.SavedModel()
        with open(path + "/saved_model.pb", "rb") as f:
            proto.ParseFromString(f.read())
        graph = proto.meta_graphs[0].graph_def
        functions = {fn.signature.name for fn in graph.library.function}
        ops = {node.op for node in graph.node}
        ops.update(node.op for fn in graph.library.function for node in fn.node_def)
        report["non_core_ops"][kind] = sorted(op for op in ops - functions if not hasattr(tf.raw_ops, op))
        report["xla_functions"][kind] = sorted(fn.signature.name for fn in graph.library.function
                                               if fn.attr["_XlaMustCompile"].b)
keys = {}
for key in cases.files:
    kind, signature, part, name = key.split("/")
    if part == "in":
        keys.setdefault((kind, signature), []).append(name)
for (kind, signature), names in keys.items():
    fn = loaded[kind].signatures[signature]
    inputs = {}
    for name in names:
        value = cases[f"{kind}/{signature}/in/{name}"]
        inputs[name] = tf.constant(value.tolist() if value.dtype == object else value)
    for name, value in fn(**inputs).items():
        got[f"{kind}/{signature}/got/{name}"] = value.numpy()
info = loaded["encoder"].signatures["tokenization_info"]()
report["tokenization_info"] = {"vocab_file": info["vocab_file"].numpy().decode(),
                               "do_lower_case": bool(info["do_lower_case"].numpy())}

fn = loaded["classifier"].signatures["serving_default"]
ok = {"input_ids": tf.constant([[2, 5, 3]]), "input_mask": tf.constant([[1, 1, 1]]),
      "segment_ids": tf.constant([[0, 0, 0]])}
bad = {
    "float_ids": dict(ok, input_ids=tf.constant([[2.0, 5.0, 3.0]])),
    "rank1_ids": {name: t[0] for name, t in ok.items()},
    "rank3_mask": dict(ok, input_mask=tf.constant([[[1, 1, 1]]])),
    "shape_mismatch": dict(ok, segment_ids=tf.constant([[0, 0]])),
    "id_too_large": dict(ok, input_ids=tf.constant([[2, 1000, 3]])),
}
for case, inputs in bad.items():
    try:
        fn(**inputs)
        report["errors"][case] = None
    except Exception as e:  # the message is what the test checks
        report["errors"][case] = f"{type(e).__name__}: {e}"
for case, call in {
    "text_rank2": lambda: loaded["classifier"].signatures["serve_text"](
        text_a=tf.constant([["a"]]), text_b=tf.constant([["b"]])),
    "examples_int": lambda: loaded["classifier"].signatures["serve_examples"](examples=tf.constant([1])),
    "race_rank2": lambda: loaded["race"].signatures["serving_default"](
        input_ids=tf.constant([[2, 3]]), input_mask=tf.constant([[1, 1]]), segment_ids=tf.constant([[0, 0]])),
}.items():
    try:
        call()
        report["errors"][case] = None
    except Exception as e:
        report["errors"][case] = f"{type(e).__name__}: {e}"
np.savez(sys.argv[2], **got)
with open(sys.argv[3], "w") as f:
    json.dump(report, f)
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    spm_file = _train_spm(str(root))
    tokenizer = FullTokenizer(spm_model_file=spm_file)
    vocab_size = tokenizer.sp_model.GetPieceSize()
    assert vocab_size == VOCAB_SIZE
    mask_id = tokenizer.sp_model.PieceToId("[MASK]")
    keras.utils.set_random_seed(0)
    config = _config(vocab_size)
    models = {
        "encoder": AlbertModel(config),
        "pretrainer": AlbertPretrainer(config),
        "classifier": AlbertClassifier(config, num_labels=3),
        "squad_v1": AlbertSquadV1(config),
        "squad_v2": AlbertSquadV2(config, start_n_top=3, end_n_top=2),
        "race": AlbertRace(config),
    }
    # Non-zero heads so that every output depends on the weights.
    for model in models.values():
        for v in model.variables:
            if "bias" in v.path or "beta" in v.path:
                v.assign(tf.random.normal(v.shape, stddev=0.1, seed=1))

    cases = {}
    paths = {}
    for kind, model in models.items():
        path = export.export_saved_model(
            model, str(root / kind), spm_model_file=spm_file, do_lower_case=True, max_seq_length=MAX_SEQ,
            threshold=0.25 if kind == "classifier" else None, max_predictions_per_seq=MAX_PRED,
            max_query_length=MAX_QUERY, max_qa_length=MAX_QA)
        paths[kind] = path
        cases[f"{kind}/-/path/-"] = np.array(path, dtype=object)

        # Python pipeline features for the raw-text inputs of this kind.
        if kind in ("encoder", "classifier"):
            features = _glue_features(PAIRS, tokenizer)
            texts = {"text_a": [a for a, _ in PAIRS], "text_b": [b for _, b in PAIRS]}
        elif kind == "pretrainer":
            features = _glue_features(MASKED_PAIRS, _MaskAwareTokenizer(tokenizer), preprocess=False)
            features["mlm_positions"], features["mlm_weights"] = _mlm_positions(features["input_ids"], mask_id)
            texts = {"text_a": [a for a, _ in MASKED_PAIRS], "text_b": [b for _, b in MASKED_PAIRS]}
        elif kind.startswith("squad"):
            features = _squad_features(tokenizer)
            texts = {"question": [q for q, _ in SQUAD_QA], "context": [c for _, c in SQUAD_QA]}
        else:
            features = _race_features(tokenizer)
            texts = {"article": [a for a, _, _ in RACE_ITEMS], "question": [q for _, q, _ in RACE_ITEMS],
                     "options": [o for _, _, o in RACE_ITEMS]}

        # serve_text: raw strings -> the Keras outputs on the Python features, and the packed ids.
        expected = _keras_outputs(model, kind, {k: v for k, v in features.items() if k != "p_mask"})
        expected["input_ids"] = features["input_ids"]
        if kind == "pretrainer":
            expected["mlm_positions"] = features["mlm_positions"]
            expected["mlm_weights"] = features["mlm_weights"]
            expected["mlm_predictions"] = expected["mlm_logits"].argmax(-1)
        for name, value in texts.items():
            cases[f"{kind}/serve_text/in/{name}"] = np.array(value, dtype=object)
        for name, value in expected.items():
            cases[f"{kind}/serve_text/out/{name}"] = value

        # serving_default: the int32 features, a shorter padded length than L to exercise dynamic shapes.
        length = MAX_SEQ - 2
        token = {name: features[name][..., :length] for name in ("input_ids", "input_mask", "segment_ids")}
        if kind == "pretrainer":
            token["mlm_positions"] = np.minimum(features["mlm_positions"], length - 1)
        for name, value in token.items():
            cases[f"{kind}/serving_default/in/{name}"] = value
        model_features = dict(token)
        for name, value in _keras_outputs(model, kind, model_features).items():
            cases[f"{kind}/serving_default/out/{name}"] = value

        # serve_examples: serialized tf.Examples with the original feature names, positions padded to MAX_PRED.
        example_features = dict(features)
        if kind == "pretrainer":
            example_features["mlm_positions"] = _mlm_positions(features["input_ids"], mask_id, MAX_PRED)[0]
        cases[f"{kind}/serve_examples/in/examples"] = _serialize(example_features, kind)
        expected = _keras_outputs(model, kind, example_features)
        if kind.startswith("squad"):
            expected["unique_ids"] = features["unique_ids"]
        for name, value in expected.items():
            cases[f"{kind}/serve_examples/out/{name}"] = value

    # The console script on a Google-style release directory (TF1 names), without the raw-text signature.
    release = root / "release"
    release.mkdir()
    save_tf1_checkpoint(models["classifier"], str(release / "model.ckpt-best"))
    models["classifier"].config.to_json_file(str(release / "albert_config.json"))
    shutil.copy(spm_file, release / "30k-clean.model")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-m", "albert_tf.commands", "albert-export", f"--input={release}", "--model=classifier", "--num_labels=3",
         f"--export_dir={root / 'cli'}", f"--max_seq_length={MAX_SEQ}", "--noserve_text", "--threshold=0.25"],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    paths["cli"] = proc.stdout.strip().splitlines()[-1]
    cases["cli/-/path/-"] = np.array(paths["cli"], dtype=object)
    for name in ("input_ids", "input_mask", "segment_ids"):
        cases[f"cli/serving_default/in/{name}"] = cases[f"classifier/serving_default/in/{name}"]
    for name in ("probabilities", "predictions", "threshold"):
        cases[f"cli/serving_default/out/{name}"] = cases[f"classifier/serving_default/out/{name}"]

    cases_file = root / "cases.npz"
    np.savez(cases_file, **cases)
    got_file, report_file = root / "got.npz", root / "report.json"
    script = root / "child.py"
    script.write_text(_CHILD)
    proc = subprocess.run([sys.executable, str(script), str(cases_file), str(got_file), str(report_file)],
                          capture_output=True, text=True, env=env, timeout=600, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(report_file) as f:
        report = json.load(f)
    got = dict(np.load(got_file))
    return {"cases": cases, "got": got, "report": report, "paths": paths, "models": models,
            "spm_file": spm_file, "root": root}


# --- Tests ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_reloaded_signatures_match_keras(exported, kind):
    cases, got = exported["cases"], exported["got"]
    assert exported["report"]["signatures"][kind] == sorted(
        [export.SERVING_DEFAULT, export.SERVE_EXAMPLES, export.SERVE_TEXT, export.TOKENIZATION_INFO])
    for signature in (export.SERVING_DEFAULT, export.SERVE_EXAMPLES, export.SERVE_TEXT):
        expected = {key.split("/")[3]: value for key, value in cases.items()
                    if key.startswith(f"{kind}/{signature}/out/")}
        received = {key.split("/")[3]: value for key, value in got.items()
                    if key.startswith(f"{kind}/{signature}/got/")}
        assert sorted(received) == sorted(expected), (signature, sorted(received), sorted(expected))
        for name, want in sorted(expected.items(), key=lambda item: item[0] != "input_ids"):
            have = received[name]
            assert have.shape == want.shape, (signature, name, have.shape, want.shape)
            if np.issubdtype(want.dtype, np.integer):
                np.testing.assert_array_equal(have, want, err_msg=f"{kind}/{signature}/{name}")
            else:
                np.testing.assert_allclose(have, want, atol=ATOL, rtol=0, err_msg=f"{kind}/{signature}/{name}")


def test_cli_export_from_a_tf1_release(exported):
    """`albert-export` on a release directory: weights from the TF1 names, assets found, no text ops."""
    report, cases, got = exported["report"], exported["cases"], exported["got"]
    assert exported["paths"]["cli"].endswith(os.path.join("cli", "1"))
    assert report["signatures"]["cli"] == sorted([export.SERVING_DEFAULT, export.SERVE_EXAMPLES,
                                                  export.TOKENIZATION_INFO])
    assert report["non_core_ops"]["cli"] == []
    assert sorted(os.listdir(os.path.join(exported["paths"]["cli"], "assets"))) == [
        "30k-clean.model", "albert_config.json"]
    for name in ("probabilities", "predictions", "threshold"):
        np.testing.assert_allclose(got[f"cli/serving_default/got/{name}"],
                                   cases[f"cli/serving_default/out/{name}"], atol=ATOL, rtol=0)


def test_every_export_carries_its_kind(exported):
    """`assets.extra/albert_export.json`: the registry kind, the lengths and the signatures of each export
    (written before the rename, beside TF Serving's warm-up file)."""
    from albert_tf.export import metadata

    for kind in KINDS + ("cli",):
        path = exported["paths"][kind]
        meta = metadata.read(path)
        assert meta["format"] == "albert_tf.export/1"
        assert meta["kind"] == ("classifier" if kind == "cli" else kind)
        assert meta["max_seq_length"] == MAX_SEQ and meta["do_lower_case"] is True
        assert meta["signatures"] == exported["report"]["signatures"][kind]
    assert metadata.read(exported["paths"]["classifier"])["num_labels"] == 3
    assert metadata.read(exported["paths"]["pretrainer"])["max_predictions_per_seq"] == MAX_PRED
    assert {"start_n_top", "end_n_top"} <= set(metadata.read(exported["paths"]["squad_v2"]))
    assert "albert_export.json" in os.listdir(os.path.join(exported["paths"]["cli"], "assets.extra"))


def test_only_tensorflow_text_ops_beyond_core(exported):
    """What a model server must provide: the serving signatures use core ops, `serve_text` adds these."""
    for kind in KINDS:
        assert set(exported["report"]["non_core_ops"][kind]) <= TEXT_OPS, exported["report"]["non_core_ops"]


def test_no_xla_clusters_in_the_export(exported):
    """The inference path's fused XLA LayerNorm is traced out of exports: TF Serving runs no XLA by default."""
    assert exported["report"]["xla_functions"] == {kind: [] for kind in exported["report"]["xla_functions"]}
    assert len(exported["report"]["xla_functions"]) >= len(KINDS)


def test_serve_text_exercises_truncation_and_masks(exported):
    """The text cases are not trivial: some rows are truncated, some single-segment, some have masks."""
    cases = exported["cases"]
    ids = cases["classifier/serve_text/out/input_ids"]
    assert (ids[:, -1] != 0).sum() >= 3                              # rows filled up to L (truncated)
    assert ((ids == 3).sum(axis=1) == 1).sum() >= 2                  # single-segment rows
    positions = cases["pretrainer/serve_text/out/mlm_weights"]
    assert positions.sum() == 4 and positions.shape == (3, 3)
    race_ids = cases["race/serve_text/out/input_ids"]
    assert race_ids.shape == (2, 4, MAX_SEQ) and (race_ids[:, :, -1] != 0).any()


def test_assets_and_tokenization_info(exported):
    path = exported["paths"]["encoder"]
    assets = sorted(os.listdir(os.path.join(path, "assets")))
    assert assets == ["albert_config.json", "tiny.model"]
    assert AlbertConfig.from_json_file(os.path.join(path, "assets", "albert_config.json")).to_dict() == \
        exported["models"]["encoder"].config.to_dict()
    info = exported["report"]["tokenization_info"]
    assert info["vocab_file"].endswith(os.path.join("assets", "tiny.model")) and info["do_lower_case"] is True


def test_bad_inputs_are_rejected_by_the_signature(exported):
    errors = exported["report"]["errors"]
    assert "int32" in errors["float_ids"] and "float" in errors["float_ids"]
    assert re.search(r"Shape of tensor (input_ids|input_mask|segment_ids) \[3\] is not compatible with expected "
                     r"shape \[\?,\?\]", errors["rank1_ids"])
    assert "Shape of tensor input_mask [1,1,3] is not compatible" in errors["rank3_mask"]
    assert "`segment_ids` must have the shape of `input_ids`" in errors["shape_mismatch"]
    assert f"`input_ids` must be < vocab_size={VOCAB_SIZE}" in errors["id_too_large"]
    assert re.search(r"Shape of tensor text_[ab] \[1,1\] is not compatible with expected shape \[\?\]",
                     errors["text_rank2"])
    assert "string" in errors["examples_int"]
    assert re.search(r"Shape of tensor (input_ids|input_mask|segment_ids) \[1,2\] is not compatible with "
                     r"expected shape \[\?,4,\?\]", errors["race_rank2"])


@pytest.mark.e2e
def test_saved_model_cli_lists_signatures(exported):
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([cli, "show", "--all", "--dir", exported["paths"]["classifier"]], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in ("serving_default", "serve_examples", "serve_text", "tokenization_info"):
        assert f"signature_def['{name}']" in proc.stdout
    assert "inputs['input_ids'] tensor_info:\n        dtype: DT_INT32\n        shape: (-1, -1)" in proc.stdout
    assert "outputs['threshold']" in proc.stdout


def test_versions_and_atomic_write(exported, tmp_path):
    model = exported["models"]["encoder"]
    base = tmp_path / "encoder"
    (base / "7").mkdir(parents=True)
    (base / "notes").mkdir()
    assert export.next_version(str(base)) == 8
    path = export.export_saved_model(model, str(base), max_seq_length=8)
    assert path == str(base / "8")
    assert sorted(os.listdir(base)) == ["7", "8", "notes"]                # no temporary directory left
    assert os.path.exists(os.path.join(path, "saved_model.pb"))
    with pytest.raises(ValueError, match="already exists"):
        export.export_saved_model(model, str(base), version=8, max_seq_length=8)


def test_argument_errors(exported, tmp_path):
    model = exported["models"]["encoder"]
    target = str(tmp_path / "never")
    with pytest.raises(ValueError, match="sequence length 64 because the ALBERT model was only trained up to "
                                         "sequence length 32"):
        export.export_saved_model(model, target, max_seq_length=64)
    with pytest.raises(ValueError, match="`threshold` applies to classifiers only"):
        export.export_saved_model(model, target, threshold=0.5, max_seq_length=8)
    with pytest.raises(ValueError, match=r"must be greater than `max_query_length=64` \+ 3"):
        export.export_saved_model(exported["models"]["squad_v1"], target, max_seq_length=32)
    with pytest.raises(ValueError, match="`max_qa_length=128` leaves no room"):
        export.export_saved_model(exported["models"]["race"], target, max_seq_length=32)
    with pytest.raises(TypeError, match="must be an AlbertModel"):
        export.export_saved_model(keras.Sequential(), target)
    with pytest.raises(ValueError, match="tiny.model has 90 pieces but `vocab_size` of the model's config is 50"):
        export.export_saved_model(AlbertModel(_config(50)), target, spm_model_file=exported["spm_file"],
                                  max_seq_length=8)
    with pytest.raises(FileNotFoundError, match="spm_model_file"):
        export.export_saved_model(model, target, spm_model_file=str(tmp_path / "missing.model"), max_seq_length=8)
    assert not os.path.exists(target)


def test_truncate_pair_lengths_matches_the_original_loop():
    cases = [(a, b, n) for a in range(9) for b in range(9) for n in range(1, 9)]
    len_a, len_b, budget = (np.array(c) for c in zip(*cases))
    got_a, got_b = text_ops.truncate_pair_lengths(len_a, len_b, budget)
    for (a, b, n), ga, gb in zip(cases, got_a.numpy(), got_b.numpy()):
        tokens_a, tokens_b = list(range(a)), list(range(b))
        packing.truncate_pair(tokens_a, tokens_b, n)
        assert (ga, gb) == (len(tokens_a), len(tokens_b)), (a, b, n)


def test_serving_specs_are_looked_up_by_class():
    classes = {AlbertModel: "encoder", AlbertPretrainer: "pretrainer", AlbertClassifier: "classifier",
               AlbertSquadV1: "squad_v1", AlbertSquadV2: "squad_v2", AlbertRace: "race",
               AlbertTokenClassifier: "token_classifier"}
    assert {cls: export.serving_spec(object.__new__(cls)).kind for cls in classes} == classes
    assert export.model_kinds() == KINDS + ("token_classifier",)

    class TunedClassifier(AlbertClassifier):
        pass

    # A subclass is served like its base class (looked up along the MRO); instances are not built here.
    assert export.serving_spec(object.__new__(TunedClassifier)) is \
        export.serving_spec(object.__new__(AlbertClassifier))
    assert export.model_kind(object.__new__(AlbertSquadV2)) == "squad_v2"
    with pytest.raises(TypeError, match="Received: str"):
        export.serving_spec("encoder")
    with pytest.raises(ValueError, match="`model` must be one of encoder, pretrainer"):
        export.example_feature_spec("bert", 8)
    race_spec = export.example_feature_spec("race", 8)
    assert {name: f.shape for name, f in race_spec.items()} == {name: [32] for name in
                                                                ("input_ids", "input_mask", "segment_ids")}
    assert set(export.example_feature_spec("squad_v2", 8)) == {"input_ids", "input_mask", "segment_ids",
                                                               "unique_ids", "p_mask"}
    assert export.example_feature_spec("pretrainer", 8, max_predictions_per_seq=3)["masked_lm_positions"].shape == [3]
