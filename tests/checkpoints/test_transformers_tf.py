"""transformers 4.x TensorFlow directories (`config.json` + `tf_model.h5`) in and out.

The seven directories under tests/references/transformers_tf/ were written by transformers 4.57's own `TFAlbert*`
classes, with their outputs on token ids from transformers' `AlbertTokenizer`
(tests/references/make_transformers_tf_references.py, run in a side environment: transformers is no test
dependency). Each loads here with `from_pretrained` and gives transformers' outputs; the `tf_model.h5` our
writer makes from them was run by transformers there too (`ours_outputs.npz`, with the digest of the file it ran).
"""

import importlib.util
import json
import os
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertModel, AlbertPretrainer
from albert_tf.checkpoints import convert, resolve_source
from albert_tf.errors import InputError
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1
import repo_paths

HERE = repo_paths.TESTS
REFERENCES = os.path.join(HERE, "references", "transformers_tf")
_SCRIPT = os.path.join(HERE, "references", "make_transformers_tf_references.py")
_SPEC = importlib.util.spec_from_file_location("make_transformers_tf_references", _SCRIPT)
make_refs = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(make_refs)

# transformers class -> (our class, {our output: transformers output}); `mlm_logits` over every position.
CASES = {
    "TFAlbertModel": (AlbertModel, {"sequence_output": "last_hidden_state", "pooled_output": "pooler_output"}),
    "TFAlbertForPreTraining": (AlbertPretrainer, {"mlm_logits": "prediction_logits", "sop_logits": "sop_logits"}),
    "TFAlbertForMaskedLM": (AlbertPretrainer, {"mlm_logits": "logits"}),
    "TFAlbertForSequenceClassification": (AlbertClassifier, {"logits": "logits"}),
    "TFAlbertForTokenClassification": (AlbertTokenClassifier, {"logits": "logits"}),
    "TFAlbertForQuestionAnswering": (AlbertSquadV1, {"start_logits": "start_logits", "end_logits": "end_logits"}),
    "TFAlbertForMultipleChoice": (AlbertRace, {"logits": "logits"}),
}
# What albert_tf writes as `tf_model.h5` (transformers has no class of its own for the MLM head alone).
WRITTEN = [name for name in CASES if name != "TFAlbertForMaskedLM"]


def references():
    return dict(np.load(os.path.join(REFERENCES, "outputs.npz")))


def our_inputs(refs, name):
    """transformers' `input_ids`, `attention_mask`, `token_type_ids` under our names `input_mask`, `segment_ids`."""
    prefix = "mc_" if name == "TFAlbertForMultipleChoice" else ""
    inputs = {"input_ids": refs[prefix + "input_ids"], "input_mask": refs[prefix + "attention_mask"],
              "segment_ids": refs[prefix + "token_type_ids"]}
    if CASES[name][0] is AlbertPretrainer:
        batch, seq = inputs["input_ids"].shape
        inputs["masked_lm_positions"] = np.tile(np.arange(seq, dtype=np.int32), (batch, 1))
    return {key: tf.constant(value) for key, value in inputs.items()}


def compare(model, name, refs, expected_prefix=None, atol=1e-5):
    outputs = model(our_inputs(refs, name), training=False)
    for ours, theirs in CASES[name][1].items():
        np.testing.assert_allclose(outputs[ours].numpy(), refs[f"{expected_prefix or name}/{theirs}"], atol=atol,
                                   err_msg=f"{name}: {ours} vs transformers' {theirs}")


@pytest.mark.parametrize("name", list(CASES))
def test_transformers_tf_directory_matches_transformers(name):
    refs = references()
    cls = CASES[name][0]
    model = cls.from_pretrained(os.path.join(REFERENCES, name))
    compare(model, name, refs)
    with resolve_source(os.path.join(REFERENCES, name, "tf_model.h5")) as source:   # The file itself is accepted.
        assert source.kind == "hf_model"


@pytest.mark.parametrize("name, cls, labels", [
    ("TFAlbertForSequenceClassification", AlbertClassifier, ["negative", "neutral", "positive"]),
    ("TFAlbertForTokenClassification", AlbertTokenClassifier, ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]),
])
def test_label_count_and_names_come_from_id2label(name, cls, labels):
    model = cls.from_pretrained(os.path.join(REFERENCES, name))   # No `num_labels=`.
    assert model.num_labels == len(labels)
    assert model.labels == labels
    with open(os.path.join(REFERENCES, name, "config.json"), encoding="utf-8") as f:
        assert [f"{v}" for _, v in sorted(json.load(f)["id2label"].items())] == labels


def test_a_safetensors_directory_takes_its_label_count_from_the_head(tmp_path):
    """The same 3-label classifier as transformers' safetensors layout: no `num_labels=` needed either."""
    refs = references()
    out = str(tmp_path / "pt")
    convert(os.path.join(REFERENCES, "TFAlbertForSequenceClassification"), out, output_format="hf")
    assert "model.safetensors" in os.listdir(out)
    model = AlbertClassifier.from_pretrained(out)
    assert model.num_labels == 3 and model.labels == ["negative", "neutral", "positive"]
    compare(model, "TFAlbertForSequenceClassification", refs)


def test_multiple_choice_takes_the_number_of_choices_from_the_input():
    refs = references()
    model = AlbertRace.from_pretrained(os.path.join(REFERENCES, "TFAlbertForMultipleChoice"))
    inputs = our_inputs(refs, "TFAlbertForMultipleChoice")
    three = model({key: value[:, :3] for key, value in inputs.items()}, training=False)
    assert three["logits"].shape == (2, 3)
    np.testing.assert_allclose(three["logits"].numpy(), refs["TFAlbertForMultipleChoice/logits"][:, :3],
                               atol=1e-5)   # Each choice is scored alone; the softmax is over those given.


def test_pickles_are_refused_by_a_message_about_pickles_only(tmp_path):
    directory = tmp_path / "pt"
    directory.mkdir()
    shutil.copy(os.path.join(REFERENCES, "TFAlbertModel", "config.json"), directory / "config.json")
    (directory / "pytorch_model.bin").write_bytes(b"not to be opened")
    with pytest.raises(InputError, match="pytorch_model.bin` is a pickled PyTorch checkpoint") as error:
        AlbertModel.from_pretrained(str(directory))
    assert "tf_model.h5` is" not in str(error.value)


def test_a_file_that_is_not_keras_2_weights_is_named(tmp_path):
    directory = tmp_path / "bad"
    shutil.copytree(os.path.join(REFERENCES, "TFAlbertModel"), directory)
    import h5py
    with h5py.File(directory / "tf_model.h5", "w") as handle:
        handle.create_group("layers")
    with pytest.raises(InputError, match="not a Keras 2 HDF5 weights file"):
        AlbertModel.from_pretrained(str(directory))


def write_ours(out_root):
    """albert_tf's `--format=hf_tf` of each reference directory albert_tf can write, under `out_root/<class>`."""
    paths = {}
    for name in WRITTEN:
        paths[name] = os.path.join(out_root, name)
        convert(os.path.join(REFERENCES, name), paths[name], output_format="hf_tf")
    return paths


def test_our_tf_model_h5_is_what_transformers_ran_and_loads_back(tmp_path):
    refs = references()
    ran = dict(np.load(os.path.join(REFERENCES, "ours_outputs.npz")))
    for name, directory in write_ours(str(tmp_path)).items():
        assert sorted(os.listdir(directory)) == ["config.json", "tf_model.h5"]
        # The file transformers ran in make_transformers_tf_references.py --ours is byte for byte this one's values.
        assert make_refs.h5_digest(os.path.join(directory, "tf_model.h5")) == str(ran[f"{name}/sha256"]), name
        for _, theirs in CASES[name][1].items():   # transformers' outputs from our file equal its own.
            np.testing.assert_allclose(ran[f"{name}/{theirs}"], refs[f"{name}/{theirs}"], atol=1e-5, err_msg=name)
        compare(CASES[name][0].from_pretrained(directory), name, refs)
    with open(os.path.join(tmp_path, "TFAlbertForSequenceClassification", "config.json"), encoding="utf-8") as f:
        assert json.load(f)["id2label"] == {"0": "negative", "1": "neutral", "2": "positive"}


if __name__ == "__main__":   # Writes the directories that make_transformers_tf_references.py --ours runs.
    print(write_ours(sys.argv[1]))
