"""The ALBERT encoder (`AlbertModel`) and what every task's head builds on (`base`); the heads live with their
tasks (`albert_tf.tasks.<task>.model`)."""

from albert_tf.models.albert_model import AlbertModel, compile_forward
