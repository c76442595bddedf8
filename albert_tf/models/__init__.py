"""ALBERT models: the encoder, the pretrainer and the task models."""

from albert_tf.models.albert_model import AlbertModel
from albert_tf.models.pretrainer import AlbertPretrainer, pretraining_loss
