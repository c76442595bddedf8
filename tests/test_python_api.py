"""What the Python API promises: labels checked before tracing, `.keras` reload after `import albert_tf`,
`pipeline` lengths from the export, and the question-length warning."""

import json
import os
import pickle
import subprocess
import sys

import keras
import numpy as np
import pytest

from albert_tf import AlbertClassifier, AlbertPreprocessor, AlbertTokenClassifier
from albert_tf.errors import InputError
from fresh_process import same_cpu_backend
from glue_fixtures import model_files  # noqa: F401  (a fixture)


def test_labels_outside_the_range_are_refused_before_tracing(model_files):  # noqa: F811
    """Issue row: `AlbertClassifier.fit` on strings with a label of 5 for `num_labels=3` names the value and its
    index at once, where Keras fails inside the traced loss."""
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=16)
    model = AlbertClassifier(model_files["config"], num_labels=3, preprocessor=pre)
    model.compile()
    texts = ["a good film .", "a bad film .", "it was fine ."]
    with pytest.raises(InputError, match=r"^`y\[1\]` is 5: labels must be integers in \[0, 3\) for "
                                         r"`num_labels=3`\.$"):
        model.fit(texts, np.array([0, 5, 2]), epochs=1, verbose=0)
    with pytest.raises(InputError, match=r"`y\[0\]` is -1"):
        model.evaluate(texts, [-1, 0, 1], verbose=0)
    with pytest.raises(InputError, match=r"`validation_data y\[2\]` is 3"):
        model.fit(texts, [0, 1, 2], validation_data=(texts, [0, 1, 3]), epochs=1, verbose=0)
    with pytest.raises(InputError, match=r"`y\[0\]` is 0.5"):
        model.fit(texts, [0.5, 1.0, 2.0], epochs=1, verbose=0)
    tagger = AlbertTokenClassifier(model_files["config"], num_labels=3)
    tagger.check_labels(np.array([[0, -100, 2]]))   # the ignored id passes
    with pytest.raises(InputError, match=r"`y\[0, 2\]` is 3: .*\(or -100, ignored\)"):
        tagger.check_labels(np.array([[0, -100, 3]]))


def _text_inputs(kind):
    if kind in ("AlbertSquadV1", "AlbertSquadV2"):
        return {"question": ["who was it ?"], "context": ["it was a good film about a dog ."]}
    if kind == "AlbertRace":
        return {"article": ["the film was good ."], "question": ["the film was _ ."],
                "options": [["good", "bad", "sad", "fine"]]}
    if kind == "AlbertPretrainer":
        return ["the [MASK] was good ."]
    if kind == "AlbertModel":
        ids = np.array([[2, 7, 9, 3, 0, 0]], np.int32)
        return {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32), "segment_ids": 0 * ids}
    return ["the film was good ."]


@pytest.mark.e2e
def test_keras_files_of_every_task_model_load_in_a_fresh_process(model_files, tmp_path):  # noqa: F811
    """`keras.models.load_model` in a new process after only `import albert_tf` (before or after `import
    keras`, and with `import tensorflow` between them), for every registered model kind, with the same outputs;
    `import albert_tf` loads no TensorFlow."""
    from albert_tf import registry

    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=16)
    expected = {}
    for kind in registry.kinds():
        name = kind.model_class.__name__
        extra = {} if name == "AlbertModel" else {"preprocessor": pre}
        model = kind.model_class(model_files["config"], **extra)
        outputs = model(_text_inputs(name), training=False)
        key = sorted(k for k in outputs if hasattr(outputs[k], "dtype") and outputs[k].dtype.is_floating)[0]
        expected[name] = (key, np.asarray(outputs[key]))
        model.save(str(tmp_path / f"{name}.keras"))
        np.save(tmp_path / f"{name}.npy", expected[name][1])
        with open(tmp_path / f"{name}.pkl", "wb") as f:
            pickle.dump(_text_inputs(name), f)
    script = (
        "import json, sys\n"
        "first = sys.argv[1]\n"
        "if first == 'keras':\n    import keras\n"
        "import albert_tf\n"
        "assert 'tensorflow' not in sys.modules or first == 'keras'\n"
        "if first == 'tensorflow':\n    import tensorflow\n"
        "import keras, numpy as np, pickle\n"
        "assert not [m for m in sys.modules if m.startswith('albert_tf.') and m.endswith('.model')]\n"
        "for name, key in json.loads(sys.argv[2]).items():\n"
        "    model = keras.models.load_model(f'{name}.keras')\n"
        "    assert type(model).__name__ == name, type(model)\n"
        "    with open(f'{name}.pkl', 'rb') as f:\n"
        "        inputs = pickle.load(f)\n"
        "    np.testing.assert_allclose(np.asarray(model(inputs, training=False)[key]),\n"
        "                               np.load(f'{name}.npy'), rtol=1e-5, atol=1e-5)\n"
        "print('ok')\n")
    keys = json.dumps({name: key for name, (key, _) in expected.items()})
    for first in ("albert_tf", "keras", "tensorflow"):
        proc = subprocess.run([sys.executable, "-c", script, first, keys], capture_output=True, text=True,
                              cwd=str(tmp_path), env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **same_cpu_backend()),
                              timeout=300)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_keras_names_lists_every_registered_class():
    import albert_tf.layers.activations  # noqa: F401
    import albert_tf.text.preprocessor  # noqa: F401
    import albert_tf.training.optimization  # noqa: F401
    from albert_tf import keras_names, registry

    registry.kinds()
    registered = {key.split(">", 1)[1]: type(value) for key, value in keras.saving.get_custom_objects().items()
                  if key.startswith("albert_tf>")}
    assert set(registered) == set(keras_names.names())
    assert all(kind is type for kind in registered.values())   # the classes replaced their stand-ins


def test_without_import_albert_tf_the_keras_error_is_short(model_files, tmp_path):  # noqa: F811
    """The config of a `.keras` file names the SentencePiece model by its SHA-256 (the model is an asset), so
    Keras's error without `import albert_tf`, which prints the whole config, stays short."""
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=16)
    model = AlbertClassifier(model_files["config"], num_labels=2, preprocessor=pre)
    model(["a good film ."], training=False)
    path = str(tmp_path / "sst2.keras")
    model.save(path)
    script = "import sys, keras\ntry:\n    keras.models.load_model(sys.argv[1])\nexcept TypeError as e:\n" \
             "    print(len(str(e)), str(e)[:120])\n"
    proc = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    length, message = proc.stdout.split(" ", 1)
    assert "Could not locate class 'AlbertClassifier'" in message, proc.stdout + proc.stderr[-2000:]
    assert int(length) < 5000, length
    # A config alone (no asset) in a process that never saw the model: a clear error when it is used.
    from albert_tf.text import preprocessor as preprocessing
    config = pre.get_config()
    assert "spm_model_base64" not in config and len(str(config)) < 1000
    saved = preprocessing._PROTOS.pop(config["spm_model_sha256"])
    try:
        orphan = AlbertPreprocessor.from_config(config)
        with pytest.raises(InputError, match="names its SentencePiece model only by SHA-256"):
            orphan(["a good film ."])
    finally:
        preprocessing._PROTOS[config["spm_model_sha256"]] = saved
