"""Every runner's evaluation and prediction under KERAS_BACKEND=jax on 8 CPU devices gives the TensorFlow path's
files (tests/inference_runs.py runs them, one process per backend): the same text where the files hold decisions
(labels, answers, tags, the GLUE leaderboard file), and numbers within float32 rounding where they hold scores
(probabilities, losses, metrics). The MNLI run predicts from `model.ckpt-best` of the original's layout (TF1
names, Adam slots) in its output directory. The inference step compiles once per shape. An export under JAX
is refused in one line and leaves no directory.

Runs in the backends tier (.ci/run) under KERAS_BACKEND=jax: it needs jax.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")

import original_checkpoints as oc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
REPO = os.path.dirname(TESTS)
NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+")
# The files the runners write, per runner: scores compared to float32 rounding, the rest as text.
EXPECTED = {
    "mnli": {"test_results.tsv", "submit_results.tsv", "MNLI-m.tsv"},
    "squad_v1": {"predictions.json", "nbest_predictions.json", "eval_results.txt"},
    "squad_v2": {"predictions.json", "nbest_predictions.json", "null_odds.json", "eval_results.txt"},
    "race": {"eval_results.txt", "predictions.tsv", "predict_results.txt"},
    "ner": {"eval_results.txt", "predictions.txt", "predict_results.txt"},
    "pretraining": {"eval_results.txt"},
}


def _run(backend, root, out):
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=os.pathsep.join([REPO, TESTS]),
               XLA_FLAGS="--xla_force_host_platform_device_count=8", TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, os.path.join(TESTS, "inference_runs.py"), str(root), str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def assert_same_text_and_numbers(actual, expected, what):
    """The same text with the numbers taken out, and the numbers within float32 rounding of a tiny model."""
    assert NUMBER.sub("#", actual) == NUMBER.sub("#", expected), what
    got, want = (np.array([float(x) for x in NUMBER.findall(text)]) for text in (actual, expected))
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-6, err_msg=what)


@pytest.mark.e2e
def test_every_runner_evaluates_and_predicts_under_jax_as_under_tensorflow(tmp_path):
    root = tmp_path / "root"
    _run("tensorflow", root, tmp_path / "tf")
    _run("jax", root, tmp_path / "jax")
    for runner, names in EXPECTED.items():
        reference = oc.files_with_text(str(tmp_path / "tf" / runner))
        ours = oc.files_with_text(str(tmp_path / "jax" / runner))
        assert names <= set(reference), (runner, sorted(reference))
        assert sorted(ours) == sorted(reference), runner
        for name in reference:
            if name in ("submit_results.tsv", "MNLI-m.tsv", "best_trial.txt"):
                assert ours[name] == reference[name], (runner, name)
            else:
                assert_same_text_and_numbers(ours[name], reference[name], f"{runner}/{name}")
    # The answers, tags and labels are the decisions: the same text.
    for runner, name in (("squad_v1", "predictions.json"), ("squad_v2", "predictions.json"),
                         ("ner", "predictions.txt")):
        assert (tmp_path / "jax" / runner / name).read_text() == (tmp_path / "tf" / runner / name).read_text()


def test_the_jax_step_compiles_once_per_shape_and_reads_restored_weights():
    import keras
    if keras.backend.backend() != "jax":
        pytest.skip("the jitted step of the JAX backend")
    from albert_tf.config import AlbertConfig
    from albert_tf.tasks.glue.model import AlbertClassifier
    from albert_tf.training import inference

    config = AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    model = AlbertClassifier(config, num_labels=2)
    step = inference.make_step(model, lambda f: {"probabilities": model(f, training=False)["probabilities"]})
    rng = np.random.default_rng(0)

    def batch(n, seq):
        return {"input_ids": rng.integers(5, 40, [n, seq]).astype(np.int32),
                "input_mask": np.ones([n, seq], np.int32), "segment_ids": np.zeros([n, seq], np.int32)}

    first = batch(4, 32)
    want = np.asarray(model(first, training=False)["probabilities"])
    for features in (first, batch(4, 32), batch(4, 32), batch(2, 64), batch(2, 64)):
        step(features)
    assert step.traces == 2
    np.testing.assert_allclose(np.asarray(step(first)["probabilities"]), want, atol=1e-6)
    for variable in model.classifier_head.weights:
        variable.assign(np.zeros(variable.shape, "float32"))
    np.testing.assert_allclose(np.asarray(step(first)["probabilities"]), 0.5, atol=1e-6)
    assert step.traces == 2


def test_an_export_under_jax_is_refused_in_one_line_and_writes_nothing(tmp_path):
    import keras
    if keras.backend.backend() != "jax":
        pytest.skip("the refusal of the JAX backend")
    from albert_tf.errors import InputError
    from albert_tf.export.saved_model import export_saved_model
    from albert_tf.models.albert_model import AlbertModel
    from albert_tf.config import AlbertConfig

    model = AlbertModel(AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=32))
    with pytest.raises(InputError, match="KERAS_BACKEND=tensorflow albert-export") as error:
        export_saved_model(model, str(tmp_path / "export"), max_seq_length=16)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "export").exists()
