"""A Hugging Face directory's `architectures` says whose head `classifier.weight` is (issue 67): an
`AlbertForMultipleChoice` directory is not read as a 1-label regression classifier by `pipeline(
"text-classification")` or `AlbertClassifier.from_pretrained`, and a class albert_tf does not read is refused
naming it."""

import json
import logging
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertClassifier, AlbertRace, pipeline
from albert_tf.checkpoints.convert import convert
from albert_tf.errors import InputError
from glue_fixtures import model_files  # noqa: F401  (fixture)
from harness import token_inputs
from original_checkpoints import save_original_checkpoint


@pytest.fixture(scope="module")
def multiple_choice_dir(tmp_path_factory, model_files):  # noqa: F811
    root = tmp_path_factory.mktemp("hf_mc")
    tf.keras.utils.set_random_seed(5)
    race = AlbertRace(model_files["config"])
    race(token_inputs(choices=4, config=model_files["config"]), training=False)
    prefix = save_original_checkpoint(race, str(root / "tf1" / "model.ckpt-best"))
    shutil.copy(model_files["config_file"], str(root / "tf1" / "albert_config.json"))
    shutil.copy(model_files["spm"], str(root / "tf1" / "30k-clean.model"))
    out = str(root / "hf")
    convert(prefix, out, output_format="hf", model="race")
    with open(os.path.join(out, "config.json")) as f:
        assert json.load(f)["architectures"] == ["AlbertForMultipleChoice"]
    return out


def test_text_classification_names_the_multiple_choice_head(multiple_choice_dir):
    with pytest.raises(InputError) as e:
        pipeline("text-classification", multiple_choice_dir)
    message = str(e.value)
    assert "\n" not in message and "no classifier head" in message and "a race head" in message, message


def test_a_classifier_from_a_multiple_choice_dir_is_no_regression(multiple_choice_dir, caplog):
    caplog.set_level(logging.WARNING, logger="absl")
    model = AlbertClassifier.from_pretrained(multiple_choice_dir)
    assert model.num_labels == 2   # a fresh head on the encoder, not the choice scorer read as 1-label regression
    assert "AlbertForMultipleChoice (a race head)" in caplog.text
    race = AlbertRace.from_pretrained(multiple_choice_dir)
    np.testing.assert_array_equal(race.encoder.embeddings.word_embeddings.numpy(),
                                  model.encoder.embeddings.word_embeddings.numpy())


def test_an_unknown_architectures_name_is_refused(multiple_choice_dir, tmp_path):
    other = str(tmp_path / "other")
    shutil.copytree(multiple_choice_dir, other)
    path = os.path.join(other, "config.json")
    with open(path) as f:
        config = json.load(f)
    config["architectures"] = ["AlbertForRanking"]
    with open(path, "w") as f:
        json.dump(config, f)
    for load in (lambda: AlbertClassifier.from_pretrained(other), lambda: pipeline("text-classification", other)):
        with pytest.raises(InputError) as e:
            load()
        message = str(e.value)
        assert "\n" not in message and "`AlbertForRanking`" in message and path in message, message
