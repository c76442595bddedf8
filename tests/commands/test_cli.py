"""Every command's `--help` explains the command and lists its flags; commands start without TF chatter."""

import os
import pathlib
import subprocess
import sys

import pytest
import repo_paths

REPO = pathlib.Path(repo_paths.REPO)
BIN = pathlib.Path(sys.executable).parent

# (command, a flag of its own that --help must list, words its paragraph must contain)
COMMANDS = [
    ([str(REPO / "run_pretraining.py")], "--num_train_steps", ["pretrain"]),
    ([str(REPO / "run_classifier.py")], "--task_name", ["GLUE"]),
    ([str(REPO / "run_squad.py")], "--version_2_with_negative", ["SQuAD"]),
    ([str(REPO / "run_race.py")], "--max_qa_length", ["RACE"]),
    (["albert-create-pretraining-data"], "--dupe_factor", ["TFRecord"]),
    (["albert-train-vocab"], "--vocab_size", ["SentencePiece"]),
    (["albert-convert"], "--format", ["checkpoint"]),
    (["albert-export"], "--export_dir", ["SavedModel"]),
    (["albert-normalize-spm"], "--spm_model_file", ["SentencePiece", "preprocess_text"]),
    (["albert-quickstart"], "--num_train_steps", ["pydoc_data", "SentencePiece", "SavedModel", "quickstart_output"]),
    (["albert-reproduce"], "--glue_dir", ["GLUE", "SQuAD", "RACE", "results.md"]),
]

_CHATTER = ("cuInit", "oneDNN", "cpu_feature_guard", "cudart_stub", "rebuild TensorFlow")


def _env():
    env = dict(os.environ)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the commands' own default is under test
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _argv(command):
    if command[0].endswith(".py"):
        return [sys.executable, *command]
    script = BIN / command[0]
    if not script.exists():
        pytest.skip(f"console script {script} is not installed (run `pip install -e .`)")
    return [str(script)]


@pytest.mark.parametrize("command,own_flag,words", COMMANDS, ids=[c[0][0].split("/")[-1] for c in COMMANDS])
def test_help_starts_with_a_paragraph_then_the_flags(command, own_flag, words):
    result = subprocess.run([*_argv(command), "--help"], capture_output=True, text=True, env=_env(), cwd=REPO,
                            timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    text = result.stdout
    first_line = text.strip().splitlines()[0]
    assert not first_line.startswith("USAGE"), text[:500]
    paragraph = text.strip().split("\n\n")[0]
    assert len(paragraph.split()) >= 25, paragraph
    for word in words:
        assert word in paragraph, (word, paragraph)
    assert own_flag in text, text[-3000:]
    for chatter in _CHATTER:
        assert chatter not in result.stderr, result.stderr[:2000]


def test_a_command_starts_without_tensorflow_chatter(tmp_path):
    """A real run on a CPU-only machine: nothing from TF's C++ start-up before the command's first line."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"sentence number {i} of a tiny corpus, with words.\n" for i in range(400)))
    result = subprocess.run(
        [*_argv(["albert-train-vocab"]), f"--input={corpus}", f"--model_prefix={tmp_path / 'sp'}",
         "--vocab_size=60"],
        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "sp.model").exists()
    for chatter in _CHATTER:
        assert chatter not in result.stderr, result.stderr[:3000]


def test_user_log_level_is_respected():
    """`TF_CPP_MIN_LOG_LEVEL` set by the user is left as it is."""
    code = ("import os; from albert_tf.commands import app as cli; cli.quiet_tensorflow_start(); "
            "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])")
    env = _env()
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "0"
