"""The checks every model kind's head passes, in the manner of keras-hub's `TestCase.run_task_test` and
transformers' `ModelTester`s: one tiny config, inputs for a head, and one call per kind of check.

* `run_task_test`: the model builds; a call gives exactly the outputs named, of the shapes given, finite, the
  same twice at inference; dropout changes the outputs in training only where the head has dropout; `compile`
  (the head's default loss, or the one given) and `fit` for one step give a finite loss and move every trainable
  weight that the loss reaches; `get_config` / `from_config` rebuilds the same model (same arguments, and the
  same outputs with the same weights).
* `run_saving_test`: a `.keras` file, loaded in a fresh process that imports only `keras` and `albert_tf`,
  gives the same outputs (subprocess: the `e2e` tier).
* `run_export_test`: `albert_tf.export.export_saved_model`, loaded in a fresh process with
  `albert_tf.export.session_model.SessionModel` (TF Serving's loader path: a TF1 session on the SignatureDef's
  tensor names), gives the Keras outputs from `serving_default` (subprocess: the `e2e` tier).
* `run_convert_test`: the model's weights under the original TF1 names (`albert_tf.checkpoints.save_tf1_checkpoint`)
  rewritten as the original code writes them (a `tf.compat.v1` `Saver`, Adam slots, `global_step`), loaded
  into a new model (`albert_tf.checkpoints.load_pretrained`, no head missing): every head's TF1 name is in the
  file, the new model gives the same outputs, and writing it again gives the same tensors under the same names.

The harness uses public entry points only (the model classes, `albert_tf.registry`, `albert_tf.checkpoints`,
`albert_tf.export`); its fresh processes import only what a user's program would (`albert_tf`, `keras`,
`SessionModel`), not this module.
"""

import os

import keras
import numpy as np

from albert_tf.config import AlbertConfig

# Small enough to build in well under a second; dropout off in the encoder so that the heads' own dropout shows.
TINY_CONFIG = AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                           num_attention_heads=2, intermediate_size=32, max_position_embeddings=32,
                           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
BATCH, SEQ = 2, 8
# serving_default's input names where they differ from the model's.
SERVING_NAMES = {"masked_lm_positions": "mlm_positions"}
ATOL = 1e-5
# Trainable weights without a gradient in any model: softmax does not change when the same number is added to
# every score of a query, so the attention key bias gets none (it may move by rounding).
NO_GRADIENT = ("attention/key/bias",)


# --- inputs ---------------------------------------------------------------------------------------------------


def token_inputs(batch=BATCH, seq=SEQ, choices=None, seed=0, config=TINY_CONFIG):
    """`input_ids`, `input_mask`, `segment_ids` int32 `[batch, seq]` (`[batch, choices, seq]` with `choices`):
    random ids, the last row padded from 3/4 of `seq`, segment 1 from the middle of the real tokens."""
    rng = np.random.default_rng(seed)
    shape = (batch, seq) if choices is None else (batch, choices, seq)
    ids = rng.integers(5, config.vocab_size, size=shape).astype(np.int32)
    mask = np.ones(shape, np.int32)
    mask[-1, ..., (3 * seq) // 4:] = 0
    segments = np.zeros(shape, np.int32)
    segments[..., seq // 2:] = 1
    return {"input_ids": ids * mask, "input_mask": mask, "segment_ids": segments * mask}


def masked_lm_inputs(predictions=3, seed=0, **kwargs):
    """`token_inputs` plus `masked_lm_positions` `[batch, predictions]` among the real tokens."""
    inputs = token_inputs(seed=seed, **kwargs)
    rng = np.random.default_rng(seed + 1)
    real = inputs["input_mask"].sum(-1)
    positions = [np.sort(rng.choice(np.arange(1, n), predictions, replace=False)) for n in real]
    return dict(inputs, masked_lm_positions=np.array(positions, np.int32))


def randomize(model, seed=1):
    """Gives the biases and LayerNorm betas (zero at build) random values, so that every output depends on every
    weight; returns `model`."""
    rng = np.random.default_rng(seed)
    for variable in model.trainable_variables:
        if variable.path.endswith(("bias", "beta")):
            variable.assign(rng.normal(0.0, 0.1, variable.shape).astype(variable.dtype))
    return model


def build(model_cls, init_kwargs, seed=1, random_biases=True):
    """`model_cls(**init_kwargs)` with `config=TINY_CONFIG` unless given; `randomize`d with `random_biases`."""
    import keras

    keras.utils.set_random_seed(seed)
    kwargs = dict(init_kwargs)
    config = kwargs.pop("config", TINY_CONFIG)
    model = model_cls(config, **kwargs)
    return randomize(model, seed) if random_biases else model


def flat_outputs(outputs):
    """A model's outputs (a dict of tensors and lists of tensors) as `{name or name/i: np.ndarray}`."""
    flat = {}
    for name, value in outputs.items():
        if isinstance(value, (list, tuple)):
            flat.update((f"{name}/{i}", keras.ops.convert_to_numpy(v)) for i, v in enumerate(value))
        else:
            flat[name] = keras.ops.convert_to_numpy(value)
    return flat


def assert_same_outputs(got, want, atol=ATOL, names=None):
    """The float outputs to `atol`, the others exactly, of `names` (default every name of `want`)."""
    for name in sorted(want if names is None else names):
        assert got[name].shape == want[name].shape, (name, got[name].shape, want[name].shape)
        if want[name].dtype.kind in "fc":
            np.testing.assert_allclose(got[name], want[name], atol=atol, rtol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def _float_names(flat):
    return [name for name, value in flat.items() if value.dtype.kind == "f"]


# --- run_task_test --------------------------------------------------------------------------------------------


def run_task_test(model_cls, init_kwargs, inputs, labels, expected_shapes, train_inputs=None, loss=None,
                  dropout=False, unchanged=()):
    """Build, call, one training step and the config round trip of `model_cls` (see the module docstring).

    Args:
        model_cls: the model class; `init_kwargs` its constructor arguments besides the config.
        inputs: the inputs of an inference call (a dict of NumPy arrays); `train_inputs` those of training
            (default `inputs`), with `labels` (the `y` of `fit`).
        expected_shapes: `{output name: shape}` of every output of the inference call (a list of shapes for an
            output that is a list).
        loss: the `compile` loss; default the head's own.
        dropout: whether the head has dropout (the tiny config's encoder has none).
        unchanged: substrings of the paths of the trainable weights that may stay as they are: those the loss
            does not reach (the pooler of heads on the sequence output) or reaches with a zero gradient (a bias
            added to every logit of a softmax); every other trainable weight must move.

    Returns:
        the trained model.
    """
    # Zero biases as built: a weight that starts at zero moves with any gradient, however small (a tiny model's
    # gradients can be under the float32 rounding of a random bias).
    model = build(model_cls, init_kwargs, random_biases=False)
    check_call(model, inputs, expected_shapes, dropout)
    check_fit(model, inputs if train_inputs is None else train_inputs, labels, loss, unchanged)
    check_config_round_trip(model_cls, model, init_kwargs, inputs)
    return model


def check_call(model, inputs, expected_shapes, dropout):
    """The outputs' names and shapes, finite floats, inference repeatable, dropout in training iff `dropout`."""
    out = flat_outputs(model(inputs, training=False))
    want = flat_outputs({name: [np.zeros(s) for s in shape] if isinstance(shape, list) else np.zeros(shape)
                         for name, shape in expected_shapes.items()})
    assert sorted(out) == sorted(want), f"outputs {sorted(out)}, expected {sorted(want)}"
    for name, value in out.items():
        assert value.shape == want[name].shape, (name, value.shape, want[name].shape)
    for name in _float_names(out):
        assert np.isfinite(out[name]).all(), name
    assert_same_outputs(flat_outputs(model(inputs, training=False)), out, atol=0)
    trained = flat_outputs(model(inputs, training=True))
    differs = [name for name in _float_names(out) if not np.allclose(trained[name], out[name], atol=1e-6)]
    if dropout:
        assert differs, "training=True gave the inference outputs: no dropout"
    else:
        assert not differs, f"training=True changed {differs}: dropout where the head has none"


def check_fit(model, inputs, labels, loss, unchanged):
    """`compile` + one `fit` step (SGD): a finite loss, one optimizer step, every reached weight moved."""
    import keras

    kwargs = {} if loss is None else {"loss": loss}
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), **kwargs)
    before = [keras.ops.convert_to_numpy(v).copy() for v in model.trainable_variables]
    batch = len(next(iter(inputs.values())))
    history = model.fit(inputs, labels, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    losses = history.history["loss"]
    assert len(losses) == 1 and np.isfinite(losses[0]), losses
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 1
    still = [v.path for v, old in zip(model.trainable_variables, before) if np.array_equal(keras.ops.convert_to_numpy(v), old)]
    unexpected = [path for path in still if not any(part in path for part in tuple(unchanged) + NO_GRADIENT)]
    assert not unexpected, f"one training step left {unexpected} unchanged"


def check_config_round_trip(model_cls, model, init_kwargs, inputs):
    """`from_config(get_config())`: JSON-able, the same config and arguments, the same outputs with the weights."""
    import json

    config = model.get_config()
    json.dumps(config)
    clone = model_cls.from_config(config)
    assert type(clone) is model_cls
    assert clone.get_config() == config
    for name, value in init_kwargs.items():
        if name != "config":
            assert getattr(clone, name) == value, (name, getattr(clone, name), value)
    clone.set_weights(model.get_weights())
    assert_same_outputs(flat_outputs(clone(inputs, training=False)), flat_outputs(model(inputs, training=False)),
                        atol=1e-6)


# --- run_saving_test ------------------------------------------------------------------------------------------

# The fresh processes: what a user's program does, with nothing else imported first.
_KERAS_CHILD = """
import sys
import numpy as np
import albert_tf
import keras
model = keras.saving.load_model(sys.argv[1])
outputs = model(dict(np.load(sys.argv[2])), training=False)
flat = {}
for name, value in outputs.items():
    values = value if isinstance(value, (list, tuple)) else [value]
    flat.update({name if v is value else f"{name}/{i}": keras.ops.convert_to_numpy(v) for i, v in enumerate(values)})
np.savez(sys.argv[3], **flat)
print("RESULT " + type(model).__name__)
"""
_SERVING_CHILD = """
import sys
import numpy as np
from albert_tf.export.session_model import SessionModel
served = SessionModel(sys.argv[1])
names = served.input_names("serving_default")
inputs = dict(np.load(sys.argv[2]))
np.savez(sys.argv[3], **served.run("serving_default", **{name: inputs[name] for name in names}))
print("RESULT " + " ".join(names))
"""


def run_fresh(code, *args, timeout=600):
    """Runs `code` in a fresh Python (`sys.argv[1:]` = `args`); returns what it printed after `RESULT `."""
    import subprocess
    import sys

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", code] + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-2000:]
    return lines[-1][len("RESULT "):]


def run_saving_test(model_cls, init_kwargs, inputs, directory):
    """`model.save(<directory>/model.keras)`; a fresh process that imports `albert_tf` and `keras` only loads it
    (`keras.saving.load_model`) and calls it: the class and the outputs are the model's."""
    model = build(model_cls, init_kwargs)
    want = flat_outputs(model(inputs, training=False))
    path = os.path.join(directory, "model.keras")
    model.save(path)
    inputs_file, outputs_file = _write_inputs(directory, inputs)
    assert run_fresh(_KERAS_CHILD, path, inputs_file, outputs_file) == model_cls.__name__
    assert_same_outputs(dict(np.load(outputs_file)), want, atol=1e-6)


def _write_inputs(directory, inputs, names=None):
    inputs_file = os.path.join(directory, "inputs.npz")
    np.savez(inputs_file, **{(names or {}).get(k, k): v for k, v in inputs.items()})
    return inputs_file, os.path.join(directory, "outputs.npz")


# --- run_export_test ------------------------------------------------------------------------------------------


def run_export_test(model_cls, init_kwargs, inputs, directory, **export_kwargs):
    """`export_saved_model` (token ids: no SentencePiece model); a fresh process runs `serving_default` through
    `SessionModel` (TF Serving's path) on `inputs`: every output that the model also names equals the Keras
    output, and every signature input was given."""
    from albert_tf.export import export_saved_model

    model = build(model_cls, init_kwargs)
    want = flat_outputs(model(inputs, training=False))
    seq = next(iter(inputs.values())).shape[-1]
    # The text signatures' lengths must fit in `max_seq_length` even when there is no text signature.
    export_kwargs = dict(dict(max_seq_length=seq, max_query_length=2, max_qa_length=seq - 3), **export_kwargs)
    path = export_saved_model(model, os.path.join(directory, "export"), warmup=False, **export_kwargs)
    inputs_file, outputs_file = _write_inputs(directory, inputs, SERVING_NAMES)
    taken = run_fresh(_SERVING_CHILD, path, inputs_file, outputs_file).split()
    assert set(taken) <= {SERVING_NAMES.get(name, name) for name in inputs}, taken
    got = dict(np.load(outputs_file))
    shared = sorted(set(got) & set(want))
    assert shared, f"serving_default gives {sorted(got)}, none of the model's outputs {sorted(want)}"
    assert_same_outputs(got, want, names=shared)
    return got


# --- run_convert_test -----------------------------------------------------------------------------------------


def run_convert_test(model_cls, init_kwargs, inputs, directory, head_names):
    """TF1 names -> model -> TF1 names (see the module docstring); `head_names` are the TF1 names of the kind's
    heads (`registry.get(kind).tf1_names`). Returns the `{TF1 name: array}` the original-style file holds."""
    from albert_tf.checkpoints import load_pretrained, save_tf1_checkpoint

    model = build(model_cls, init_kwargs)
    ours = _read_checkpoint(save_tf1_checkpoint(model, os.path.join(directory, "ours", "model.ckpt")))
    assert set(head_names) <= set(ours), sorted(set(head_names) - set(ours))
    assert all(name.startswith("bert/") for name in set(ours) - set(head_names)), sorted(ours)
    assert len(ours) == len(model.trainable_variables)
    prefix = write_original_checkpoint(ours, os.path.join(directory, "original", "model.ckpt-best"))
    kwargs = {k: v for k, v in init_kwargs.items() if k != "config"}
    restored = load_pretrained(model_cls, prefix, config=init_kwargs.get("config", TINY_CONFIG),
                               allow_missing_heads=False, **kwargs)
    assert_same_outputs(flat_outputs(restored(inputs, training=False)), flat_outputs(model(inputs, training=False)),
                        atol=1e-6)
    again = _read_checkpoint(save_tf1_checkpoint(restored, os.path.join(directory, "again", "model.ckpt")))
    assert sorted(again) == sorted(ours)
    for name, value in ours.items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)
    return ours


def write_original_checkpoint(tensors, prefix):
    """`{TF1 name: array}` written as the original TF1 code writes a checkpoint: `tf.compat.v1` variables, a
    `Saver`, Adam slots beside every variable and `global_step`."""
    import tensorflow as tf

    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    with tf.Graph().as_default():
        for name, value in tensors.items():
            tf.compat.v1.Variable(value, name=name)
            for slot in ("adam_m", "adam_v"):
                tf.compat.v1.Variable(np.ones_like(value), name=f"{name}/{slot}")
        tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix, write_meta_graph=False)
    return prefix


def _read_checkpoint(prefix):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
