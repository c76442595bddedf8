"""An independent NumPy forward pass of the original ALBERT, written from the original `modeling.py` (`AlbertModel`,
`embedding_lookup`, `embedding_postprocessor`, `transformer_model`) and the variable names of Google's checkpoints.

Weights are a dict keyed by the original TF1 variable names (`bert/embeddings/word_embeddings`, ...), so the
reference knows nothing about the Keras models. Float64 throughout.
"""

import math

import numpy as np

PREFIX = "bert/encoder/transformer"


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = {
    "gelu": gelu,
    "relu": lambda x: np.maximum(x, 0.0),
    "tanh": np.tanh,
    "linear": lambda x: x,
}


def layer_norm(x, gamma, beta, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def block(w, scope, x, mask, num_heads, act):
    """`attention_ffn_block` and `attention_layer` of the original `modeling.py`, post-LN, no dropout."""
    b, t, h = x.shape
    d = h // num_heads

    def dense(inp, name):
        return inp @ w[f"{scope}/{name}/kernel"] + w[f"{scope}/{name}/bias"]

    def heads(y):  # [b, t, h] -> [b, n, t, d]
        return y.reshape(b, t, num_heads, d).transpose(0, 2, 1, 3)

    q = heads(dense(x, "attention_1/self/query"))
    k = heads(dense(x, "attention_1/self/key"))
    v = heads(dense(x, "attention_1/self/value"))
    logits = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)               # [b, n, from, to]
    adder = (1.0 - mask[:, None, None, :].astype(np.float64)) * -10000.0
    probs = softmax(logits + adder)
    ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, h)
    a = dense(ctx, "attention_1/output/dense")
    x1 = layer_norm(a + x, w[f"{scope}/LayerNorm/gamma"], w[f"{scope}/LayerNorm/beta"])
    inter = act(dense(x1, "ffn_1/intermediate/dense"))
    f = dense(inter, "ffn_1/intermediate/output/dense")
    return layer_norm(f + x1, w[f"{scope}/LayerNorm_1/gamma"], w[f"{scope}/LayerNorm_1/beta"])


def albert_forward(w, config, input_ids, input_mask, segment_ids):
    """Returns dict `sequence_output`, `pooled_output`, `all_encoder_layers`, `embedding_output`."""
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    input_ids = np.asarray(input_ids)
    t = input_ids.shape[1]
    emb = (w["bert/embeddings/word_embeddings"][input_ids]
           + w["bert/embeddings/token_type_embeddings"][np.asarray(segment_ids)]
           + w["bert/embeddings/position_embeddings"][:t][None])
    emb = layer_norm(emb, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
    x = emb
    if config["embedding_size"] != config["hidden_size"]:
        x = x @ w["bert/encoder/embedding_hidden_mapping_in/kernel"] + w["bert/encoder/embedding_hidden_mapping_in/bias"]
    act = ACTIVATIONS[config.get("hidden_act", "gelu")]
    num_layers, num_groups = config["num_hidden_layers"], config["num_hidden_groups"]
    all_layers = []
    for layer_idx in range(num_layers):
        g = int(layer_idx / num_layers * num_groups)
        for k in range(config["inner_group_num"]):
            x = block(w, f"{PREFIX}/group_{g}/inner_group_{k}", x, np.asarray(input_mask),
                      config["num_attention_heads"], act)
            all_layers.append(x)
    pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
    return {"sequence_output": x, "pooled_output": pooled, "all_encoder_layers": all_layers,
            "embedding_output": emb}


def pretraining_heads(w, config, sequence_output, pooled_output, masked_lm_positions):
    """`get_masked_lm_output` logits `[b, P, V]` and `get_sentence_order_output` logits `[b, 2]` (the original `run_pretraining.py`)."""
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    act = ACTIVATIONS[config.get("hidden_act", "gelu")]
    positions = np.asarray(masked_lm_positions)
    x = np.take_along_axis(sequence_output, positions[..., None], axis=1)   # [b, P, H]
    x = act(x @ w["cls/predictions/transform/dense/kernel"] + w["cls/predictions/transform/dense/bias"])
    x = layer_norm(x, w["cls/predictions/transform/LayerNorm/gamma"], w["cls/predictions/transform/LayerNorm/beta"])
    mlm_logits = x @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
    sop_logits = pooled_output @ w["cls/seq_relationship/output_weights"].T + w["cls/seq_relationship/output_bias"]
    return mlm_logits, sop_logits


def random_weights(config, rng, heads=True):
    """Random weights under the original names (LayerNorm and biases away from 0/1)."""
    V, E, H = config["vocab_size"], config["embedding_size"], config["hidden_size"]
    I, P, T = config["intermediate_size"], config["max_position_embeddings"], config["type_vocab_size"]

    def n(*shape, scale=0.2):
        return rng.normal(0.0, scale, size=shape).astype(np.float32)

    w = {
        "bert/embeddings/word_embeddings": n(V, E),
        "bert/embeddings/token_type_embeddings": n(T, E),
        "bert/embeddings/position_embeddings": n(P, E),
        "bert/embeddings/LayerNorm/gamma": 1.0 + n(E),
        "bert/embeddings/LayerNorm/beta": n(E),
        "bert/pooler/dense/kernel": n(H, H),
        "bert/pooler/dense/bias": n(H),
    }
    if E != H:
        w["bert/encoder/embedding_hidden_mapping_in/kernel"] = n(E, H)
        w["bert/encoder/embedding_hidden_mapping_in/bias"] = n(H)
    for g in range(config["num_hidden_groups"]):
        for k in range(config["inner_group_num"]):
            s = f"{PREFIX}/group_{g}/inner_group_{k}"
            for name in ("query", "key", "value"):
                w[f"{s}/attention_1/self/{name}/kernel"] = n(H, H)
                w[f"{s}/attention_1/self/{name}/bias"] = n(H)
            w[f"{s}/attention_1/output/dense/kernel"] = n(H, H)
            w[f"{s}/attention_1/output/dense/bias"] = n(H)
            w[f"{s}/LayerNorm/gamma"] = 1.0 + n(H)
            w[f"{s}/LayerNorm/beta"] = n(H)
            w[f"{s}/ffn_1/intermediate/dense/kernel"] = n(H, I)
            w[f"{s}/ffn_1/intermediate/dense/bias"] = n(I)
            w[f"{s}/ffn_1/intermediate/output/dense/kernel"] = n(I, H)
            w[f"{s}/ffn_1/intermediate/output/dense/bias"] = n(H)
            w[f"{s}/LayerNorm_1/gamma"] = 1.0 + n(H)
            w[f"{s}/LayerNorm_1/beta"] = n(H)
    if heads:
        w["cls/predictions/transform/dense/kernel"] = n(H, E)
        w["cls/predictions/transform/dense/bias"] = n(E)
        w["cls/predictions/transform/LayerNorm/gamma"] = 1.0 + n(E)
        w["cls/predictions/transform/LayerNorm/beta"] = n(E)
        w["cls/predictions/output_bias"] = n(V)
        w["cls/seq_relationship/output_weights"] = n(2, H)
        w["cls/seq_relationship/output_bias"] = n(2)
    return w
