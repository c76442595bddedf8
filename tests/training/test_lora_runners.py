"""`--lora_rank` on the runners: a LoRA run trains only the adapters (with their layers' biases) and the head,
its checkpoints hold the adapters, it resumes to the same weights, evaluates and predicts from `model.ckpt-best`,
and the runner's export, `albert-export` of its output directory and `from_pretrained` of it give the LoRA
model's outputs with the adapters merged into the kernels (no LoRA variable left)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import task_fixtures
from fresh_process import same_cpu_backend
from albert_tf.checkpoints import save_tf1_checkpoint
from albert_tf.checkpoints.reader import OBJECT_GRAPH_KEY, CheckpointReader
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.errors import InputError
from albert_tf.layers.base import sublayers
from albert_tf.models.albert_model import AlbertModel
from albert_tf.models.lora import lora_layers
from albert_tf.options import flag_fields
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.glue.task import ClassifierOptions, run_classifier
from albert_tf.tasks.ner.task import NerOptions
from albert_tf.tasks.race.task import RaceOptions
from albert_tf.tasks.squad.task import SquadOptions
from albert_tf.training import loop
import repo_paths

REPO = repo_paths.REPO
SEQ = task_fixtures.SEQ
# The pooler's adapter moves the tiny random encoder's outputs far more than the attention's alone (whose
# near-uniform attention hides them), so that merging them or not shows in the outputs.
TARGETS = ["query", "value", "pooler"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Every task's tiny data, SentencePiece model and config, and an initial TF1 checkpoint of the encoder."""
    root = tmp_path_factory.mktemp("lora")
    paths = task_fixtures.write_all(root)
    tf.keras.utils.set_random_seed(7)
    encoder = AlbertModel(paths["config"])
    ids = np.ones([1, SEQ], np.int32)
    encoder({"input_ids": ids, "input_mask": ids, "segment_ids": 0 * ids}, training=False)
    paths["init"] = save_tf1_checkpoint(encoder, str(root / "init" / "model.ckpt"))
    return paths


def classifier_args(files, **kwargs):
    args = dict(albert_config_file=files["config_file"], spm_model_file=files["spm"], init_checkpoint=files["init"],
                max_seq_length=SEQ, train_batch_size=4, eval_batch_size=4, predict_batch_size=4,
                learning_rate=1e-2, warmup_step=2, random_seed=1)
    args.update(kwargs)
    return args


def predict_features(cache_file):
    """The cached predict features as model inputs."""
    spec = {name: tf.io.FixedLenFeature([SEQ], tf.int64) for name in ("input_ids", "input_mask", "segment_ids")}
    records = [r.numpy() for r in tf.data.TFRecordDataset(cache_file)]
    parsed = tf.io.parse_example(tf.constant(records), spec)
    return records, {name: tf.cast(value, tf.int32).numpy() for name, value in parsed.items()}


def lora_classifier(files, prefix, rank):
    model = AlbertClassifier(files["config"], num_labels=2, dropout_rate=0.0)
    model.enable_lora(rank, target_names=TARGETS)
    restore_checkpoint(model, prefix)
    return model


def probabilities(model, features):
    return model(features, training=False)["probabilities"].numpy()


# --- options ------------------------------------------------------------------------------------------------

def test_every_fine_tuning_runner_has_the_lora_flags():
    for options in (ClassifierOptions, SquadOptions, RaceOptions, NerOptions):
        names = [field.name for field in flag_fields(options)]
        assert {"lora_rank", "lora_targets"} <= set(names), options.__name__
        assert options.__dataclass_fields__["lora_rank"].default == 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(lora_rank=-1), "`lora_rank` must be an int >= 0"),
    (dict(lora_targets=["query"]), "needs `lora_rank` > 0"),
    (dict(lora_rank=2, lora_targets=["query", "keys"]), r"`lora_targets` must be among .*keys unknown"),
])
def test_bad_lora_options_stop_before_any_work(files, tmp_path, kwargs, message):
    out = tmp_path / "out"
    with pytest.raises(InputError, match=message):
        run_classifier("SST-2", files["glue"], str(out), **classifier_args(files, do_train=True, train_step=2,
                                                                           **kwargs))
    assert not out.exists()


# --- the checkpoint layer -----------------------------------------------------------------------------------

def test_checkpoints_hold_the_adapters_and_a_plain_model_reads_them_merged(files, tmp_path):
    """The training loop's checkpoint objects reach every adapter and hold `lora/alpha`; a plain model reads
    the checkpoint with `kernel + (alpha / rank) A @ B` (alpha 8, rank 2: scale 4); a LoRA model on other
    targets is refused; the TF1 writer refuses a LoRA model instead of dropping its adapters."""
    tf.keras.utils.set_random_seed(3)
    model = AlbertClassifier(files["config"], num_labels=2)
    model.enable_lora(2, target_names=("query", "value", "ffn"), lora_alpha=8.0)
    rng = np.random.default_rng(0)
    for layer in lora_layers(model):
        layer.lora_kernel_b.assign(rng.normal(0, 0.3, layer.lora_kernel_b.shape).astype(np.float32))
    objects = loop.checkpoint_objects(model)   # raises for a variable outside the TF object graph
    prefix = tf.train.Checkpoint(**objects).write(str(tmp_path / "ckpt"))
    reader = CheckpointReader(prefix)
    assert sorted(path.rsplit("/", 1)[-1] for path in reader.tf2_adapters("model/encoder")) == [
        "ffn", "query", "value"]
    assert float(reader.tf2_value("lora/alpha")) == 8.0
    features = {"input_ids": np.array([[2, 7, 9, 11, 3, 0]], np.int32),
                "input_mask": np.array([[1, 1, 1, 1, 1, 0]], np.int32),
                "segment_ids": np.zeros([1, 6], np.int32)}
    want = model(features, training=False)["logits"].numpy()
    plain = AlbertClassifier(files["config"], num_labels=2)
    restore_checkpoint(plain, prefix)
    assert not lora_layers(plain)
    np.testing.assert_allclose(plain(features, training=False)["logits"].numpy(), want, atol=1e-5)
    unmerged = model.encoder.embeddings.word_embeddings.numpy()   # a frozen weight, the same in both
    np.testing.assert_array_equal(plain.encoder.embeddings.word_embeddings.numpy(), unmerged)
    other = AlbertClassifier(files["config"], num_labels=2)
    other.enable_lora(2)
    with pytest.raises(InputError, match=r"unexpected in the checkpoint \(1\): ffn/lora_kernel_a"):
        restore_checkpoint(other, prefix)
    with pytest.raises(InputError, match="merged_copy"):
        save_tf1_checkpoint(model, str(tmp_path / "tf1" / "model.ckpt"))


def test_sublayers_finds_what_keras_tracks(files):
    model = AlbertClassifier(files["config"], num_labels=2)
    # Keras' own (private) walk is the reference here; the package uses the public one.
    assert {id(layer) for layer in sublayers(model)} == {id(layer) for layer in model._flatten_layers(
        include_self=False)}


# --- run_classifier end to end ------------------------------------------------------------------------------

@pytest.mark.e2e
def test_classifier_lora_run_trains_adapters_and_exports_them_merged(files, tmp_path):
    out, export, cache = tmp_path / "out", tmp_path / "export", tmp_path / "cache"
    result = run_classifier("SST-2", files["glue"], str(out), **classifier_args(
        files, do_train=True, do_eval=True, do_predict=True, train_step=12, save_checkpoints_steps=6,
        cached_dir=str(cache), export_dir=str(export), lora_rank=4, lora_targets=TARGETS))
    assert result["eval"]["best_step"] in (6, 12)
    best = str(out / "model.ckpt-best")
    reader = CheckpointReader(best)
    assert sorted(path.rsplit("/", 1)[-1] for path in reader.tf2_adapters("model/encoder")) == sorted(TARGETS)

    # Only the adapters, their layers' biases and the head moved: every other weight is the initial one.
    model = lora_classifier(files, best, 4)
    init = AlbertClassifier.from_pretrained(files["init"], config=files["config"], num_labels=2)
    adapters = {id(v) for layer in lora_layers(model) for v in (layer.lora_kernel_a, layer.lora_kernel_b)}
    trainable = {id(v) for v in model.trainable_weights}
    moved = []
    for variable, initial in zip([v for v in model.weights if id(v) not in adapters], init.weights):
        if id(variable) in trainable:
            moved.append(variable.path)
        else:
            np.testing.assert_array_equal(variable.numpy(), initial.numpy(), err_msg=variable.path)
    assert sorted(p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1] for p in moved) == [
        "classifier_head/output_bias", "classifier_head/output_weights", "pooler/bias", "query/bias", "value/bias"]
    assert max(float(np.abs(layer.lora_kernel_b.numpy()).max()) for layer in lora_layers(model)) > 0

    records, features = predict_features(str(cache / "sst-2_predict.tf_record"))
    want = probabilities(model, features)
    predicted = np.loadtxt(out / "test_results.tsv", delimiter="\t", ndmin=2)
    np.testing.assert_allclose(predicted, want, atol=1e-5)
    for layer in lora_layers(model):   # the adapters change the outputs: the merge is tested
        layer.lora_kernel_b.assign(np.zeros(layer.lora_kernel_b.shape, np.float32))
    assert np.abs(probabilities(model, features) - want).max() > 1e-4

    # The runner's export: merged kernels, no LoRA variable, the LoRA model's outputs.
    version = str(export / "1")
    assert not [name for name, _ in tf.train.list_variables(os.path.join(version, "variables", "variables"))
                if "lora" in name]
    served = tf.saved_model.load(version).signatures["serve_examples"](examples=tf.constant(records))
    np.testing.assert_allclose(served["probabilities"].numpy(), want, atol=1e-5)

    # from_pretrained of the run's directory: a plain classifier with the adapters merged.
    loaded = AlbertClassifier.from_pretrained(str(out), config=files["config"], num_labels=2)
    assert not lora_layers(loaded)
    np.testing.assert_allclose(probabilities(loaded, features), want, atol=1e-5)

    # --do_predict again, with and without --lora_rank: model.ckpt-best restored either way.
    for lora in (dict(lora_rank=4, lora_targets=TARGETS), {}):
        os.remove(out / "test_results.tsv")
        run_classifier("SST-2", files["glue"], str(out), **classifier_args(
            files, do_predict=True, cached_dir=str(cache), **lora))
        np.testing.assert_allclose(np.loadtxt(out / "test_results.tsv", delimiter="\t", ndmin=2), want, atol=1e-5)

    # albert-export of the run's output directory.
    proc = subprocess.run(
        [sys.executable, "-m", "albert_tf.commands", "albert-export", f"--input={out}", "--model=classifier",
         "--num_labels=2", f"--albert_config_file={files['config_file']}", f"--spm_model_file={files['spm']}",
         f"--max_seq_length={SEQ}", f"--export_dir={tmp_path / 'export2'}", "--nowarmup", "--noserve_text"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO, **same_cpu_backend()))
    assert proc.returncode == 0, proc.stderr[-3000:]
    version = proc.stdout.strip().splitlines()[-1]
    assert not [name for name, _ in tf.train.list_variables(os.path.join(version, "variables", "variables"))
                if "lora" in name]
    served = tf.saved_model.load(version).signatures["serving_default"](
        **{name: tf.constant(value) for name, value in features.items()})
    np.testing.assert_allclose(served["probabilities"].numpy(), want, atol=1e-5)


@pytest.mark.e2e
def test_a_killed_lora_run_resumes_to_the_same_weights(files, tmp_path):
    """A run cut after its first checkpoint (its last checkpoint removed) and started again ends with the
    uninterrupted run's adapters, biases, head and optimizer slots."""
    out = tmp_path / "out"

    def train():
        run_classifier("SST-2", files["glue"], str(out), **classifier_args(
            files, do_train=True, train_step=8, save_checkpoints_steps=4, lora_rank=2,
            lora_targets=["query", "value", "ffn"]))

    def values(prefix):
        reader = tf.train.load_checkpoint(prefix)
        # Every number but the count of saves this process made (the iterator's position is a variant, the
        # object graph a string: left out).
        return {name: reader.get_tensor(name) for name, dtype in reader.get_variable_to_dtype_map().items()
                if name not in (OBJECT_GRAPH_KEY, "save_counter/.ATTRIBUTES/VARIABLE_VALUE")
                and dtype.is_numpy_compatible and dtype != tf.string}

    train()
    whole = values(str(out / "model.ckpt-8"))
    assert any("lora_kernel_b" in name or "optimizer" in name for name in whole)
    for name in os.listdir(out):
        if name.startswith("model.ckpt-8."):
            os.remove(out / name)
    train()
    resumed = values(str(out / "model.ckpt-8"))
    assert sorted(resumed) == sorted(whole)
    for name, value in whole.items():
        np.testing.assert_allclose(resumed[name], value, rtol=0, atol=1e-6, err_msg=name)
    # Going on without the adapters (or with others) is refused: the restore would leave them out.
    for lora in ({}, dict(lora_rank=2)):
        with pytest.raises(InputError, match=r"model.ckpt-8 holds LoRA adapters on 3 layers, the model on [02]"):
            run_classifier("SST-2", files["glue"], str(out), **classifier_args(
                files, do_train=True, train_step=12, save_checkpoints_steps=4, **lora))


# --- run_ner, the command -----------------------------------------------------------------------------------

@pytest.mark.e2e
def test_run_ner_command_takes_lora_rank_and_targets(files, tmp_path):
    out, export = tmp_path / "out", tmp_path / "export"
    args = [f"--data_dir={files['conll']}", f"--albert_config_file={files['config_file']}",
            f"--spm_model_file={files['spm']}", f"--init_checkpoint={files['init']}", f"--output_dir={out}",
            "--do_train", "--do_eval", f"--max_seq_length={SEQ}", "--train_batch_size=4", "--eval_batch_size=4",
            "--learning_rate=1e-2", "--train_step=6", "--warmup_step=1", "--save_checkpoints_steps=3",
            "--random_seed=1", "--lora_rank=2", "--lora_targets=query,value,ffn", f"--export_dir={export}"]
    proc = subprocess.run([sys.executable, os.path.join(REPO, "run_ner.py")] + args, cwd=REPO, capture_output=True,
                          text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO,
                                              **same_cpu_backend()), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LoRA rank 2 on query,value,ffn" in proc.stderr
    reader = CheckpointReader(str(out / "model.ckpt-best"))
    assert sorted(path.rsplit("/", 1)[-1] for path in reader.tf2_adapters("model/encoder")) == [
        "ffn", "query", "value"]
    assert os.path.exists(out / "eval_results.txt")
    version = os.path.join(export, sorted(os.listdir(export))[-1])
    assert not [name for name, _ in tf.train.list_variables(os.path.join(version, "variables", "variables"))
                if "lora" in name]
