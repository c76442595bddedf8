"""TF Serving's path: every model kind's export runs in a TF1 session loader with the TF2 loader's outputs.

`tensorflow_model_server` loads a SavedModel with the C++ `LoadSavedModel` (restore op and init op in a session)
and answers each request with one `Session::Run` on the SignatureDef's tensor names. A fresh child process that
imports TensorFlow and tensorflow-text only (no albert_tf) loads each export twice, with
`tf.compat.v1.saved_model.loader.load` into a `tf.compat.v1.Session` and with `tf.saved_model.load`, replays the
export's warm-up file (`assets.extra/tf_serving_warmup_requests`, parsed as `PredictionLog` records with the
`tensorflow-serving-api` protos) and richer inputs through both, and writes what each returned. Also here: the
text ops of every export against the OpDefs of TensorFlow Text 2.12.1 (the model server's; the list is
`tests/data/tf_text_2_12_1_ops.pbtxt`, written by `tests/references/tf_text_ops.py`), and the token-ids-only
export under `saved_model_cli run`, without tensorflow-text.

The module is marked `cpu_kernels`: `.ci/run` runs it again with oneDNN flipped.
"""

import importlib
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.framework import op_def_pb2
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf.export import saved_model as export
from albert_tf.export import warmup
from albert_tf.config import AlbertConfig
from albert_tf.text.vocab import train_sentencepiece
from albert_tf.models.albert_model import AlbertModel
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.export.session_model import SessionModel
import repo_paths

pytestmark = pytest.mark.cpu_kernels

TESTS_DIR = repo_paths.TESTS
TF_TEXT_2_12_1_OPS = os.path.join(TESTS_DIR, "data", "tf_text_2_12_1_ops.pbtxt")
MAX_SEQ = 16
ATOL = 1e-5
WORDS = ("the cat sat on a mat while the dog ran to the river near an old house . in 1990 people of the city "
         "built red blue green bridges ; what did they see ? zürich café").split()

KINDS = {
    "encoder": lambda config: AlbertModel(config),
    "pretrainer": lambda config: AlbertPretrainer(config),
    "classifier": lambda config: AlbertClassifier(config, num_labels=3),
    "regression": lambda config: AlbertClassifier(config, num_labels=1),
    "squad_v1": lambda config: AlbertSquadV1(config),
    "squad_v2": lambda config: AlbertSquadV2(config, start_n_top=3, end_n_top=2),
    "race": lambda config: AlbertRace(config),
    "token_classifier": lambda config: AlbertTokenClassifier(config, num_labels=5),
}
SENTENCES = ["The cat sat on the mat.", "  what did THE dog see near the old house in 1990 ? " * 3, "Zürich café", ""]


def _richer_inputs(kind, vocab_size, rng):
    """`{signature: {input: value}}` beyond the warm-up requests: padded batches, long and empty texts."""
    batch, length = 3, MAX_SEQ - 4
    shape = [batch, 4, length] if kind == "race" else [batch, length]
    mask = (np.arange(length) < rng.randint(2, length + 1, size=shape[:-1] + [1])).astype(np.int32)
    tokens = {"input_ids": (rng.randint(0, vocab_size, size=shape) * mask).astype(np.int32),
              "input_mask": mask,
              "segment_ids": (np.arange(length) >= length // 2).astype(np.int32) * mask}
    if kind == "pretrainer":
        tokens["mlm_positions"] = rng.randint(0, length, size=[batch, 3]).astype(np.int32)
    texts = {"question": SENTENCES[:3], "context": SENTENCES[1:]} if kind.startswith("squad") else \
        {"text": SENTENCES} if kind == "token_classifier" else \
        {"article": SENTENCES[:2], "question": SENTENCES[2:], "options": [SENTENCES, SENTENCES[::-1]]} \
        if kind == "race" else {"text_a": SENTENCES, "text_b": SENTENCES[::-1]}
    if kind == "pretrainer":
        texts = {"text_a": ["the [MASK] sat on the mat", "no mask"], "text_b": ["[mask] dog", ""]}
    return {"serving_default": tokens, "serve_text": {k: np.array(v, dtype=object) for k, v in texts.items()}}


_CHILD = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the SentencePiece ops of serve_text, as a model server built with them)
from tensorflow_serving.apis import prediction_log_pb2

cases = dict(np.load(sys.argv[1], allow_pickle=True))
paths = json.loads(sys.argv[2])
got, report = {}, {}
for kind, path in paths.items():
    tf2 = tf.saved_model.load(path).signatures
    requests = []
    for record in tf.data.TFRecordDataset(path + "/assets.extra/tf_serving_warmup_requests").as_numpy_iterator():
        request = prediction_log_pb2.PredictionLog.FromString(record).predict_log.request
        requests.append(("warmup", request.model_spec.name, request.model_spec.signature_name,
                         {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}))
    for key in cases:
        k, signature, name = key.split("/")
        if k == kind and not any(r[0] == "richer" and r[2] == signature for r in requests):
            inputs = {n.split("/")[2]: cases[n] for n in cases if n.startswith(f"{kind}/{signature}/")}
            requests.append(("richer", None, signature, inputs))
    report[kind] = {"warmup": [(r[1], r[2]) for r in requests if r[0] == "warmup"]}
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], path)
        # TF2 SavedModels also hold the init op in this map; TF Serving serves the other keys.
        report[kind]["signature_defs"] = sorted(k for k in meta.signature_def if not k.startswith("__"))
        session_outs = []
        for source, _, signature, inputs in requests:
            sig = meta.signature_def[signature]
            session_outs.append(sess.run({n: t.name for n, t in sig.outputs.items()},
                                         {sig.inputs[n].name: v for n, v in inputs.items()}))
    for (source, _, signature, inputs), session_out in zip(requests, session_outs):
        tf2_out = tf2[signature](**{n: tf.constant(v) for n, v in inputs.items()})
        for name, value in session_out.items():
            got[f"{kind}/{source}/{signature}/{name}/session"] = np.asarray(value)
            got[f"{kind}/{source}/{signature}/{name}/tf2"] = tf2_out[name].numpy()
np.savez(sys.argv[3], **got)
with open(sys.argv[4], "w") as f:
    json.dump(report, f)
"""


def _config(vocab_size):
    return AlbertConfig(vocab_size=vocab_size, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                        num_hidden_groups=2, num_attention_heads=2, intermediate_size=24,
                        max_position_embeddings=32)


def _child_env():
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("serving")
    rng = np.random.RandomState(0)
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(WORDS, size=rng.randint(4, 14))) for _ in range(1500)) + "\n",
                      encoding="utf-8")
    train_sentencepiece(str(corpus), str(root / "tiny"), vocab_size=64, character_coverage=1.0, minloglevel=2)
    spm_file = str(root / "tiny.model")
    keras.utils.set_random_seed(0)
    config = _config(64)
    cases, paths, models = {}, {}, {}
    for kind, build in KINDS.items():
        model = models[kind] = build(config)
        for v in model.variables:     # Non-zero biases, so that every output depends on the weights.
            if "bias" in v.path or "beta" in v.path:
                v.assign(tf.random.normal(v.shape, stddev=0.1, seed=1))
        paths[kind] = export.export_saved_model(
            model, str(root / kind), spm_model_file=spm_file, max_seq_length=MAX_SEQ, max_query_length=5,
            max_qa_length=6, threshold=0.25 if kind == "classifier" else None, max_predictions_per_seq=4,
            warmup=True)
        for signature, inputs in _richer_inputs(kind, 64, rng).items():
            for name, value in inputs.items():
                cases[f"{kind}/{signature}/{name}"] = value
    # The token-ids-only export: no serve_text, so no tensorflow-text op in its graph.
    paths["classifier_ids_only"] = export.export_saved_model(
        models["classifier"], str(root / "classifier_ids_only"), spm_model_file=spm_file, max_seq_length=MAX_SEQ,
        text_signature=False, warmup=True)
    np.savez(root / "cases.npz", **cases)
    script = root / "child.py"
    script.write_text(_CHILD)
    proc = subprocess.run([sys.executable, str(script), str(root / "cases.npz"), json.dumps(paths),
                           str(root / "got.npz"), str(root / "report.json")],
                          capture_output=True, text=True, env=_child_env(), timeout=900, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(root / "report.json") as f:
        report = json.load(f)
    return {"paths": paths, "got": dict(np.load(root / "got.npz", allow_pickle=True)), "report": report, "cases": cases,
            "models": models, "spm_file": spm_file, "root": root}


@pytest.mark.parametrize("kind", list(KINDS) + ["classifier_ids_only"])
def test_session_loader_gives_the_tf2_loader_outputs(served, kind):
    """Every signature of every kind, in TF Serving's session loader: the TF2 loader's outputs to 1e-5."""
    report, got = served["report"][kind], served["got"]
    signatures = ["serve_examples", "serving_default", "tokenization_info"] + \
        ([] if kind == "classifier_ids_only" else ["serve_text"])
    assert report["signature_defs"] == sorted(signatures)
    compared = set()
    for key in sorted(got):
        k, source, signature, name, loader = key.split("/")
        if k != kind or loader != "session":
            continue
        have, want = got[key], got[key[:-len("session")] + "tf2"]
        assert have.shape == want.shape, key
        if have.dtype.kind in "fc":
            np.testing.assert_allclose(have, want, atol=ATOL, rtol=0, err_msg=key)
        else:
            np.testing.assert_array_equal(have, want, err_msg=key)
        compared.add((source, signature))
    # Each signature ran from its warm-up request; the token and text signatures also from richer inputs.
    assert {s for source, s in compared if source == "warmup"} == set(signatures)
    richer = {"serving_default"} | ({"serve_text"} if "serve_text" in signatures else set())
    assert {s for source, s in compared if source == "richer"} == (richer if kind != "classifier_ids_only" else set())


def test_session_outputs_are_the_keras_models(served):
    """The served numbers are the model's, not only the two loaders agreeing: serving_default vs Keras."""
    got, cases = served["got"], served["cases"]
    for kind, model in served["models"].items():
        feed = {key.split("/")[2]: tf.constant(value) for key, value in cases.items()
                if key.startswith(f"{kind}/serving_default/")}
        if kind == "pretrainer":
            feed["masked_lm_positions"] = feed.pop("mlm_positions")
        out = model(feed, training=False)
        name = {"encoder": "pooled_output", "pretrainer": "mlm_logits", "squad_v1": "start_logits",
                "squad_v2": "cls_logits", "token_classifier": "probabilities"}.get(kind, "probabilities")
        expected = np.asarray(out[name])
        if kind == "regression":
            expected = np.asarray(out["probabilities"])
        np.testing.assert_allclose(got[f"{kind}/richer/serving_default/{name}/session"], expected, atol=ATOL,
                                   rtol=0, err_msg=kind)


def test_warmup_file_is_one_prediction_log_per_signature(served):
    for kind, path in served["paths"].items():
        requests = warmup.read_warmup_requests(os.path.join(path, "assets.extra", "tf_serving_warmup_requests"))
        names = [signature for signature, _ in requests]
        assert sorted(names) == served["report"][kind]["signature_defs"], kind
        # The model name TF Serving gives the export: its base directory's name.
        assert {name for name, _ in served["report"][kind]["warmup"]} == {kind}
        inputs = dict(requests)["serving_default"]
        width = (1, 4, MAX_SEQ) if kind == "race" else (1, MAX_SEQ)
        assert inputs["input_ids"].shape == width and inputs["input_ids"].dtype == np.int32


def test_session_model_runs_warmup_requests(served):
    """`albert_tf.export.session_model.SessionModel`, the package's own client of the same path, in this process."""
    path = served["paths"]["classifier_ids_only"]
    requests = dict(warmup.read_warmup_requests(os.path.join(path, "assets.extra", "tf_serving_warmup_requests")))
    with SessionModel(path) as model:
        assert model.input_names() == ["input_ids", "input_mask", "segment_ids"]
        out = model.run("serving_default", **requests["serving_default"])
        assert out["probabilities"].shape == (1, 3)
        with pytest.raises(ValueError, match=r"takes the inputs \['input_ids', 'input_mask', 'segment_ids'\]"):
            model.run("serving_default", input_ids=[[1, 2]])
        with pytest.raises(ValueError, match="has no signature `serve_text`"):
            model.run("serve_text", text_a=["a"], text_b=["b"])
        # Serialized protos as a list of bytes keep their trailing NUL bytes (a numpy bytes array drops them).
        example = tf.train.Example(features=tf.train.Features(feature={
            name: tf.train.Feature(int64_list=tf.train.Int64List(value=[1] + [0] * (MAX_SEQ - 1)))
            for name in ("input_ids", "input_mask", "segment_ids")})).SerializeToString()
        assert example.endswith(b"\x00")
        direct = model.run("serve_examples", examples=np.array([example], dtype=object))
        np.testing.assert_array_equal(model.run("serve_examples", examples=[example])["probabilities"],
                                      direct["probabilities"])


def _graph_ops(path):
    """`{op name: [attr names set on its nodes]}` of a SavedModel's graph and function library."""
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    graph = proto.meta_graphs[0].graph_def
    nodes = list(graph.node) + [node for fn in graph.library.function for node in fn.node_def]
    ops = {}
    for node in nodes:
        ops.setdefault(node.op, set()).update(name for name in node.attr if not name.startswith("_"))
    functions = {fn.signature.name for fn in graph.library.function}
    return {op: sorted(attrs) for op, attrs in ops.items() if op not in functions}


def _tf_text_2_12_1():
    with open(TF_TEXT_2_12_1_OPS, encoding="utf-8") as f:
        op_list = text_format.Parse(f.read(), op_def_pb2.OpList())
    return {op.name: op for op in op_list.op}


def test_text_ops_exist_in_tf_text_2_12_1(served):
    """A model server with TF Text 2.12.1 registers every non-core op of every export, with its attributes."""
    import tensorflow_text  # noqa: F401  (registers the ops, so that their current OpDefs can be read)
    from tensorflow.python.framework import op_def_registry

    server_ops = _tf_text_2_12_1()
    assert "SentencepieceOp" in server_ops and "TFText>RoundRobinTrim" not in server_ops
    used = set()
    for kind, path in served["paths"].items():
        for op, attrs in _graph_ops(path).items():
            if hasattr(tf.raw_ops, op):
                continue                                    # core TensorFlow: the server's own
            assert op in server_ops, f"{kind}: op {op} is not in TensorFlow Text 2.12.1"
            declared = {attr.name for attr in server_ops[op].attr}
            assert set(attrs) <= declared, f"{kind}: {op} sets {sorted(set(attrs) - declared)}, unknown in 2.12.1"
            current = op_def_registry.get(op)
            assert [(a.name, a.type, a.type_attr) for a in current.input_arg] == \
                [(a.name, a.type, a.type_attr) for a in server_ops[op].input_arg], op
            assert [(a.name, a.type, a.type_attr) for a in current.output_arg] == \
                [(a.name, a.type, a.type_attr) for a in server_ops[op].output_arg], op
            used.add(op)
    assert used == {"NormalizeUTF8", "SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceIdToStringOp"}
    assert all(hasattr(tf.raw_ops, op) for op in _graph_ops(served["paths"]["classifier_ids_only"]))


def test_an_op_the_server_lacks_is_caught(served, tmp_path):
    """The check above fails on a graph that uses a newer text op (RoundRobinTrim, TF Text 2.16)."""
    server_ops = _tf_text_2_12_1()
    ops = dict(_graph_ops(served["paths"]["classifier"]), **{"TFText>RoundRobinTrim": ["N", "Tsplits", "T"]})
    missing = [op for op in ops if not hasattr(tf.raw_ops, op) and op not in server_ops]
    assert missing == ["TFText>RoundRobinTrim"]
    extra_attr = {"SentencepieceOp": ["model", "new_attr"]}
    declared = {attr.name for attr in server_ops["SentencepieceOp"].attr}
    assert set(extra_attr["SentencepieceOp"]) - declared == {"new_attr"}


@pytest.mark.e2e
def test_token_ids_only_export_runs_in_saved_model_cli(served):
    """`saved_model_cli run` links plain TensorFlow: the token-ids-only export loads and runs there."""
    path = served["paths"]["classifier_ids_only"]
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    exprs = "input_ids=[[2,5,7,3]];input_mask=[[1,1,1,1]];segment_ids=[[0,0,0,0]]"
    proc = subprocess.run([cli, "run", "--dir", path, "--tag_set", "serve", "--signature_def", "serving_default",
                           "--input_exprs", exprs], capture_output=True, text=True, env=_child_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Result for output key probabilities" in proc.stdout and "Result for output key predictions" in proc.stdout
    model = served["models"]["classifier"]
    expected = model({"input_ids": tf.constant([[2, 5, 7, 3]]), "input_mask": tf.ones([1, 4], tf.int32),
                      "segment_ids": tf.zeros([1, 4], tf.int32)}, training=False)["probabilities"].numpy()
    printed = proc.stdout.split("Result for output key probabilities:")[1].split("Result")[0]
    values = np.array([float(x) for x in printed.replace("[", " ").replace("]", " ").split()])
    np.testing.assert_allclose(values, expected.ravel(), atol=1e-5)


# --- docs/serving.md, as a user runs it --------------------------------------------------------------------

SERVING_DOC = os.path.join(os.path.dirname(TESTS_DIR), "docs", "serving.md")


def _doc_blocks():
    """`[(marker or None, language, code)]` of the fenced blocks of docs/serving.md; the marker is the
    `<!-- ... -->` text on the line before the fence."""
    with open(SERVING_DOC, encoding="utf-8") as f:
        lines = f.read().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            language, end = lines[i][3:].strip(), lines.index("```", i + 1)
            previous = lines[i - 1].strip() if i else ""
            marker = previous[4:-3].strip() if previous.startswith("<!--") and previous.endswith("-->") else None
            blocks.append((marker, language, "\n".join(lines[i + 1:end])))
            i = end
        i += 1
    return blocks


def _rest_inputs(body, signature_def_inputs):
    """TF Serving's REST row format (`instances`) -> `{input: numpy column}`; `{"b64": ...}` decoded."""
    import base64

    def decode(value):
        if isinstance(value, dict) and set(value) == {"b64"}:
            return base64.b64decode(value["b64"])
        return [decode(v) for v in value] if isinstance(value, list) else value

    rows = body["instances"]
    if all(not isinstance(row, dict) or set(row) == {"b64"} for row in rows):   # one input: bare rows
        (name,) = signature_def_inputs
        rows = [{name: row} for row in rows]
    columns = {name: [decode(row[name]) for row in rows] for name in rows[0]}
    return {name: np.array(v, dtype=object) if isinstance(v[0], (str, bytes)) or (
        isinstance(v[0], list) and v[0] and isinstance(v[0][0], (str, bytes))) else np.array(v)
        for name, v in columns.items()}


def test_doc_rest_bodies_run_in_the_session_loader(served):
    blocks = _doc_blocks()
    requests = [(marker.split()[1], json.loads(code)) for marker, language, code in blocks
                if marker and marker.startswith("request:")]
    responses = [(marker.split()[1:], json.loads(code)) for marker, language, code in blocks
                 if marker and marker.startswith("response:")]
    assert {kind for kind, _ in requests} == {"classifier", "pretrainer", "squad_v1", "race", "token_classifier"}
    # The serve_examples body comes from the page's Python block, run as written (for this export's length).
    (example_code,) = [code for marker, language, code in blocks if language == "python" and "serve_examples" in code]
    printed = subprocess.run([sys.executable, "-c", example_code.replace("max_seq_length = 128", f"max_seq_length = "
                                                                         f"{MAX_SEQ}")],
                             capture_output=True, text=True, env=_child_env(), timeout=300)
    assert printed.returncode == 0, printed.stderr[-2000:]
    requests.append(("classifier", json.loads(printed.stdout.strip().splitlines()[-1])))
    import tensorflow_text  # noqa: F401  (the text signatures' ops)

    ran = set()
    for kind, body in requests:
        signature = body.get("signature_name", "serving_default")
        with SessionModel(served["paths"][kind]) as model:
            out = model.run(signature, **_rest_inputs(body, model.input_names(signature)))
            ran.add((kind, signature))
            for (response_kind, response_signature), response in responses:
                if (response_kind, response_signature) == (kind, signature):
                    for row in response["predictions"]:
                        assert set(row) <= set(out) and set(out) - set(row) <= {"threshold"}, (kind, sorted(out))
                        for name, value in row.items():
                            assert np.ndim(value) == np.ndim(out[name]) - 1, (kind, name)
            assert all(len(v) == len(body["instances"]) for v in out.values()), (kind, signature)
    assert {(k, s) for (k, s), _ in responses} <= ran
    assert ("classifier", "serve_examples") in ran


def test_doc_models_config_parses():
    from tensorflow_serving.config import model_server_config_pb2

    (code,) = [code for marker, _, code in _doc_blocks() if marker == "models.config"]
    config = text_format.Parse(code, model_server_config_pb2.ModelServerConfig())
    assert [c.name for c in config.model_config_list.config] == ["albert_mnli", "albert_squad", "albert_ner"]


def test_doc_grpc_client_against_a_loopback_server(served):
    """The page's gRPC client, unchanged but for the port, against a PredictionService on 127.0.0.1 that
    answers through the session loader."""
    from concurrent import futures

    import grpc
    import tensorflow_text  # noqa: F401
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    class Service(prediction_service_pb2_grpc.PredictionServiceServicer):
        def __init__(self, model):
            self.model, self.requests = model, []

        def Predict(self, request, context):
            self.requests.append(request)
            inputs = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
            outputs = self.model.run(request.model_spec.signature_name or "serving_default", **inputs)
            response = predict_pb2.PredictResponse(model_spec=request.model_spec)
            for name, value in outputs.items():
                response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
            return response

    (code,) = [code for marker, language, code in _doc_blocks() if language == "python" and "grpc" in code]
    with SessionModel(served["paths"]["classifier"]) as model:
        service = Service(model)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(service, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            scope = {}
            exec(compile(code.replace("localhost:8500", f"127.0.0.1:{port}"), SERVING_DOC, "exec"), scope)
        finally:
            server.stop(None)
        expected = model.run("serve_text", text_a=["The cat sat on the mat.", "A single sentence."],
                             text_b=["A cat was sitting.", ""])
    assert [r.model_spec.signature_name for r in service.requests] == ["serve_text"]
    np.testing.assert_allclose(scope["probabilities"], expected["probabilities"], atol=ATOL)
    np.testing.assert_array_equal(scope["predictions"], expected["predictions"])


@pytest.mark.e2e
def test_doc_saved_model_cli_show_output(served):
    (shown,) = [code for marker, _, code in _doc_blocks() if marker == "saved_model_cli: classifier"]
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    proc = subprocess.run([cli, "show", "--dir", served["paths"]["classifier_ids_only"], "--tag_set", "serve",
                           "--signature_def", "serving_default"], capture_output=True, text=True,
                          env=_child_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]

    def without_names(text):     # tensor names depend on how the graph was traced
        return [line.rstrip() for line in text.strip().splitlines() if not line.strip().startswith("name:")]

    assert without_names(proc.stdout) == without_names(shown)


def test_the_session_path_refuses_inputs_it_would_cast(served):
    """A `Session::Run` casts float ids (1.7 -> 1) and reshapes nothing: `SessionModel` refuses such inputs naming
    the signature and the input, as it refuses inputs of different batch sizes; text that is not UTF-8 loses its
    invalid bytes, as in the original."""
    importlib.import_module("tensorflow_text")   # the SentencePiece ops of serve_text
    from albert_tf.errors import InputError   # pylint: disable=import-outside-toplevel
    ids = np.full((2, MAX_SEQ), 3, np.int32)
    good = dict(input_ids=ids, input_mask=np.ones_like(ids), segment_ids=np.zeros_like(ids))
    with SessionModel(served["paths"]["classifier"]) as model:
        expected = model.run(**good)
        cases = [
            (dict(good, input_ids=ids + 0.7), "Input `input_ids` of signature `serving_default` takes int32 values. "
                                              "Received: float64 values (ids are whole numbers)."),
            (dict(good, input_ids=ids[0]), f"Input `input_ids` of signature `serving_default` takes the shape "
                                           f"[batch, ?] (rank 2). Received: shape [{MAX_SEQ}]."),
            (dict(good, input_mask=np.ones((1, MAX_SEQ), np.int32)),
             "The inputs of signature `serving_default` must have one batch size. Received: input_ids 2, "
             "input_mask 1, segment_ids 2."),
        ]
        for inputs, message in cases:
            with pytest.raises(InputError) as caught:
                model.run(**inputs)
            assert str(caught.value) == message
        # Text that is not UTF-8: its invalid bytes dropped, as the original's `convert_to_unicode` decodes it
        # under Python 3 (`bytes.decode("utf-8", "ignore")`); the TF2 loader gives the same numbers.
        text_a = [b"fine \xff", b"caf\xe9 \xe2\x82 au \xc0\xaf lait \xed\xa0\x80"]
        text_b = [b"\x80good", b"\xf0\x9f\x98"]
        dropped = model.run("serve_text", text_a=text_a, text_b=text_b)
        decoded = model.run("serve_text", text_a=[t.decode("utf-8", "ignore") for t in text_a],
                            text_b=[t.decode("utf-8", "ignore") for t in text_b])
        assert [t.decode("utf-8", "ignore") for t in text_a] == ["fine ", "caf  au  lait "]
        tf2 = tf.saved_model.load(served["paths"]["classifier"]).signatures["serve_text"](
            text_a=tf.constant(text_a), text_b=tf.constant(text_b))
        for name in decoded:
            np.testing.assert_array_equal(dropped[name], decoded[name])
            np.testing.assert_allclose(tf2[name].numpy(), decoded[name], atol=ATOL, rtol=0)
        with pytest.raises(InputError, match="must have one batch size. Received: text_a 2, text_b 1"):
            model.run("serve_text", text_a=["one", "two"], text_b=[""])
        again = model.run(**good)
    for name in expected:   # the good inputs still run, to the same outputs
        np.testing.assert_array_equal(again[name], expected[name])
