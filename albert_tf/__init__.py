"""albert_tf: ALBERT for TensorFlow 2 / Keras 3, faithful to Google's original release."""

from albert_tf.config import PRESETS, AlbertConfig
from albert_tf.models import (AlbertClassifier, AlbertModel, AlbertPretrainer, AlbertRace, AlbertSquadV1,
                              AlbertSquadV2)

__version__ = "0.1.0"
