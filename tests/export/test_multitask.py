"""`albert_tf.export.multitask`: one SavedModel for runs that share one encoder, in TF Serving's session loader.

Three tiny runs of the runners from one initial checkpoint (a LoRA SST-2 classifier, a frozen-encoder CoLA
classifier, a LoRA NER tagger; `tests/multitask_fixtures.py`), each with its runner's own single-task export, are
exported together. In `SessionModel` (TF Serving's loader path), each task's three signatures give its own
export's outputs to 1e-5 on the same inputs; `serve_all` gives every task's `serve_text` outputs in one call; the
export holds the encoder once, the SentencePiece model once and each task's labels; its warm-up requests run. A full
fine-tune, another encoder, a run without a head and a name given twice are refused in one line each, with no
export directory left behind.

The module is marked `cpu_kernels`: `.ci/run` runs it again with oneDNN flipped.
"""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the exports' text ops)
from tensorflow.core.protobuf import saved_model_pb2

import multitask_fixtures
import repo_paths
from fresh_process import same_cpu_backend
from albert_tf.errors import InputError
from albert_tf.export import metadata, multitask, warmup
from albert_tf.export.session_model import SessionModel

pytestmark = pytest.mark.cpu_kernels

ATOL = 1e-5
SEQ = multitask_fixtures.SEQ
TEXTS = ["the movie was very good .", "Alice went to Paris", "a bad , awful plot", "Bob met Carol in Rome ."]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return multitask_fixtures.write_runs(tmp_path_factory.mktemp("multitask"))


@pytest.fixture(scope="module")
def export(runs, tmp_path_factory):
    tasks = ",".join(f"{name}={run_dir}" for name, run_dir in runs["runs"].items())
    return multitask.export_multitask(tasks, str(tmp_path_factory.mktemp("multi") / "export"), warmup=True)


@pytest.fixture(scope="module")
def served(export):
    with SessionModel(export) as model:
        yield model


def _token_inputs(rng, vocab_size=40):
    batch, length = 3, SEQ - 3
    mask = (np.arange(length) < rng.randint(3, length + 1, size=[batch, 1])).astype(np.int32)
    return {"input_ids": (rng.randint(5, vocab_size, size=[batch, length]) * mask).astype(np.int32),
            "input_mask": mask, "segment_ids": np.zeros([batch, length], np.int32)}


def _examples(inputs):
    records = []
    for row in range(len(inputs["input_ids"])):
        feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(
            value=list(np.pad(value[row], (0, SEQ - value.shape[1]))))) for name, value in inputs.items()}
        records.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return np.array(records, dtype=object)


def _text_inputs(model, signature):
    names = model.input_names(signature)
    return {name: np.array(TEXTS if name in ("text", "text_a") else [""] * len(TEXTS), dtype=object)
            for name in names}


def _assert_same(got, want, what):
    assert sorted(got) == sorted(want), what
    for name in want:
        if want[name].dtype == object:      # NER's tag strings
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{what}: {name}")
        else:
            np.testing.assert_allclose(got[name], want[name], atol=ATOL, err_msg=f"{what}: {name}")


@pytest.mark.parametrize("task", ["sentiment", "grammar", "tags"])
def test_each_tasks_signatures_give_its_own_exports_outputs(runs, served, task):
    rng = np.random.RandomState(3)
    names = multitask.signature_names(task)
    with SessionModel(runs["exports"][task]) as own:
        inputs = _token_inputs(rng)
        _assert_same(served.run(names["serving_default"], **inputs), own.run("serving_default", **inputs),
                     f"{task} token ids")
        examples = _examples(inputs)
        _assert_same(served.run(names["serve_examples"], examples=examples),
                     own.run("serve_examples", examples=examples), f"{task} examples")
        texts = _text_inputs(own, "serve_text")
        assert served.input_names(names["serve_text"]) == own.input_names("serve_text")
        _assert_same(served.run(names["serve_text"], **texts), own.run("serve_text", **texts), f"{task} text")


def test_serve_all_gives_every_tasks_serve_text_in_one_call(runs, served):
    assert served.input_names(multitask.SERVE_ALL) == ["text", "text_b"]
    text = np.array(TEXTS, dtype=object)
    got = served.run(multitask.SERVE_ALL, text=text, text_b=np.array([""] * len(TEXTS), dtype=object))
    seen = set()
    for task, export_dir in runs["exports"].items():
        with SessionModel(export_dir) as own:
            want = own.run("serve_text", **_text_inputs(own, "serve_text"))
        prefix = f"{task}/"
        mine = {name[len(prefix):]: value for name, value in got.items() if name.startswith(prefix)}
        _assert_same(mine, want, f"serve_all {task}")
        seen.update(prefix + name for name in mine)
    assert seen == set(got)


def test_the_export_holds_the_encoder_tokenizer_and_labels_once(runs, export):
    variables = tf.train.list_variables(os.path.join(export, "variables", "variables"))
    vocab_size = runs["config"].vocab_size
    word_embeddings = [name for name, shape in variables if shape == [vocab_size, runs["config"].embedding_size]]
    assert len(word_embeddings) == 1, word_embeddings
    assets = sorted(os.listdir(os.path.join(export, "assets")))
    assert assets == ["albert_config.json", "labels_grammar.txt", "labels_sentiment.txt", "labels_tags.txt",
                      os.path.basename(runs["spm"])]
    with open(os.path.join(export, "assets", "labels_grammar.txt")) as f:
        assert f.read().split() == ["0", "1"]
    with open(os.path.join(export, "assets", "labels_tags.txt")) as f:
        assert {"B-PER", "B-LOC", "O"} <= set(f.read().split())
    facts = metadata.read(export)
    assert facts["kind"] == multitask.KIND
    assert {name: task["encoder"] for name, task in facts["tasks"].items()} == {
        "sentiment": "lora", "grammar": "frozen", "tags": "lora"}
    assert facts["serve_all_tasks"] == ["grammar", "sentiment", "tags"]


def test_every_signature_has_a_warmup_request_that_runs(export, served):
    requests = warmup.read_warmup_requests(os.path.join(export, warmup.WARMUP_DIR, warmup.WARMUP_FILE))
    assert sorted(name for name, _ in requests) == sorted(served.signature_defs)
    for name, inputs in requests:
        outputs = served.run(name, **inputs)
        assert outputs, name


def test_predict_answers_every_task_or_one(served, export):
    model = multitask.load(export)
    assert model.tasks == ["sentiment", "grammar", "tags"]
    assert model.labels["grammar"] == ["0", "1"]
    empty = np.array([""] * len(TEXTS), dtype=object)
    want = served.run(multitask.SERVE_ALL, text=np.array(TEXTS, dtype=object), text_b=empty)
    got = model.predict(TEXTS)
    assert sorted(got) == ["grammar", "sentiment", "tags"]
    for task, outputs in got.items():
        _assert_same(outputs, {name.split("/", 1)[1]: value for name, value in want.items()
                               if name.startswith(task + "/")}, f"predict {task}")
    one = model.predict(TEXTS, task="sentiment")
    _assert_same(one, served.run("sentiment_text", text_a=np.array(TEXTS, dtype=object), text_b=empty),
                 "predict sentiment")
    with pytest.raises(InputError, match="`task` must be one of sentiment, grammar, tags"):
        model.predict(TEXTS, task="topic")


@pytest.mark.parametrize("pipeline_task, task, labels", [("text-classification", "grammar", ["0", "1"]),
                                                        ("token-classification", "tags", None)])
def test_a_pipeline_on_the_export_answers_as_on_the_tasks_own_export(runs, export, pipeline_task, task, labels):
    import albert_tf   # pylint: disable=import-outside-toplevel
    options = {"labels": labels} if labels else {}
    want = albert_tf.pipeline(pipeline_task, runs["exports"][task], **options)(TEXTS)
    got = albert_tf.pipeline(pipeline_task, export, export_task=task)(TEXTS)
    _assert_close(got, want)
    with pytest.raises(InputError, match="multi-task export of the tasks sentiment, grammar, tags: pass "
                                         "`export_task=`"):
        albert_tf.pipeline(pipeline_task, export)


def _assert_close(got, want):
    """Pipeline answers (lists and dicts of labels, words and scores) equal, scores to 1e-5."""
    if isinstance(want, dict):
        assert sorted(got) == sorted(want)
        for key in want:
            _assert_close(got[key], want[key])
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _assert_close(a, b)
    elif isinstance(want, float):
        assert got == pytest.approx(want, abs=ATOL)
    else:
        assert got == want


def _refused(tasks, tmp_path, message):
    target = tmp_path / "refused"
    with pytest.raises(InputError, match=message) as raised:
        multitask.export_multitask(tasks, str(target))
    assert "\n" not in str(raised.value)
    assert not target.exists()


def test_a_full_fine_tune_is_refused(runs, tmp_path):
    full = multitask_fixtures.copy_run(runs["runs"]["grammar"], tmp_path / "full", freeze_encoder=False)
    _refused({"sentiment": runs["runs"]["sentiment"], "full": full}, tmp_path,
             r"Task `full` .* is a full fine-tune .*--lora_rank or --freeze_encoder")


def test_runs_from_another_encoder_are_refused_naming_both(runs, tmp_path):
    other = multitask_fixtures.other_encoder_run(runs["runs"]["grammar"], tmp_path / "other")
    _refused({"grammar": runs["runs"]["grammar"], "other": other}, tmp_path,
             r"Tasks `grammar` .* and `other` .* do not start from the same encoder weights "
             r"\(`embeddings/word_embeddings` differs\)")


def test_a_run_without_a_head_is_refused(runs, tmp_path):
    headless = multitask_fixtures.headless_run(runs["runs"]["grammar"], tmp_path / "headless")
    _refused({"sentiment": runs["runs"]["sentiment"], "headless": headless}, tmp_path, r"Task `headless` .*head")
    no_kind = multitask_fixtures.copy_run(runs["runs"]["grammar"], tmp_path / "encoder", kind="encoder")
    _refused({"encoder": no_kind}, tmp_path, r"Task `encoder` .* has no task head to serve")


@pytest.mark.parametrize("tasks, message", [
    ("a=x,a=y", "duplicate task name `a`"),
    ("serve_all=x", "is the name of a signature"),
    ("a=x,a_text=y", "signature `a_text`"),
    ("1a=x", "must be a letter"),
    ("a", "expected NAME=RUN_DIR"),
    ("", "names no task"),
])
def test_bad_task_lists_are_refused_in_one_line(tmp_path, tasks, message):
    _refused(tasks, tmp_path, message)


def _albert_export(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", **same_cpu_backend())
    return subprocess.run([sys.executable, "-m", "albert_tf.commands", "albert-export", *args], capture_output=True,
                          text=True, env=env, timeout=600)


@pytest.mark.e2e
def test_albert_export_tasks_writes_the_export_and_refuses_single_export_flags(runs, served, tmp_path):
    tasks = ",".join(f"{name}={run_dir}" for name, run_dir in runs["runs"].items())
    proc = _albert_export(f"--tasks={tasks}", f"--export_dir={tmp_path / 'cli'}", "--warmup")
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = proc.stdout.strip().splitlines()[-1]
    assert path == str(tmp_path / "cli" / "1")
    text = np.array(TEXTS, dtype=object)
    with SessionModel(path) as model:
        _assert_same(model.run(multitask.SERVE_ALL, text=text, text_b=np.array([""] * len(TEXTS), dtype=object)),
                     served.run(multitask.SERVE_ALL, text=text, text_b=np.array([""] * len(TEXTS), dtype=object)), "albert-export --tasks")
    proc = _albert_export(f"--tasks={tasks}", f"--export_dir={tmp_path / 'wrong'}", "--model=classifier")
    assert proc.returncode != 0
    assert "--model does not apply to --tasks" in proc.stderr
    proc = _albert_export(f"--export_dir={tmp_path / 'wrong'}")
    assert proc.returncode != 0
    assert "`input` is required (a checkpoint source), or `tasks`" in proc.stderr
    assert not (tmp_path / "wrong").exists()


@pytest.mark.e2e
def test_a_lora_tasks_signature_runs_through_the_c_api(export, served, tmp_path):
    """TensorFlow's C API (TF Serving's C++ loader; `tests/c_api_client.py`, no TensorFlow Python package): with
    tensorflow-text's op libraries loaded, the LoRA task's token-ids signature gives the session loader's outputs."""
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(export, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    signature = saved_model.meta_graphs[0].signature_def["sentiment"]
    inputs = _token_inputs(np.random.RandomState(5))
    text_dir = os.path.dirname(importlib.util.find_spec("tensorflow_text").origin)
    run = {"name": "sentiment", "export_dir": export,
           "inputs": {signature.inputs[name].name: name for name in inputs},
           "outputs": {name: info.name for name, info in signature.outputs.items()}}
    spec = {"runs": [], "text": {"export_dir": export, "run": run, "libraries": [
        os.path.join(text_dir, library) for library in ("python/ops/_sentencepiece_tokenizer.so",
                                                        "python/ops/_normalize_ops.so")]}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    np.savez(tmp_path / "inputs.npz", **inputs)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", **same_cpu_backend())
    proc = subprocess.run([sys.executable, os.path.join(repo_paths.TESTS, "c_api_client.py"),
                           str(tmp_path / "spec.json"), str(tmp_path / "inputs.npz"), str(tmp_path / "got.npz"),
                           str(tmp_path / "report.json")], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = dict(np.load(tmp_path / "got.npz"))
    _assert_same({name: got[name] for name in run["outputs"]}, served.run("sentiment", **inputs), "C API sentiment")


def test_a_frozen_encoder_run_keeps_the_initial_encoder_and_refuses_lora(runs, tmp_path):
    """`--freeze_encoder` trains the head alone: the run's encoder is the initial checkpoint's, bit for bit; with
    `--lora_rank` it is refused before any work."""
    from albert_tf.checkpoints.restore import restore_checkpoint   # pylint: disable=import-outside-toplevel
    from albert_tf.models.albert_model import AlbertModel   # pylint: disable=import-outside-toplevel
    from albert_tf.tasks.glue.task import run_classifier   # pylint: disable=import-outside-toplevel
    initial = AlbertModel(runs["config"])
    restore_checkpoint(initial, runs["init"])
    trained = multitask_fixtures.frozen_classifier(runs["runs"]["grammar"])
    for want, got in zip(initial.weights, trained.encoder.weights):
        assert want.numpy().tobytes() == got.numpy().tobytes(), want.path
    out = tmp_path / "both"
    with pytest.raises(InputError, match="`freeze_encoder` and `lora_rank=2` exclude each other"):
        run_classifier("CoLA", runs["glue"], str(out), **multitask_fixtures.run_args(
            runs, freeze_encoder=True, lora_rank=2))
    assert not out.exists()
