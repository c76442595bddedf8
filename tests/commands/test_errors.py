"""Errors in what the user gave: every command ends with one line `<command>: error: <message>` and exit status 2,
the message names the file or flag and what was expected, and nothing new is left behind; a bug in albert_tf
keeps its traceback, and `--verbosity=1` / `ALBERT_TF_TRACEBACK=1` show the traceback of a user error too."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from albert_tf import AlbertClassifier, AlbertModel
from albert_tf.checkpoints import convert
from albert_tf.config import AlbertConfig
from albert_tf.text.vocab import train_sentencepiece
from albert_tf.errors import InputError
from albert_tf.export.saved_model import export_saved_model
from albert_tf.tasks.glue.task import run_classifier
import original_checkpoints as oc
from glue_fixtures import MAX_SEQ, glue_root, model_files  # noqa: F401  (fixtures)
import repo_paths

REPO = pathlib.Path(repo_paths.REPO)
BIN = pathlib.Path(sys.executable).parent

# Every command, and the name it reports errors under.
COMMANDS = [
    ([str(REPO / "run_pretraining.py")], "run_pretraining.py"),
    ([str(REPO / "run_classifier.py")], "run_classifier.py"),
    ([str(REPO / "run_squad.py")], "run_squad.py"),
    ([str(REPO / "run_race.py")], "run_race.py"),
    (["albert-create-pretraining-data"], "albert-create-pretraining-data"),
    (["albert-train-vocab"], "albert-train-vocab"),
    (["albert-convert"], "albert-convert"),
    (["albert-export"], "albert-export"),
    (["albert-normalize-spm"], "albert-normalize-spm"),
    (["albert-quickstart"], "albert-quickstart"),
]


def _env(**extra):
    env = dict(os.environ)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)     # the commands' own quiet start is part of what is tested
    env.pop("ALBERT_TF_TRACEBACK", None)
    env.update(extra)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _argv(command):
    if command[0].endswith(".py"):
        return [sys.executable, *command]
    return [str(BIN / command[0])]


def run(command, *args, cwd, **env):
    return subprocess.run([*_argv(command), *map(str, args)], capture_output=True, text=True, env=_env(**env),
                          cwd=cwd, timeout=300)


def error_line(proc, name):
    """The error line of a finished command: exit status 2, no traceback, `<name>: error: ...` last."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert lines and lines[-1].startswith(f"{name}: error: "), proc.stderr[-3000:]
    return lines[-1]


@pytest.mark.parametrize("command,name", COMMANDS, ids=[c[1] for c in COMMANDS])
def test_a_bad_flag_is_one_line_and_exit_status_2(command, name, tmp_path):
    # The writer passes flags it does not know to Apache Beam, and refuses them without `--runner`.
    required = ["--input_file=in.txt", "--output_file=out.tfrecord"] if name.startswith("albert-create") else []
    proc = run(command, *required, "--no_such_flag=1", cwd=tmp_path)
    line = error_line(proc, name)
    assert proc.stderr.strip() == line, proc.stderr      # the one line, nothing else
    assert "no_such_flag" in line
    assert os.listdir(tmp_path) == []


def test_a_missing_required_flag_names_it(tmp_path):
    proc = run([str(REPO / "run_classifier.py")], "--task_name=rte", "--do_train", cwd=tmp_path)
    line = error_line(proc, "run_classifier.py")
    assert proc.stderr.strip() == line
    assert "--data_dir" in line and "--output_dir" in line


def test_traceback_of_a_user_error_on_request(tmp_path):
    args = ("--task_name=rte", f"--data_dir={tmp_path / 'nowhere'}", f"--output_dir={tmp_path / 'out'}", "--do_train")
    plain = run([str(REPO / "run_classifier.py")], *args, cwd=tmp_path)
    assert "albert_config_file" in error_line(plain, "run_classifier.py")
    for proc in (run([str(REPO / "run_classifier.py")], *args, cwd=tmp_path, ALBERT_TF_TRACEBACK="1"),
                 run([str(REPO / "run_classifier.py")], *args, "--verbosity=1", cwd=tmp_path)):
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "Traceback" in proc.stderr and "InputError" in proc.stderr, proc.stderr[-3000:]
        assert proc.stderr.strip().splitlines()[-1] == error_line(plain, "run_classifier.py")


def test_a_bug_keeps_its_traceback(tmp_path):
    code = ("import sys; sys.argv = ['albert-demo']; from albert_tf.commands import app as cli\n"
            "def main(argv):\n    return {}['missing key']\n"
            "cli.run_app(main, 'A demo command that fails with a bug in its own code, not in what the user gave.')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), cwd=tmp_path,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" in proc.stderr and "KeyError: 'missing key'" in proc.stderr
    assert "albert-demo: error:" not in proc.stderr


# --- the inputs that had no clear word --------------------------------------------------------------------


def _built(model, seq=8):
    ids = np.ones((1, seq), np.int32)
    model({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids}, training=False)
    return model


@pytest.fixture(scope="module")
def small_spm(tmp_path_factory):
    """A SentencePiece model of a few dozen pieces, trained here."""
    root = tmp_path_factory.mktemp("small_spm")
    corpus = root / "corpus.txt"
    corpus.write_text("".join(f"a short line of text number {i} about cats and dogs .\n" for i in range(200)))
    return train_sentencepiece(str(corpus), str(root / "small"), vocab_size=60, hard_vocab_limit=False,
                               character_coverage=1.0, minloglevel=2)


def test_export_refuses_a_sentencepiece_model_of_another_vocab_size(small_spm, tmp_path):
    pieces = spm.SentencePieceProcessor(model_file=small_spm).get_piece_size()
    config = AlbertConfig(vocab_size=200, embedding_size=8, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    release = tmp_path / "release"
    oc.save_original_checkpoint(_built(AlbertModel(config)), str(release / "model.ckpt-best"))
    config.to_json_file(str(release / "albert_config.json"))
    export_dir = tmp_path / "export"
    proc = run(["albert-export"], f"--input={release}", f"--export_dir={export_dir}", f"--spm_model_file={small_spm}",
               "--max_seq_length=16", cwd=tmp_path)
    line = error_line(proc, "albert-export")
    assert small_spm in line and f"{pieces} pieces" in line and "`vocab_size`" in line and "200" in line, line
    assert not export_dir.exists()
    # The Python API refuses it the same way, before anything is written.
    with pytest.raises(InputError, match=f"has {pieces} pieces but `vocab_size`"):
        export_saved_model(_built(AlbertModel(config)), str(export_dir), spm_model_file=small_spm, max_seq_length=16)
    assert not export_dir.exists()


def test_a_truncated_checkpoint_of_ours_as_init_checkpoint(glue_root, model_files, tmp_path):  # noqa: F811
    prefix = oc.save_our_checkpoint(_built(AlbertClassifier(model_files["config"], num_labels=2)),
                                    str(tmp_path / "run" / "model.ckpt-12"))
    oc.truncate_data(prefix)
    out = tmp_path / "out"
    with pytest.raises(InputError, match="is damaged") as error:
        run_classifier("rte", glue_root, str(out), albert_config_file=model_files["config_file"],
                       spm_model_file=model_files["spm"], init_checkpoint=prefix, max_seq_length=MAX_SEQ,
                       do_train=True, train_step=1, train_batch_size=2)
    assert prefix in str(error.value)
    assert not out.exists(), os.listdir(out)         # found before any work: no feature cache
    # The runner's one-line error, through the command line.
    proc = run([str(REPO / "run_classifier.py")], "--task_name=rte", f"--data_dir={glue_root}",
               f"--output_dir={out}", f"--albert_config_file={model_files['config_file']}",
               f"--spm_model_file={model_files['spm']}", f"--init_checkpoint={prefix}",
               f"--max_seq_length={MAX_SEQ}", "--do_train", cwd=tmp_path)
    assert "is damaged" in error_line(proc, "run_classifier.py")


def test_random_bytes_as_pretraining_input_file(model_files, tmp_path):  # noqa: F811
    data = tmp_path / "train.tfrecord"
    data.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    out = tmp_path / "out"
    proc = run([str(REPO / "run_pretraining.py")], f"--albert_config_file={model_files['config_file']}",
               f"--input_file={data}", f"--output_dir={out}", "--max_seq_length=32", "--do_train", cwd=tmp_path)
    line = error_line(proc, "run_pretraining.py")
    assert str(data) in line and "not a TFRecord file" in line and "create_pretraining_data" in line, line
    assert "{{function_node" not in line and "[Op:" not in line
    assert not out.exists()


@pytest.mark.parametrize("with_config", [False, True], ids=["weights_only", "with_config"])
def test_a_hugging_face_directory_with_only_pytorch_weights(with_config, tmp_path):
    directory = tmp_path / "albert-base-v2"
    directory.mkdir()
    (directory / "pytorch_model.bin").write_bytes(b"PK\x03\x04 not to be unpickled")
    if with_config:
        (directory / "config.json").write_text('{"model_type": "albert", "vocab_size": 30000}')
    with pytest.raises(InputError, match="pickled PyTorch checkpoint.*never unpickles.*model.safetensors"):
        AlbertModel.from_pretrained(str(directory))
    proc = run(["albert-convert"], f"--input={directory}", f"--output_dir={tmp_path / 'out'}", cwd=tmp_path)
    assert "pytorch_model.bin" in error_line(proc, "albert-convert")
    assert not (tmp_path / "out").exists()


def test_classifier_takes_its_config_and_sentencepiece_model_from_a_hugging_face_init_checkpoint(
        glue_root, model_files, tmp_path):  # noqa: F811
    release = tmp_path / "release"
    oc.save_original_checkpoint(_built(AlbertModel(model_files["config"])), str(release / "model.ckpt-best"))
    model_files["config"].to_json_file(str(release / "albert_config.json"))
    tf.io.gfile.copy(model_files["spm"], str(release / "30k-clean.model"))
    hf_dir = tmp_path / "hf"
    convert(str(release), str(hf_dir), output_format="hf")
    assert sorted(os.listdir(hf_dir)) == ["config.json", "model.safetensors", "spiece.model"]
    out = tmp_path / "out"
    # No `albert_config_file`, no `spm_model_file`: both come from the HF directory, as README says.
    proc = run([str(REPO / "run_classifier.py")], "--task_name=rte", f"--data_dir={glue_root}",
               f"--output_dir={out}", f"--init_checkpoint={hf_dir}", f"--max_seq_length={MAX_SEQ}", "--do_eval",
               "--eval_batch_size=2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = (out / "eval_results.txt").read_text()
    assert "eval_accuracy = " in results and "global_step = 0" in results


def test_a_failed_run_leaves_no_feature_cache(glue_root, model_files, tmp_path):  # noqa: F811
    other = AlbertConfig.from_dict(dict(model_files["config"].to_dict(), hidden_size=48, intermediate_size=96))
    prefix = oc.save_original_checkpoint(_built(AlbertModel(other)), str(tmp_path / "other" / "model.ckpt-best"))
    out = tmp_path / "out"
    with pytest.raises(InputError, match="does not fit"):
        run_classifier("rte", glue_root, str(out), albert_config_file=model_files["config_file"],
                       spm_model_file=model_files["spm"], init_checkpoint=prefix, max_seq_length=MAX_SEQ,
                       do_train=True, train_step=1, train_batch_size=2)
    # The features were written (the checkpoint is read after them) and removed when the run failed.
    assert not (out / "rte_train.tf_record").exists(), os.listdir(out)
    assert [name for name in os.listdir(out) if name.endswith(".tf_record")] == []
