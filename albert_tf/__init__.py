"""albert_tf: ALBERT for TensorFlow 2 / Keras 3, faithful to Google's original release."""

from albert_tf.config import AlbertConfig, PRESETS
from albert_tf.models import AlbertModel, AlbertPretrainer

__version__ = "0.1.0"
