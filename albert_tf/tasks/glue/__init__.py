"""GLUE (sentence and sentence-pair classification and regression), as the original `run_classifier.py`.

- `data`: the processors of every GLUE task (TSV layouts), features and cached TFRecords.
- `model`: `AlbertClassifier` and its loss.
- `kind`: the `classifier` model kind: serving spec, checkpoint names, registration.
- `task`: the `GlueTask` and `run_classifier`.
"""

# The Keras classes of `model`, known by name before TensorFlow loads (`albert_tf.keras_names`,
# `albert_tf.__all__`); this module imports nothing.
KERAS_CLASSES = ('AlbertClassifier',)
# The command lines of this task (`albert_tf.commands` finds them here without importing the task).
COMMANDS = {"run_classifier": "albert_tf.tasks.glue.task:RUN_CLASSIFIER"}
