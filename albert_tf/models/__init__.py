"""ALBERT models: the encoder, the pretrainer and the task models."""

from albert_tf.models.albert_model import AlbertModel, compile_forward
from albert_tf.models.classifier import AlbertClassifier, classifier_loss
from albert_tf.models.pretrainer import AlbertPretrainer, pretraining_loss
from albert_tf.models.race import AlbertRace, race_loss
from albert_tf.models.squad import AlbertSquadV1, AlbertSquadV2, squad_v1_loss, squad_v2_loss
