"""The test-side map from the original's TF1 variable names (`numpy_reference.random_weights`) to the attributes of
an `AlbertModel`, written out by hand so that the checkpoint table (tested apart) is not what the NumPy-reference
tests rely on."""

from numpy_reference import PREFIX

# (block attribute path, the original's scope under `group_g/inner_group_k`) of each Dense of a transformer block.
BLOCK_DENSES = (("attention.query", "attention_1/self/query"), ("attention.key", "attention_1/self/key"),
                ("attention.value", "attention_1/self/value"), ("attention.output_dense", "attention_1/output/dense"),
                ("ffn", "ffn_1/intermediate/dense"), ("ffn_output", "ffn_1/intermediate/output/dense"))


def dense_layers(model):
    """`[(keras.layers.Dense, the original's kernel name without "/kernel")]` of an `AlbertModel`."""
    found = []
    if model.embedding_projection is not None:
        found.append((model.embedding_projection, "bert/encoder/embedding_hidden_mapping_in"))
    for g, group in enumerate(model.groups):
        for k, block in enumerate(group):
            for path, scope in BLOCK_DENSES:
                layer = block
                for attribute in path.split("."):
                    layer = getattr(layer, attribute)
                found.append((layer, f"{PREFIX}/group_{g}/inner_group_{k}/{scope}"))
    found.append((model.pooler, "bert/pooler/dense"))
    return found


def assign_from_tf1(model, w):
    """Assigns the original-named weights `w` to `model` (an `AlbertModel`)."""
    emb = model.embeddings
    emb.word_embeddings.assign(w["bert/embeddings/word_embeddings"])
    emb.token_type_embeddings.assign(w["bert/embeddings/token_type_embeddings"])
    emb.position_embeddings.assign(w["bert/embeddings/position_embeddings"])
    emb.layer_norm.gamma.assign(w["bert/embeddings/LayerNorm/gamma"])
    emb.layer_norm.beta.assign(w["bert/embeddings/LayerNorm/beta"])
    for layer, name in dense_layers(model):
        layer.kernel.assign(w[f"{name}/kernel"])
        layer.bias.assign(w[f"{name}/bias"])
    for g, group in enumerate(model.groups):
        for k, block in enumerate(group):
            scope = f"{PREFIX}/group_{g}/inner_group_{k}"
            for ln, name in ((block.attention_layer_norm, "LayerNorm"), (block.output_layer_norm, "LayerNorm_1")):
                ln.gamma.assign(w[f"{scope}/{name}/gamma"])
                ln.beta.assign(w[f"{scope}/{name}/beta"])
