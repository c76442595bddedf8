"""End to end: train -> predict -> evaluate on a memorisable toy set (library call for v1, the CLI for v2)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.tasks.squad import data as squad
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.squad import task as squad_task
import original_checkpoints as oc
import squad_fixtures as fx
from recording import Built, recording
from repo_paths import REPO



@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("squad_run")
    spm_file, _, config_file = fx.model_files(d)
    return d, spm_file, config_file


def test_num_train_steps_as_the_original():
    # SQuAD 1.1 (87599 examples, batch 48, 2 epochs) and 2.0 (130319, 48, 3) of the original README.
    assert squad_task.num_train_steps_and_warmup(87599, 48, 2.0, 0.1) == (3649, 364)
    assert squad_task.num_train_steps_and_warmup(130319, 48, 3.0, 0.1) == (8144, 814)


@pytest.fixture(scope="module")
def v1_run(env):
    d, spm_file, config_file = env
    data = fx.write_toy(str(d / "toy_v1.json"), with_negative=False)
    out = str(d / "v1_out")
    result = squad_task.run_squad(
        output_dir=out, albert_config_file=config_file, spm_model_file=spm_file, train_file=data,
        predict_file=data, do_train=True, do_predict=True, max_seq_length=48, doc_stride=32, max_query_length=12,
        train_batch_size=4, predict_batch_size=16, learning_rate=3e-3, num_train_epochs=40.0,
        save_checkpoints_steps=25, iterations_per_loop=25)
    return out, result


@pytest.mark.e2e
def test_v1_train_predict_evaluate(env, v1_run):
    d, spm_file, config_file = env
    out, result = v1_run
    assert result["num_train_steps"] == 50
    assert result["eval"]["f1"] >= 80.0, result["eval"]
    files = set(os.listdir(out))
    assert {"predictions.json", "nbest_predictions.json", "eval_results.txt", "best_trial.txt",
            "model.ckpt-best.index", "train.tf_record", "predict.tf_record", "predict_left_file.json"} <= files
    assert not [f for f in files if ".tmp-" in f]
    predictions = json.loads(open(os.path.join(out, "predictions.json")).read())
    gold = {qa["id"]: qa["answers"][0]["text"] for a in fx.toy_dataset(False)["data"] for p in a["paragraphs"]
            for qa in p["qas"]}
    assert sum(predictions[k] == v for k, v in gold.items()) >= 4
    eval_text = open(os.path.join(out, "eval_results.txt")).read()
    assert "f1 = " in eval_text and "best perf happened at step:" in eval_text

    # Predict-only on a test file without answers: predictions from model.ckpt-best, no metrics.
    test_data = fx.toy_dataset(False)
    for article in test_data["data"]:
        for qa in article["paragraphs"][0]["qas"]:
            qa["answers"] = []
    test_file = d / "toy_test.json"
    test_file.write_text(json.dumps(test_data))
    test_out = str(d / "v1_test_out")
    for name in ("model.ckpt-best.index", "model.ckpt-best.data-00000-of-00001"):
        os.makedirs(test_out, exist_ok=True)
        tf.io.gfile.copy(os.path.join(out, name), os.path.join(test_out, name))
    result = squad_task.run_squad(
        output_dir=test_out, albert_config_file=config_file, spm_model_file=spm_file, predict_file=str(test_file),
        do_predict=True, max_seq_length=48, doc_stride=32, max_query_length=12)
    assert "eval" not in result
    test_predictions = json.loads(open(os.path.join(test_out, "predictions.json")).read())
    assert test_predictions == predictions


@pytest.mark.slow
def test_v1_export_saved_model(env, v1_run):
    """`export_dir` exports model.ckpt-best through `albert_tf.export.saved_model`; the SavedModel gives its logits."""
    d, spm_file, config_file = env
    out, _ = v1_run
    result = squad_task.run_squad(output_dir=out, albert_config_file=config_file, spm_model_file=spm_file,
                                  export_dir=str(d / "v1_export"), max_seq_length=48, max_query_length=12)
    loaded = tf.saved_model.load(result["export_path"])
    features = next(iter(squad.squad_dataset(os.path.join(out, "predict.tf_record"), 48, False, 2, False,
                                             is_v2=False)))
    served = loaded.signatures["serving_default"](
        input_ids=features["input_ids"], input_mask=features["input_mask"], segment_ids=features["segment_ids"])
    model = AlbertSquadV1(AlbertConfig.from_json_file(config_file))
    restore_checkpoint(model, os.path.join(out, "model.ckpt-best"))
    expected = model({k: features[k] for k in ("input_ids", "input_mask", "segment_ids")})
    np.testing.assert_allclose(served["start_logits"].numpy(), expected["start_logits"].numpy(), atol=1e-5)
    # And the original's albert_model.tflite, with the TFLite output names start_logits / end_logits.
    interpreter = tf.lite.Interpreter(model_path=result["tflite_file"])
    runner = interpreter.get_signature_runner("serving_default")
    one = {k: features[k][:1].numpy() for k in ("input_ids", "input_mask", "segment_ids")}
    lite = runner(**one)
    np.testing.assert_allclose(lite["start_logits"], expected["start_logits"].numpy()[:1], atol=1e-4)
    np.testing.assert_allclose(lite["end_logits"], expected["end_logits"].numpy()[:1], atol=1e-4)


@pytest.mark.e2e
def test_predict_dataset_pads_full_batches_for_tpu(v1_run):
    out, _ = v1_run
    path = os.path.join(out, "predict.tf_record")
    n = sum(1 for _ in tf.data.TFRecordDataset(path))
    batches = list(squad_task.predict_dataset(path, 48, 4, False, n, pad_to_full_batches=True))
    ids = np.concatenate([b["unique_ids"].numpy() for b in batches])
    assert all(b["input_ids"].shape == (4, 48) for b in batches)
    assert len(ids) == n + (-n) % 4 and sorted(set(ids)) == list(range(1000000000, 1000000000 + n))


@pytest.mark.e2e
def test_v2_cli_train_predict_evaluate(env):
    d, spm_file, config_file = env
    data = fx.write_toy(str(d / "toy_v2.json"), with_negative=True)
    out = str(d / "v2_out")
    cmd = [sys.executable, os.path.join(REPO, "run_squad.py"), f"--albert_config_file={config_file}",
           f"--spm_model_file={spm_file}", f"--output_dir={out}", f"--train_file={data}", f"--predict_file={data}",
           f"--train_feature_file={d / 'v2_train.tf_record'}", f"--predict_feature_file={d / 'v2_dev.tf_record'}",
           f"--predict_feature_left_file={d / 'v2_dev_left.json'}", "--do_train", "--do_predict",
           "--version_2_with_negative", "--max_seq_length=64", "--doc_stride=32", "--max_query_length=12",
           "--train_batch_size=4", "--predict_batch_size=16", "--learning_rate=3e-3", "--num_train_epochs=40",
           "--save_checkpoints_steps=50", "--iterations_per_loop=50", "--dropout_prob=0.0", "--random_seed=1"]
    env_vars = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env_vars, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = {}
    for line in open(os.path.join(out, "eval_results.txt")):
        if " = " in line:
            key, value = line.strip().split(" = ", 1)
            metrics[key] = value
    assert float(metrics["f1"]) >= 80.0, metrics
    assert float(metrics["NoAns_f1"]) == 100.0 and "null_score_diff_threshold" in metrics
    odds = json.loads(open(os.path.join(out, "null_odds.json")).read())
    predictions = json.loads(open(os.path.join(out, "predictions.json")).read())
    assert set(odds) == set(predictions) and len(odds) == 10
    assert all(predictions[k] == "" for k in predictions if "n" in k[2:])
    # Impossible questions get larger null scores than every answerable one but at most one.
    answerable = sorted(v for k, v in odds.items() if "q" in k)
    impossible = sorted(v for k, v in odds.items() if "n" in k[2:])
    assert answerable[-2] < impossible[0]

    # Bad lengths: a clear error, not a traceback from deep inside.
    bad = subprocess.run(cmd[:4] + [f"--output_dir={d / 'bad'}", f"--predict_file={data}", "--do_predict",
                                    "--max_seq_length=20", "--max_query_length=17"],
                         capture_output=True, text=True, env=env_vars, timeout=600)
    assert bad.returncode != 0
    assert "max_seq_length (20) must be greater than max_query_length (17) + 3" in bad.stderr


def test_run_squad_argument_errors(env, tmp_path):
    d, spm_file, config_file = env
    with pytest.raises(ValueError, match="do_train"):
        squad_task.run_squad(output_dir=str(tmp_path), albert_config_file=config_file, spm_model_file=spm_file)
    with pytest.raises(ValueError, match="train_file"):
        squad_task.run_squad(output_dir=str(tmp_path), albert_config_file=config_file, spm_model_file=spm_file,
                             do_train=True)
    with pytest.raises(ValueError, match="max_position_embeddings|trained up to"):
        squad_task.run_squad(output_dir=str(tmp_path), albert_config_file=config_file, spm_model_file=spm_file,
                             predict_file="x.json", do_predict=True, max_seq_length=128)
    with pytest.raises(ValueError, match="SentencePiece"):
        squad_task.run_squad(output_dir=str(tmp_path), albert_config_file=config_file, do_predict=True,
                             predict_file="x.json", max_seq_length=48, max_query_length=12)
    with pytest.raises(ValueError, match="nothing to run"):
        squad_task.run_squad(output_dir=str(tmp_path), albert_config_file=config_file, spm_model_file=spm_file,
                             predict_file=fx.write_toy(str(tmp_path / "t.json"), False), do_predict=True,
                             max_seq_length=48, max_query_length=12)


@pytest.mark.parametrize("version_2", [False, True])
def test_original_checkpoints_in_output_dir_predict_the_same(env, tmp_path, version_2):
    """An output dir of the original `run_squad_v1.py` / `run_squad_v2.py` (TF1 names with the v1 `cls/squad`
    or the v2 `start_logits`/`end_logits`/`answer_class` heads, Adam slots, global_step) predicts and scores as
    our checkpoint of the same weights; a truncated copy stops before any work."""
    d, spm_file, config_file = env
    config = AlbertConfig.from_json_file(config_file)
    tf.keras.utils.set_random_seed(5)
    model = AlbertSquadV2(config) if version_2 else AlbertSquadV1(config)
    data = fx.write_toy(str(tmp_path / "toy.json"), with_negative=version_2)
    ours, original = tmp_path / "ours", tmp_path / "original"
    oc.save_our_checkpoint(model, str(ours / "model.ckpt-100"))
    oc.save_original_checkpoint(model, str(original / "model.ckpt-100"), global_step=100)
    common = dict(albert_config_file=config_file, spm_model_file=spm_file, predict_file=data, do_predict=True,
                  max_seq_length=48, doc_stride=32, max_query_length=12, version_2_with_negative=version_2)
    results = [squad_task.run_squad(output_dir=str(out), **common) for out in (ours, original)]
    assert results[0] == results[1] and results[0]["eval"]["best_step"] == 100
    expected = oc.files_with_text(str(ours))
    assert {"predictions.json", "nbest_predictions.json", "eval_results.txt", "best_trial.txt"} <= set(expected)
    assert ("null_odds.json" in expected) == version_2
    assert oc.files_with_text(str(original)) == expected

    damaged = tmp_path / "damaged"
    prefix = oc.save_original_checkpoint(model, str(damaged / "model.ckpt-best"))
    oc.truncate_data(prefix)
    before = sorted(os.listdir(damaged))
    with pytest.raises(ValueError, match="is damaged") as error:
        squad_task.run_squad(output_dir=str(damaged), **common)
    assert prefix in str(error.value)
    assert sorted(os.listdir(damaged)) == before


def test_wrong_model_checkpoint_and_vocab_mismatch(env, tmp_path):
    d, spm_file, config_file = env
    config = AlbertConfig.from_json_file(config_file)
    data = fx.write_toy(str(tmp_path / "toy.json"), with_negative=False)
    common = dict(spm_model_file=spm_file, predict_file=data, do_predict=True, max_seq_length=48, doc_stride=32,
                  max_query_length=12)
    v2_out = tmp_path / "v2_out"
    prefix = oc.save_original_checkpoint(AlbertSquadV2(config), str(v2_out / "model.ckpt-best"))
    with pytest.raises(ValueError) as error:
        squad_task.run_squad(output_dir=str(v2_out), albert_config_file=config_file, **common)
    oc.assert_short_error(str(error.value), prefix)
    assert "cls/squad/output_weights" in str(error.value)

    big = tmp_path / "albert_config.json"
    AlbertConfig.from_dict(dict(config.to_dict(), vocab_size=1000)).to_json_file(str(big))
    out = tmp_path / "out"
    with pytest.raises(ValueError) as error:
        squad_task.run_squad(output_dir=str(out), albert_config_file=str(big), **common)
    assert spm_file in str(error.value) and str(big) in str(error.value) and "is 1000" in str(error.value)
    assert f"{config.vocab_size} pieces" in str(error.value)
    assert not out.exists()


@pytest.mark.parametrize("version_2", [False, True])
def test_recompute_reaches_the_model_only_when_set(env, tmp_path, monkeypatch, version_2):
    d, spm_file, config_file = env
    data = fx.write_toy(str(tmp_path / "toy.json"), with_negative=version_2)
    for recompute in (False, True):
        seen = recording(monkeypatch, squad_task, "AlbertSquadV2" if version_2 else "AlbertSquadV1")
        with pytest.raises(Built):
            squad_task.run_squad(output_dir=str(tmp_path / "out"), albert_config_file=config_file,
                                 spm_model_file=spm_file, train_file=data, do_train=True, max_seq_length=48,
                                 doc_stride=32, max_query_length=12, version_2_with_negative=version_2,
                                 recompute=recompute)
        assert ("recompute" in seen[0]) == recompute and seen[0].get("recompute", True) is True
