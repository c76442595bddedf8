"""Heads that keep the original's variable shapes: the tied MLM head and `output_weights` projections."""

import keras

from albert_tf.layers import tf_fast_path
from albert_tf.layers.activations import get_activation
from albert_tf.layers.base import ConfigLayer
from albert_tf.layers.embeddings import truncated_normal


def argmax(x):
    """int32 index of the largest entry over the last axis (the heads' `predictions`; see
    `tf_fast_path.argmax`)."""
    return tf_fast_path.argmax(x)


def gather_positions(sequence, positions):
    """`sequence [batch, seq, width]`, `positions [batch, P]` -> `[batch, P, width]` (`gather_indexes`)."""
    # expand_dims, not `[:, :, None]`: LiteRT converts no axis-adding slice of unknown shape (resizable exports).
    positions = keras.ops.expand_dims(keras.ops.cast(positions, "int32"), -1)   # [batch, P, 1]
    return keras.ops.take_along_axis(sequence, positions, axis=1)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMaskedLMHead(ConfigLayer):
    """`cls/predictions` (`get_masked_lm_output` in the original `run_pretraining.py`):
    `dense(E, act)` -> LayerNorm -> `x @ word_embeddings^T + bias`.

    The output projection is the encoder's embedding table, passed to `call`; this layer owns
    `transform/dense`, `transform/LayerNorm` and `output_bias`.

    Args:
        vocab_size: int, V (length of `output_bias`).
        embedding_size: int, E (width of the transform).
        hidden_size: int, H (input width).
        hidden_act: str, activation of the transform (the config's `hidden_act`).
        initializer_range: float, truncated-normal stddev.
    """

    def __init__(self, vocab_size, embedding_size, hidden_size, hidden_act="gelu", initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.keep_arguments(vocab_size=vocab_size, embedding_size=embedding_size, hidden_size=hidden_size,
                            hidden_act=hidden_act, initializer_range=initializer_range)
        self.activation = get_activation(hidden_act)
        self.dense = keras.layers.Dense(embedding_size, kernel_initializer=truncated_normal(initializer_range),
                                        dtype=self.dtype_policy, name="transform_dense")
        self.layer_norm = keras.layers.LayerNormalization(epsilon=1e-12, dtype="float32",
                                                          name="transform_LayerNorm")

    def build(self, input_shape=None):
        self.dense.build((None, None, self.hidden_size))
        self.layer_norm.build((None, None, self.embedding_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,), initializer="zeros")
        self.built = True

    def call(self, sequence_output, masked_lm_positions, embedding_table):
        x = gather_positions(sequence_output, masked_lm_positions)           # [batch, P, H]
        x = self.dense(x)                                                    # [batch, P, E]
        if self.activation is not None:
            x = self.activation(x)
        ops = keras.ops
        x = self.layer_norm(ops.cast(x, "float32"))
        table = ops.cast(embedding_table, self.compute_dtype)
        logits = ops.matmul(ops.cast(x, self.compute_dtype), ops.transpose(table))        # [batch, P, V]
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertOutputProjection(ConfigLayer):
    """`logits = x @ output_weights^T + output_bias` with `output_weights [num_outputs, H]`.

    This is how the original writes the SOP head (`cls/seq_relationship`), the GLUE classifier, the SQuAD v1
    span head (`cls/squad`) and the RACE scorer: the weight keeps the TF1 shape `[num_outputs, H]`
    (transposed with respect to a Keras `Dense` kernel), initialised truncated-normal, bias zeros.

    Args:
        num_outputs: int, number of logits.
        hidden_size: int, H.
        initializer_range: float, truncated-normal stddev.
    """

    def __init__(self, num_outputs, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.keep_arguments(num_outputs=num_outputs, hidden_size=hidden_size, initializer_range=initializer_range)

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights", shape=(self.num_outputs, self.hidden_size),
            initializer=truncated_normal(self.initializer_range))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.num_outputs,),
                                           initializer="zeros")
        self.built = True

    def call(self, x):
        ops = keras.ops
        w = ops.cast(self.output_weights, self.compute_dtype)
        logits = ops.matmul(x, ops.transpose(w))                             # [..., num_outputs]
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")
