"""Factorized embeddings: word, segment and position tables of width E, LayerNorm and dropout at width E."""

import keras

from albert_tf.layers import tf_fast_path
from albert_tf.layers.base import ConfigLayer


def truncated_normal(stddev):
    """TF1's `truncated_normal_initializer(stddev)`: normal, re-drawn beyond 2 sigma."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEmbeddings(ConfigLayer):
    """`bert/embeddings` of the original (`embedding_lookup` and `embedding_postprocessor` in `modeling.py`).

    `word + token_type + position[:seq_len]` -> LayerNorm (epsilon 1e-12) -> dropout, all at width
    `embedding_size`. The projection to `hidden_size` is not part of this layer (the original keeps it under
    `bert/encoder/embedding_hidden_mapping_in`).

    Args:
        vocab_size: int, rows of `word_embeddings`.
        embedding_size: int, width E.
        type_vocab_size: int, rows of `token_type_embeddings`.
        max_position_embeddings: int, rows of `position_embeddings`.
        initializer_range: float, truncated-normal stddev.
        dropout_rate: float, dropout after the LayerNorm (training only).
    """

    def __init__(self, vocab_size, embedding_size, type_vocab_size=2, max_position_embeddings=512,
                 initializer_range=0.02, dropout_rate=0.0, **kwargs):
        super().__init__(**kwargs)
        self.keep_arguments(vocab_size=vocab_size, embedding_size=embedding_size, type_vocab_size=type_vocab_size,
                            max_position_embeddings=max_position_embeddings, initializer_range=initializer_range,
                            dropout_rate=dropout_rate)
        self.layer_norm = keras.layers.LayerNormalization(epsilon=1e-12, dtype="float32", name="LayerNorm")
        self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape=None):
        init = truncated_normal(self.initializer_range)
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.embedding_size), initializer=init)
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(self.type_vocab_size, self.embedding_size), initializer=init)
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(self.max_position_embeddings, self.embedding_size),
            initializer=init)
        self.layer_norm.build((None, None, self.embedding_size))
        self.built = True

    def call(self, input_ids, segment_ids, training=None, dropout_seed=None):
        ops = keras.ops
        seq_len = ops.shape(input_ids)[1]
        tf_fast_path.check_sequence_length(seq_len, self.max_position_embeddings)
        words = ops.take(self.word_embeddings, input_ids, axis=0)           # [batch, seq, E]
        types = ops.take(self.token_type_embeddings, segment_ids, axis=0)   # [batch, seq, E]
        positions = self.position_embeddings[:seq_len][None]                # [1, seq, E]
        x = ops.cast(words, "float32") + ops.cast(types, "float32") + ops.cast(positions, "float32")
        x = self.layer_norm(x)
        x = ops.cast(x, self.compute_dtype)
        if self.dropout_rate > 0:
            x = tf_fast_path.dropout(self.dropout, x, training, dropout_seed)   # stateless from a seed if given
        return x
