"""Keras 3 layers of ALBERT."""

from albert_tf.layers.activations import gelu, get_activation
from albert_tf.layers.attention import AlbertAttention, attention_bias
from albert_tf.layers.embeddings import AlbertEmbeddings
from albert_tf.layers.heads import AlbertMaskedLMHead, AlbertOutputProjection, gather_positions
from albert_tf.layers.transformer import AlbertTransformerBlock
