"""`albert_tf.export.mediapipe` (`albert-export --format=mediapipe`): MediaPipe's own `TextClassifier` and
`TextEmbedder` (the `mediapipe` package, in an environment without TensorFlow and albert_tf) run the export of a
classifier the original code fine-tuned on raw text and give the original's probabilities and pooled output;
int8 keeps the labels; the pipelines read the export as a LiteRT one."""

import io
import json
import logging
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import sentencepiece as spm

import albert_tf
import mediapipe_fixtures as mpf
import normalization_corpus
from albert_tf.errors import InputError
from albert_tf.export import lite
from albert_tf.export import mediapipe as mediapipe_export
from albert_tf.text import normalization

FLOAT_ATOL = 1e-4
INT8_ATOL = 0.05
needs_mediapipe = pytest.mark.skipif(mpf.mediapipe_missing() is not None, reason=str(mpf.mediapipe_missing()))


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return mpf.build_release(tmp_path_factory.mktemp("release"))


def _export(release, directory, model="classifier", **kwargs):
    labels = list(mpf.LABELS) if model == "classifier" else None
    return mediapipe_export.export_mediapipe_from_checkpoint(
        release["checkpoint"], str(directory), model=model, num_labels=3, albert_config_file=release["config_file"],
        spm_model_file=release["spm"], max_seq_length=mpf.SEQ, labels=labels, **kwargs)


@pytest.fixture(scope="module")
def classifier(release, tmp_path_factory):
    return _export(release, tmp_path_factory.mktemp("classifier"))


@pytest.fixture(scope="module")
def encoder(release, tmp_path_factory):
    return _export(release, tmp_path_factory.mktemp("encoder"), model="encoder")


def test_the_file_packs_the_normalized_tokenizer_and_the_labels(release, classifier):
    with open(classifier, "rb") as f:
        data = f.read()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        packed = {name: archive.read(name) for name in archive.namelist()}
    assert sorted(packed) == [mediapipe_export.LABELS_FILE, mediapipe_export.SPM_FILE]
    assert packed[mediapipe_export.LABELS_FILE].decode().split() == list(mpf.LABELS)
    beside = os.path.join(os.path.dirname(classifier), mediapipe_export.SPM_FILE)
    with open(beside, "rb") as f:
        assert f.read() == packed[mediapipe_export.SPM_FILE]
    processor = spm.SentencePieceProcessor(model_proto=packed[mediapipe_export.SPM_FILE])
    assert processor.EncodeAsIds("Naïve CAFÉ") == processor.EncodeAsIds("naive cafe")
    # LiteRT runs the file with the metadata and the archive; only the probabilities are served.
    runner = lite.LiteModel(classifier)
    assert list(runner.output_specs) == ["probabilities"]
    assert sorted(runner.input_specs) == ["input_ids", "input_mask", "segment_ids"]
    assert sorted(mediapipe_export.signature_input_order(data)) == sorted(runner.input_specs)


@needs_mediapipe
def test_text_classifier_gives_the_original_probabilities_on_raw_text(release, classifier):
    want, _ = mpf.original_outputs(release, mpf.SENTENCES)
    got = mpf.as_matrix(mpf.run_client("classifier", classifier, mpf.SENTENCES))
    print(f"TextClassifier, float: max abs probability difference {np.max(np.abs(got - want)):.2e} "
          f"on {len(mpf.SENTENCES)} raw sentences")
    np.testing.assert_allclose(got, want, atol=FLOAT_ATOL)


@needs_mediapipe
def test_text_classifier_follows_the_original_on_the_mixed_corpus(release, classifier):
    # The mixed corpus of the normalization test (accents, other scripts, quotes, Unicode spaces, both casings),
    # less the lines where what no rule expresses fires; MediaPipe's own tokenizer (its SentencePiece, its ASCII
    # lower-casing) reads the first 14 pieces of each.
    sp_model = spm.SentencePieceProcessor(model_file=release["spm"])
    lines = [line for line in normalization_corpus.mixed_corpus(1000)
             if not normalization_corpus.original_ids(sp_model, line, True)[1]
             and not normalization_corpus.final_sigma_fires(normalization_corpus.original_preprocess_text(line, False))]
    want, _ = mpf.original_outputs(release, lines)
    got = mpf.as_matrix(mpf.run_client("classifier", classifier, lines))
    print(f"TextClassifier, float: max abs probability difference {np.max(np.abs(got - want)):.2e} on "
          f"{len(lines)} corpus lines")
    np.testing.assert_allclose(got, want, atol=FLOAT_ATOL)


@needs_mediapipe
def test_text_embedder_gives_the_pooled_output(release, encoder):
    _, want = mpf.original_outputs(release, mpf.SENTENCES)
    got = np.array(mpf.run_client("embedder", encoder, mpf.SENTENCES))
    print(f"TextEmbedder, float: max abs pooled-output difference {np.max(np.abs(got - want)):.2e}")
    np.testing.assert_allclose(got, want, atol=FLOAT_ATOL)


@needs_mediapipe
def test_dynamic_int8_keeps_every_label_of_held_out_sentences(release, tmp_path):
    # `--quantize=dynamic` (int8 weights): the int8 export to deploy (docs/deploying_small.md). Full integer
    # `--quantize=int8` does not keep this classifier's labels, in LiteRT as in MediaPipe (benchmarks/README.md).
    quantize = "dynamic"
    held_out = mpf.clear_sentences(release, mpf.random_sentences(48, seed=11))
    assert len(held_out) >= 24, len(held_out)
    path = _export(release, tmp_path / "export", quantize=quantize)
    want, _ = mpf.original_outputs(release, held_out)
    got = mpf.as_matrix(mpf.run_client("classifier", path, held_out))
    print(f"TextClassifier, {quantize}: max abs probability difference {np.max(np.abs(got - want)):.3f} on "
          f"{len(held_out)} held-out sentences")
    np.testing.assert_array_equal(np.argmax(got, -1), np.argmax(want, -1))
    np.testing.assert_allclose(got, want, atol=INT8_ATOL)


def test_pipelines_read_the_export_as_a_litert_one(release, classifier, encoder):
    want, pooled = mpf.original_outputs(release, mpf.SENTENCES)
    answers = albert_tf.pipeline("text-classification", classifier)(list(mpf.SENTENCES))
    got = np.array([[a["scores"][i] for i in range(3)] for a in answers])
    assert [a["label"] for a in answers] == [mpf.LABELS[i] for i in np.argmax(want, -1)]
    np.testing.assert_allclose(got, want, atol=FLOAT_ATOL)
    features = albert_tf.pipeline("feature-extraction", os.path.dirname(encoder))(list(mpf.SENTENCES))
    np.testing.assert_allclose(np.array([f["pooled_output"] for f in features]), pooled, atol=FLOAT_ATOL)
    assert all("sequence_output" not in f for f in features)


def test_the_pipeline_of_a_mediapipe_export_warns_where_mediapipe_stops_reading(classifier, caplog):
    pipe = albert_tf.pipeline("text-classification", classifier)
    with caplog.at_level(logging.WARNING):
        pipe(["The book was read.", "The book\x00 was read."])
    assert "input 1 holds U+0000: MediaPipe's text tasks stop reading a text there" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        pipe("The book was read.")
    assert "U+0000" not in caplog.text


def test_refusals_name_what_is_expected(release, tmp_path):
    with pytest.raises(InputError, match="classifier or an encoder"):
        _export(release, tmp_path / "squad", model="squad_v1")
    with pytest.raises(InputError, match="the batch is 1"):
        _export(release, tmp_path / "batch", batch_size=4)
    with pytest.raises(InputError, match="not a SentencePiece model"):
        normalization.normalized_model(b"\x01\x02not a model", source="x.model")


@pytest.mark.e2e
def test_albert_export_format_mediapipe(release, tmp_path):
    env = dict(os.environ, PYTHONPATH=mpf.REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [sys.executable, "-m", "albert_tf.commands", "albert-export", f"--input={release['checkpoint']}",
               f"--albert_config_file={release['config_file']}", f"--spm_model_file={release['spm']}",
               "--model=classifier", "--num_labels=3", f"--labels={','.join(mpf.LABELS)}", "--format=mediapipe",
               f"--max_seq_length={mpf.SEQ}", f"--export_dir={tmp_path / 'out'}"]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    path = proc.stdout.strip().splitlines()[-1]
    assert path == str(tmp_path / "out" / "model.tflite")
    assert sorted(os.listdir(tmp_path / "out")) == sorted([
        "model.tflite", lite.METADATA_FILE, lite.CONFIG_FILE, os.path.basename(release["spm"]),
        mediapipe_export.SPM_FILE])
    with open(tmp_path / "out" / lite.METADATA_FILE) as f:
        assert json.load(f)["labels"] == list(mpf.LABELS)
    if mpf.mediapipe_missing() is None:
        want, _ = mpf.original_outputs(release, mpf.SENTENCES)
        np.testing.assert_allclose(mpf.as_matrix(mpf.run_client("classifier", path, mpf.SENTENCES)), want,
                                   atol=FLOAT_ATOL)
    proc = subprocess.run(command[:-1] + ["--model=squad_v1", f"--export_dir={tmp_path / 'squad'}"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode != 0 and "MediaPipe's text tasks run a classifier or an encoder" in proc.stderr
