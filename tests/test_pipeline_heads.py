"""`pipeline(task, <a source of another kind>)` names what the source holds (issue 56: a classifier checkpoint
given to 'question-answering' was said to hold a pretrainer), for every form of a fine-tuned classifier a user
has: our training loop's checkpoint directory, `model.ckpt-<step>` and `model.ckpt-best`, a Google-format TF1
classifier checkpoint, an `albert-export` SavedModel, a `.keras` file, a transformers
`AlbertForSequenceClassification` directory and a keras-hub classifier preset."""

import os
import shutil

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.commands.app import one_line
from albert_tf.errors import InputError
from albert_tf.export import saved_model as export_lib
from albert_tf.tasks.glue.model import classifier_loss
from albert_tf.training import loop, optimization
from foreign_fixtures import BASE, hf_state_dict, keras_hub_from_hf, write_hf_dir
from glue_fixtures import model_files  # noqa: F401  (fixture)
from original_checkpoints import save_original_checkpoint

NUM_LABELS = 3


def _train_classifier(model_dir, config):
    """Two steps of `loop.run_training` (as `run_classifier`): `model.ckpt-2` with the optimizer's slots, the input
    iterator and the dropout seed generators, the `checkpoint` state file; `model.ckpt-best` copied from it."""
    rng = np.random.RandomState(0)
    features = {"input_ids": rng.randint(5, config.vocab_size, (8, 8)).astype(np.int32),
                "input_mask": np.ones((8, 8), np.int32), "segment_ids": np.zeros((8, 8), np.int32),
                "label_ids": rng.randint(0, NUM_LABELS, (8,)).astype(np.int32)}

    def dataset_fn(context):
        del context
        return tf.data.Dataset.from_tensor_slices(features).repeat().batch(2, drop_remainder=True)

    def loss_fn(model, batch, training):
        outputs = model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")}, training=training)
        return tf.reduce_mean(classifier_loss(outputs, batch["label_ids"], NUM_LABELS)), {}

    model = albert_tf.AlbertClassifier(config, num_labels=NUM_LABELS)
    opt = optimization.create_optimizer(1e-3, 2, 1, optimizer="adamw")
    loop.run_training(model, opt, loss_fn, dataset_fn, tf.distribute.get_strategy(), model_dir, 2,
                      iterations_per_loop=2, save_checkpoints_steps=2)
    for name in os.listdir(model_dir):
        if name.startswith("model.ckpt-2."):
            shutil.copy(os.path.join(model_dir, name), os.path.join(model_dir, name.replace("-2.", "-best.")))
    return model


@pytest.fixture(scope="module")
def sources(model_files, tmp_path_factory):  # noqa: F811
    root = tmp_path_factory.mktemp("heads")
    config = model_files["config"]
    hidden = config.hidden_size
    run = root / "run"
    model = _train_classifier(str(run), config)
    shutil.copy(model_files["config_file"], run / "albert_config.json")
    shutil.copy(model_files["spm"], run / "30k-clean.model")
    google = root / "google"
    save_original_checkpoint(model, str(google / "model.ckpt-300"))
    shutil.copy(model_files["config_file"], google / "albert_config.json")
    shutil.copy(model_files["spm"], google / "30k-clean.model")
    keras_file = str(root / "classifier.keras")
    model.save(keras_file)
    export = export_lib.export_saved_model(model, str(root / "export"), spm_model_file=model_files["spm"],
                                           max_seq_length=32, text_signature=False, warmup=False)
    hf_config = dict(BASE, num_hidden_layers=1, num_hidden_groups=1, inner_group_num=1,
                     vocab_size=config.vocab_size)   # the fixture's SentencePiece model, passed to `pipeline`
    state, _ = hf_state_dict(hf_config, np.random.default_rng(0), heads=("classifier",), num_labels=NUM_LABELS)
    hf_dir = write_hf_dir(str(root / "hf"), hf_config, state, architecture="AlbertForSequenceClassification")
    backbone = keras_hub_from_hf(hf_dir)
    preset = str(root / "keras_hub")
    keras_hub.models.AlbertTextClassifier(backbone=backbone, num_classes=NUM_LABELS,
                                          preprocessor=None).save_to_preset(preset)
    head = f"a classifier head (output_weights [{NUM_LABELS}, {hidden}])"
    hf_head = f"a classifier head (output_weights [{NUM_LABELS}, {hf_config['hidden_size']}])"
    return {"run dir": (str(run), head), "run model.ckpt-2": (str(run / "model.ckpt-2"), head),
            "run model.ckpt-best": (str(run / "model.ckpt-best"), head),
            "google tf1": (str(google / "model.ckpt-300"), head), "google dir": (str(google), head),
            "albert-export": (export, "serves a classifier model"),
            "keras file": (keras_file, "is a Keras model file (AlbertClassifier)"),
            "hf safetensors": (hf_dir, hf_head), "keras-hub preset": (preset, hf_head), "spm": model_files["spm"]}


@pytest.mark.parametrize("form", ["run dir", "run model.ckpt-2", "run model.ckpt-best", "google tf1", "google dir",
                                  "albert-export", "keras file", "hf safetensors", "keras-hub preset"])
@pytest.mark.parametrize("task", ["question-answering", "fill-mask", "token-classification"])
def test_a_refusal_names_the_head_the_source_holds(sources, form, task):
    source, holds = sources[form]
    with pytest.raises(Exception) as caught:
        albert_tf.pipeline(task, source, spm_model_file=sources["spm"])
    message = one_line(caught.value)
    assert isinstance(caught.value, InputError), message
    assert "\n" not in str(caught.value)
    assert holds in message
    assert "read as" not in message and "holds a pretrainer" not in message and "encoder" not in message
