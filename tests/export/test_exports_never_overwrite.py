"""An export never replaces another silently and never writes where it cannot: a LiteRT or MediaPipe export into
a directory that holds one is refused (naming --overwrite; `overwrite=True` replaces it), a label named twice is
refused, an `export_dir` that is a regular file is refused for every format, in the library and in
`albert-export`, one line each and nothing written."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from albert_tf.checkpoints import save_tf1_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError
from albert_tf.export import lite
from albert_tf.export import mediapipe as mediapipe_export
from albert_tf.export.saved_model import export_saved_model
from albert_tf.tasks.glue.model import AlbertClassifier
import repo_paths

T = 16


def _classifier(seed):
    tf.keras.utils.set_random_seed(seed)
    config = AlbertConfig(vocab_size=300, embedding_size=16, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    model = AlbertClassifier(config, num_labels=2)
    ids = tf.ones([1, 8], tf.int32)
    model({"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids)})
    return model


def _snapshot(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def test_a_litert_export_never_replaces_another_unless_asked(tmp_path):
    out = tmp_path / "out"
    lite.export_tflite(_classifier(1), str(out), max_seq_length=T, labels=["no", "yes"])
    before = _snapshot(out)
    with pytest.raises(InputError, match=r"already holds a LiteRT export \(`model.tflite`\).*--overwrite"):
        lite.export_tflite(_classifier(2), str(out), max_seq_length=T, quantize="dynamic")
    with pytest.raises(InputError, match="already holds a LiteRT export.*--overwrite"):
        mediapipe_export.export_mediapipe(_classifier(2), str(out), spm_model_file="unused.model", max_seq_length=T)
    assert _snapshot(out) == before
    lite.export_tflite(_classifier(2), str(out), max_seq_length=T, quantize="dynamic", overwrite=True)
    assert _snapshot(out)["model.tflite"] != before["model.tflite"]


def test_labels_named_twice_and_an_export_dir_that_is_a_file_are_refused(tmp_path):
    with pytest.raises(InputError, match="`labels` names 'yes' more than once"):
        lite.export_tflite(_classifier(1), str(tmp_path / "twice"), max_seq_length=T, labels=["yes", "yes"])
    assert not (tmp_path / "twice").exists()
    a_file = tmp_path / "a_file"
    a_file.write_text("mine")
    with pytest.raises(InputError, match="`output_dir=.*a_file` is a file; expected a directory"):
        lite.export_tflite(_classifier(1), str(a_file), max_seq_length=T)
    with pytest.raises(InputError, match="`export_dir=.*a_file` is a file; expected a directory"):
        export_saved_model(_classifier(1), str(a_file), max_seq_length=T, text_signature=False, warmup=False)
    with pytest.raises(InputError, match="is below the file `.*a_file`"):
        export_saved_model(_classifier(1), str(a_file / "models"), max_seq_length=T, text_signature=False,
                           warmup=False)
    assert a_file.read_text() == "mine" and sorted(os.listdir(tmp_path)) == ["a_file"]


@pytest.mark.e2e
def test_albert_export_refuses_in_one_line_and_writes_nothing(tmp_path):
    model = _classifier(3)
    save_tf1_checkpoint(model, str(tmp_path / "model.ckpt-1"))
    model.config.to_json_file(str(tmp_path / "albert_config.json"))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "model.tflite").write_bytes(b"an earlier export")
    (tmp_path / "a_file").write_text("mine")
    env = dict(os.environ, PYTHONPATH=repo_paths.REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    base = [sys.executable, "-m", "albert_tf.commands", "albert-export", f"--input={tmp_path / 'model.ckpt-1'}",
            f"--albert_config_file={tmp_path / 'albert_config.json'}", "--model=classifier",
            f"--max_seq_length={T}"]
    cases = [
        (["--format=tflite", f"--export_dir={tmp_path / 'taken'}"], "already holds a LiteRT export", "--overwrite"),
        (["--format=tflite", f"--export_dir={tmp_path / 'new'}", "--labels=yes,yes"], "names 'yes' more than once",
         "`labels`"),
        (["--format=saved_model", f"--export_dir={tmp_path / 'a_file'}"], "is a file; expected a directory",
         "`export_dir="),
    ]
    for args, message, named in cases:
        proc = subprocess.run(base + args, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        line = proc.stderr.strip().splitlines()[-1]
        assert line.startswith("albert-export: error: ") and message in line and named in line, line
    assert (tmp_path / "taken" / "model.tflite").read_bytes() == b"an earlier export"
    assert sorted(os.listdir(tmp_path / "taken")) == ["model.tflite"] and not (tmp_path / "new").exists()
    assert (tmp_path / "a_file").read_text() == "mine"
