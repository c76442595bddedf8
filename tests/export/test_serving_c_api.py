"""The exports through TensorFlow's C API, as a C/C++/Java program linking plain TensorFlow loads them.

TF Serving's C++ loader and programs that link `libtensorflow` load a SavedModel with
`TF_LoadSessionFromSavedModel` (restore and init ops in a session) and answer with `TF_SessionRun` on the
SignatureDef's tensor names. `tests/c_api_client.py` does that through `ctypes` in a fresh process that never
imports TensorFlow's Python package (it loads `libtensorflow_framework.so.2` and `libtensorflow_cc.so.2` from the
installed package's directory). Here: the token-ids-only exports (`text_signature=False`) of the classifier,
SQuAD v1 and RACE models run `serving_default` there with int32 token ids, and give `tf.saved_model.load`'s
outputs to 1e-5; an export with `serve_text` does not load there ("Op type not registered 'SentencepieceOp'")
until the tensorflow-text op libraries are loaded with `TF_LoadLibrary`, and then its `serving_default` runs.

The module is marked `cpu_kernels`: `.ci/run` runs it again with oneDNN flipped.
"""

import importlib.util
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the TF2 loader of the export with serve_text needs its ops)
from tensorflow.core.framework import op_def_pb2
from tensorflow.core.protobuf import saved_model_pb2

from albert_tf.export import saved_model as export
from albert_tf.config import AlbertConfig
from albert_tf.text.vocab import train_sentencepiece
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1
from fresh_process import same_cpu_backend
import repo_paths

pytestmark = [pytest.mark.cpu_kernels]

TESTS_DIR = repo_paths.TESTS
CLIENT = os.path.join(TESTS_DIR, "c_api_client.py")
MAX_SEQ = 16
VOCAB = 40
ATOL = 1e-5
WORDS = "the cat sat on a mat while the dog ran to the river near an old house . in 1990 people".split()
# The tensorflow-text op libraries that register the ops of serve_text, relative to the tensorflow_text package.
TEXT_OP_LIBRARIES = ("python/ops/_sentencepiece_tokenizer.so", "python/ops/_normalize_ops.so")
# (name, model, text_signature): the token-ids-only exports, and the classifier again with serve_text.
EXPORTS = (("classifier", "classifier", False), ("squad_v1", "squad_v1", False), ("race", "race", False),
           ("classifier_text", "classifier", True))
TF_TYPES = {1: np.float32, 3: np.int32}


def _token_inputs(kind, rng):
    """Padded int32 token ids, mask and segment ids; RACE's are [batch, 4 options, seq]."""
    batch, length = 3, MAX_SEQ - 4
    shape = [batch, 4, length] if kind == "race" else [batch, length]
    mask = (np.arange(length) < rng.randint(2, length + 1, size=shape[:-1] + [1])).astype(np.int32)
    return {"input_ids": (rng.randint(0, VOCAB, size=shape) * mask).astype(np.int32),
            "input_mask": mask,
            "segment_ids": (np.arange(length) >= length // 2).astype(np.int32) * mask}


def _serving_default(path):
    """serving_default's `{input: (tensor name, dtype)}` and `{output: (tensor name, dtype)}`, from saved_model.pb."""
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    (meta_graph,) = saved_model.meta_graphs
    assert list(meta_graph.meta_info_def.tags) == ["serve"]
    signature = meta_graph.signature_def["serving_default"]
    return ({n: (t.name, t.dtype) for n, t in signature.inputs.items()},
            {n: (t.name, t.dtype) for n, t in signature.outputs.items()}, meta_graph)


def _graph_op_types(meta_graph):
    """The op types of the main graph and of every function in its library."""
    graph = meta_graph.graph_def
    return {n.op for n in graph.node} | {n.op for f in graph.library.function for n in f.node_def}


@pytest.fixture(scope="module")
def c_api(tmp_path_factory):
    root = tmp_path_factory.mktemp("c_api")
    rng = np.random.RandomState(0)
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(WORDS, size=rng.randint(4, 12))) for _ in range(300)) + "\n",
                      encoding="utf-8")
    train_sentencepiece(str(corpus), str(root / "tiny"), vocab_size=VOCAB, character_coverage=1.0, minloglevel=2)
    keras.utils.set_random_seed(0)
    config = AlbertConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                          num_hidden_groups=2, num_attention_heads=2, intermediate_size=24,
                          max_position_embeddings=32)
    models = {"classifier": AlbertClassifier(config, num_labels=3), "squad_v1": AlbertSquadV1(config),
              "race": AlbertRace(config)}
    for model in models.values():
        for v in model.variables:     # Non-zero biases, so that every output depends on the weights.
            if "bias" in v.path or "beta" in v.path:
                v.assign(tf.random.normal(v.shape, stddev=0.1, seed=1))
    inputs, want, runs, signatures = {}, {}, {}, {}
    for name, kind, text_signature in EXPORTS:
        path = export.export_saved_model(
            models[kind], str(root / name), spm_model_file=str(root / "tiny.model"), max_seq_length=MAX_SEQ,
            max_query_length=5, max_qa_length=6, text_signature=text_signature, warmup=False)
        sig_inputs, sig_outputs, meta_graph = signatures[name] = _serving_default(path)
        values = _token_inputs(kind, rng)
        inputs.update({f"{name}/{n}": v for n, v in values.items()})
        runs[name] = {"name": name, "export_dir": path,
                      "inputs": {sig_inputs[n][0]: f"{name}/{n}" for n in values},
                      "outputs": {f"{name}/{n}": t for n, (t, _) in sig_outputs.items()}}
        outputs = tf.saved_model.load(path).signatures["serving_default"](
            **{n: tf.constant(v) for n, v in values.items()})
        want.update({f"{name}/{n}": v.numpy() for n, v in outputs.items()})
    text_dir = os.path.dirname(importlib.util.find_spec("tensorflow_text").origin)
    spec = {"runs": [runs[name] for name, _, text_signature in EXPORTS if not text_signature],
            "text": {"export_dir": runs["classifier_text"]["export_dir"],
                     "libraries": [os.path.join(text_dir, lib) for lib in TEXT_OP_LIBRARIES],
                     "run": runs["classifier_text"]}}
    (root / "spec.json").write_text(json.dumps(spec))
    np.savez(root / "inputs.npz", **inputs)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", **same_cpu_backend())
    proc = subprocess.run([sys.executable, CLIENT, str(root / "spec.json"), str(root / "inputs.npz"),
                           str(root / "got.npz"), str(root / "report.json")],
                          capture_output=True, text=True, env=env, timeout=600, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(root / "report.json") as f:
        report = json.load(f)
    return {"got": dict(np.load(root / "got.npz")), "want": want, "report": report, "signatures": signatures}


@pytest.mark.e2e
def test_the_client_runs_without_tensorflows_python_package(c_api):
    """The child linked the installed package's libraries (same version) and never imported `tensorflow`."""
    assert c_api["report"]["tensorflow_imported"] == []
    assert c_api["report"]["version"] == tf.__version__


@pytest.mark.e2e
@pytest.mark.parametrize("name", [name for name, _, _ in EXPORTS])
def test_c_api_session_gives_the_tf2_loader_outputs(c_api, name):
    """serving_default through TF_LoadSessionFromSavedModel + TF_SessionRun: tf.saved_model.load's outputs."""
    _, outputs, _ = c_api["signatures"][name]
    got, want = c_api["got"], c_api["want"]
    assert outputs, name
    for output, (_, dtype) in outputs.items():
        key = f"{name}/{output}"
        have = got[key]
        assert have.dtype == want[key].dtype == TF_TYPES[dtype], key
        assert have.shape == want[key].shape and have.shape[0] == 3, key
        if have.dtype.kind == "f":
            np.testing.assert_allclose(have, want[key], atol=ATOL, rtol=0, err_msg=key)
        else:
            np.testing.assert_array_equal(have, want[key], err_msg=key)


@pytest.mark.e2e
def test_serve_text_export_needs_the_text_op_libraries(c_api):
    """Plain TensorFlow cannot load an export with serve_text; TF_LoadLibrary of the op libraries fixes that."""
    failed = c_api["report"]["load_without_libraries"]
    assert failed["code"] != 0
    assert "Op type not registered 'SentencepieceOp'" in failed["message"], failed["message"]
    core = op_def_pb2.OpList.FromString(c_api["got"]["core_op_list"].tobytes())
    core_ops = {op.name for op in core.op}
    libraries = [op_def_pb2.OpList.FromString(c_api["got"][f"library_op_list/{i}"].tobytes())
                 for i in range(len(TEXT_OP_LIBRARIES))]
    registered = [{op.name for op in ops.op} for ops in libraries]
    assert {"SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceIdToStringOp"} <= registered[0]
    assert "NormalizeUTF8" in registered[1]
    # The ops that plain TensorFlow lacks are the text ops, and these two libraries register all of them.
    missing = _graph_op_types(c_api["signatures"]["classifier_text"][2]) - core_ops
    assert missing == {"NormalizeUTF8", "SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceIdToStringOp"}
    assert missing <= set.union(*registered)
    # The token-ids-only exports need nothing beyond the core registry.
    for name in ("classifier", "squad_v1", "race"):
        assert _graph_op_types(c_api["signatures"][name][2]) <= core_ops, name
