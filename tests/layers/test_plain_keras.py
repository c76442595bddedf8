"""The layers and models are plain Keras 3: one module of `layers/` and `models/` (the TensorFlow fast path)
imports TensorFlow or asks for the backend, the package reads no private Keras attribute, and LoRA and int8 are
Keras' own (`Dense.enable_lora`, `Model.quantize`): a model with either gives the independent NumPy forward's
outputs on the weights Keras' own public attributes hold. Backend-neutral: CI also runs it under JAX and PyTorch."""

import ast
import os
import pathlib

import keras
import numpy as np
import pytest

from albert_tf import AlbertConfig, AlbertModel
from albert_tf.models.lora import lora_layers, merged_copy
import numpy_reference as ref
from reference_weights import assign_from_tf1, dense_layers

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "albert_tf"
FAST_PATH = "layers/tf_fast_path.py"
# Keras has no public switch for a layer of string tensors: `AlbertPreprocessor` sets the two attributes Keras' own
# `TextVectorization` and keras-hub's `PreprocessingLayer` set (its inputs stay `tf.string` on every backend).
STRING_LAYER_SWITCHES = {("text/preprocessor.py", "_convert_input_args"),
                         ("text/preprocessor.py", "_allow_non_tensor_positional_args")}

CONFIG = dict(vocab_size=53, embedding_size=8, hidden_size=16, num_hidden_layers=3, num_hidden_groups=2,
              num_attention_heads=4, intermediate_size=24, inner_group_num=1, hidden_act="gelu",
              max_position_embeddings=16, type_vocab_size=2, initializer_range=0.02, hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0)


def modules(folder):
    return sorted((PACKAGE / folder).glob("*.py"))


def names_the_backend(tree):
    """The lines of `tree` that import TensorFlow or read which backend Keras runs on."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "tensorflow" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tensorflow":
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "backend" and \
                ast.unparse(node.value) in ("keras.backend", "keras.config"):
            lines.append(node.lineno)
    return lines


def test_only_the_fast_path_imports_tensorflow_or_names_the_backend():
    found = {}
    for path in modules("layers") + modules("models"):
        relative = path.relative_to(PACKAGE).as_posix()
        lines = names_the_backend(ast.parse(path.read_text()))
        if lines:
            found[relative] = lines
    assert set(found) == {FAST_PATH}, found


def keras_private_names():
    """The private attribute and method names of built Keras objects of the kinds the package uses: a `Dense` with
    LoRA, an int8 `Dense`, a compiled `Model` and its optimizer, `LayerNormalization`, `Dropout`, a variable."""
    lora = keras.layers.Dense(4)
    lora.build((None, 3))
    lora.enable_lora(2)
    int8 = keras.layers.Dense(4)
    int8.build((None, 3))
    int8.quantize("int8")
    model = keras.Sequential([keras.layers.Dense(2)])
    model.build((None, 3))
    model.compile(optimizer="adam", loss="mse")
    names = set()
    for obj in (lora, int8, model, model.optimizer, keras.layers.LayerNormalization(), keras.layers.Dropout(0.1),
                keras.Variable(1.0)):
        names.update(n for n in list(dir(obj)) + list(vars(obj)) if n.startswith("_") and not n.startswith("__"))
    return names


def test_the_package_reads_no_private_keras_attribute():
    private = keras_private_names()
    assert {"_kernel", "_tracker", "_flatten_layers"} <= private   # the scan knows what it looks for
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private and \
                    (relative, node.attr) not in STRING_LAYER_SWITCHES:
                found.append(f"{relative}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found


def model_and_inputs(seed):
    rng = np.random.default_rng(seed)
    w = ref.random_weights(CONFIG, rng)
    model = AlbertModel(AlbertConfig.from_dict(CONFIG))
    assign_from_tf1(model, w)
    ids = rng.integers(0, CONFIG["vocab_size"], size=(3, 11)).astype(np.int32)
    mask = np.ones((3, 11), np.int32)
    mask[1, 7:] = 0
    segments = np.zeros((3, 11), np.int32)
    segments[:, 5:] = 1
    return model, w, {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def assert_reference(model, w, inputs, atol):
    got = model(inputs, training=False)
    want = ref.albert_forward(w, CONFIG, inputs["input_ids"], inputs["input_mask"], inputs["segment_ids"])
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(got[name]), want[name], atol=atol, rtol=atol)


def test_lora_is_keras_own_and_gives_the_reference_on_the_adapted_kernels(tmp_path):
    """`enable_lora` puts Keras' adapters on the target `Dense` layers; with trained (random) adapters the encoder
    gives the NumPy forward on `kernel + alpha / rank * A @ B`; the merged copy and a `.keras` file saved and
    reloaded (Keras' saving merges the adapters) give the same."""
    model, w, inputs = model_and_inputs(5)
    model.enable_lora(2, target_names=("query", "value", "ffn"))
    rng = np.random.default_rng(6)
    adapted = dict(w)
    for layer, name in dense_layers(model):
        if not layer.lora_enabled:
            continue
        layer.lora_kernel_b.assign(rng.normal(0, 0.3, layer.lora_kernel_b.shape).astype(np.float32))
        a, b = (keras.ops.convert_to_numpy(v).astype(np.float64) for v in (layer.lora_kernel_a, layer.lora_kernel_b))
        adapted[f"{name}/kernel"] = w[f"{name}/kernel"] + layer.lora_alpha / layer.lora_rank * a @ b
    assert len(lora_layers(model)) == 2 * 3      # two groups, three targets each
    assert_reference(model, adapted, inputs, 1e-5)
    assert_reference(merged_copy(model), adapted, inputs, 1e-5)
    path = os.path.join(tmp_path, "lora.keras")
    model.save(path)
    assert_reference(keras.saving.load_model(path), adapted, inputs, 1e-5)


def test_int8_is_keras_own_weight_only_and_gives_the_reference_on_the_dequantized_kernels(tmp_path):
    """`quantize("int8")` is Keras' own on every `Dense` (int8 kernels, a per-column scale, inputs left in float):
    the encoder gives the NumPy forward on `kernel / kernel_scale`, and so does its `.keras` file reloaded."""
    model, w, inputs = model_and_inputs(7)
    model.quantize("int8")
    dequantized = dict(w)
    for layer, name in dense_layers(model):
        assert layer.quantization_mode == "int8" and keras.backend.standardize_dtype(layer.kernel.dtype) == "int8"
        kernel = keras.ops.convert_to_numpy(layer.kernel).astype(np.float64)
        dequantized[f"{name}/kernel"] = kernel / keras.ops.convert_to_numpy(layer.kernel_scale).astype(np.float64)
    np.testing.assert_allclose(dequantized["bert/pooler/dense/kernel"], w["bert/pooler/dense/kernel"], atol=0.01)
    assert_reference(model, dequantized, inputs, 1e-4)
    path = os.path.join(tmp_path, "int8.keras")
    model.save(path)
    assert_reference(keras.saving.load_model(path), dequantized, inputs, 1e-4)


@pytest.mark.parametrize("mode", ["int4", "float8"])
def test_other_quantization_modes_are_refused_in_one_line(mode):
    model, _, _ = model_and_inputs(8)
    with pytest.raises(Exception, match="int8") as info:
        model.quantize(mode)
    assert "\n" not in str(info.value)


def test_an_activation_quantizer_given_is_kept_and_saved(tmp_path):
    """A config naming its own activation quantizer quantizes the matmul inputs too (Keras' int8 matmul), and the
    `.keras` file reloads with the same config and outputs."""
    model, _, inputs = model_and_inputs(9)
    config = keras.quantizers.Int8QuantizationConfig(activation_quantizer=keras.quantizers.AbsMaxQuantizer(axis=-1))
    model.quantize("int8", config=config)
    assert all(layer.inputs_quantizer is not None for layer, _ in dense_layers(model))
    path = os.path.join(tmp_path, "int8_inputs.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert all(layer.inputs_quantizer is not None for layer, _ in dense_layers(reloaded))
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(inputs)[name]),
                                   keras.ops.convert_to_numpy(model(inputs)[name]), atol=1e-6)
