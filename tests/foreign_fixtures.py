"""Hugging Face directories written with transformers' names and inputs for the foreign-weights tests
(shared with the NER tests)."""

import json
import os
import keras_hub
import numpy as np
import safetensors.numpy
from keras_hub.src.utils.transformers import convert_albert
from keras_hub.src.utils.transformers.safetensor_utils import SafetensorLoader


BASE = dict(vocab_size=61, embedding_size=8, hidden_size=16, num_attention_heads=2, intermediate_size=24,
            max_position_embeddings=32, type_vocab_size=2, hidden_act="gelu", hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, initializer_range=0.02)
CONFIGS = {
    "G1K1": dict(BASE, num_hidden_layers=3, num_hidden_groups=1, inner_group_num=1),
    "G2K2": dict(BASE, num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2),
    "E_eq_H": dict(BASE, embedding_size=16, num_hidden_layers=2, num_hidden_groups=1, inner_group_num=1),
}
SPM_BYTES = b"sentencepiece model bytes of the fixture"


def make_inputs(batch=2, seq=9, vocab=61, seed=5):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, size=(batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[1, 6:] = 0
    seg = np.zeros((batch, seq), np.int32)
    seg[:, 5:] = 1
    return ids, mask, seg


def keras_hub_from_hf(directory):
    """keras-hub's own transformers converter for ALBERT, as `AlbertBackbone.from_preset(hf_dir)` runs it
    (`TransformersPresetLoader.load_backbone`), called directly: that loader module imports every converter of
    keras-hub, and some of them need a newer protobuf than apache-beam leaves installed beside TensorFlow."""
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    backbone = keras_hub.models.AlbertBackbone(**convert_albert.convert_backbone_config(config))
    with SafetensorLoader(directory) as loader:
        convert_albert.convert_weights(backbone, loader, config)
    return backbone


def hf_state_dict(config, rng, heads=("mlm", "sop"), prefix="albert.", num_labels=3):
    """A random state dict under transformers' AlbertForPreTraining (etc.) names, plus its TF1-name twin.

    The mapping is transcribed here from transformers' `load_tf_weights_in_albert` (independent of the code
    under test): `nn.Linear.weight` is the transposed TF1 kernel; classifier-like weights keep `[out, H]`.
    """
    hf, tf1 = {}, {}

    def put(hf_name, tf1_name, shape, transpose=False):
        value = rng.normal(scale=0.3, size=shape).astype(np.float32)
        hf[hf_name] = value
        tf1[tf1_name] = value.T.copy() if transpose else value

    e, h, i, v = config["embedding_size"], config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    put(prefix + "embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings", (v, e))
    put(prefix + "embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings",
        (config["max_position_embeddings"], e))
    put(prefix + "embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings",
        (config["type_vocab_size"], e))
    put(prefix + "embeddings.LayerNorm.weight", "bert/embeddings/LayerNorm/gamma", (e,))
    put(prefix + "embeddings.LayerNorm.bias", "bert/embeddings/LayerNorm/beta", (e,))
    if e != h:
        put(prefix + "encoder.embedding_hidden_mapping_in.weight", "bert/encoder/embedding_hidden_mapping_in/kernel",
            (h, e), transpose=True)
        put(prefix + "encoder.embedding_hidden_mapping_in.bias", "bert/encoder/embedding_hidden_mapping_in/bias", (h,))
    else:   # transformers always has the projection; the original none: the identity is equivalent.
        hf[prefix + "encoder.embedding_hidden_mapping_in.weight"] = np.eye(h, dtype=np.float32)
        hf[prefix + "encoder.embedding_hidden_mapping_in.bias"] = np.zeros(h, np.float32)
    for g in range(config["num_hidden_groups"]):
        for k in range(config["inner_group_num"]):
            p = f"{prefix}encoder.albert_layer_groups.{g}.albert_layers.{k}."
            s = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"
            for part in ("query", "key", "value"):
                put(p + f"attention.{part}.weight", s + f"attention_1/self/{part}/kernel", (h, h), transpose=True)
                put(p + f"attention.{part}.bias", s + f"attention_1/self/{part}/bias", (h,))
            put(p + "attention.dense.weight", s + "attention_1/output/dense/kernel", (h, h), transpose=True)
            put(p + "attention.dense.bias", s + "attention_1/output/dense/bias", (h,))
            put(p + "attention.LayerNorm.weight", s + "LayerNorm/gamma", (h,))
            put(p + "attention.LayerNorm.bias", s + "LayerNorm/beta", (h,))
            put(p + "ffn.weight", s + "ffn_1/intermediate/dense/kernel", (i, h), transpose=True)
            put(p + "ffn.bias", s + "ffn_1/intermediate/dense/bias", (i,))
            put(p + "ffn_output.weight", s + "ffn_1/intermediate/output/dense/kernel", (h, i), transpose=True)
            put(p + "ffn_output.bias", s + "ffn_1/intermediate/output/dense/bias", (h,))
            put(p + "full_layer_layer_norm.weight", s + "LayerNorm_1/gamma", (h,))
            put(p + "full_layer_layer_norm.bias", s + "LayerNorm_1/beta", (h,))
    put(prefix + "pooler.weight", "bert/pooler/dense/kernel", (h, h), transpose=True)
    put(prefix + "pooler.bias", "bert/pooler/dense/bias", (h,))
    if "mlm" in heads:
        put("predictions.dense.weight", "cls/predictions/transform/dense/kernel", (e, h), transpose=True)
        put("predictions.dense.bias", "cls/predictions/transform/dense/bias", (e,))
        put("predictions.LayerNorm.weight", "cls/predictions/transform/LayerNorm/gamma", (e,))
        put("predictions.LayerNorm.bias", "cls/predictions/transform/LayerNorm/beta", (e,))
        put("predictions.bias", "cls/predictions/output_bias", (v,))
        hf["predictions.decoder.weight"] = hf[prefix + "embeddings.word_embeddings.weight"]
        hf["predictions.decoder.bias"] = hf["predictions.bias"]
    if "sop" in heads:
        put("sop_classifier.classifier.weight", "cls/seq_relationship/output_weights", (2, h))
        put("sop_classifier.classifier.bias", "cls/seq_relationship/output_bias", (2,))
    if "classifier" in heads:
        put("classifier.weight", "output_weights", (num_labels, h))
        put("classifier.bias", "output_bias", (num_labels,))
    if "qa" in heads:
        put("qa_outputs.weight", "cls/squad/output_weights", (2, h))
        put("qa_outputs.bias", "cls/squad/output_bias", (2,))
    return hf, tf1


def write_hf_dir(directory, config, state, architecture="AlbertForPreTraining", hidden_act="gelu_new"):
    os.makedirs(directory, exist_ok=True)
    hf_config = {k: v for k, v in config.items() if k != "hidden_act"}
    hf_config.update(architectures=[architecture], model_type="albert", hidden_act=hidden_act,
                     layer_norm_eps=1e-12, classifier_dropout_prob=0.1, position_embedding_type="absolute")
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(hf_config, f)
    safetensors.numpy.save_file(state, os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(directory, "spiece.model"), "wb") as f:
        f.write(SPM_BYTES)
    return directory
