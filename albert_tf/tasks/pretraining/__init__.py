"""Pretraining: the TFRecord writer of the original `create_pretraining_data.py` (SOP pairs, n-gram masking;
local or Apache Beam), its reader, the pretrainer head (MLM + SOP) and the `run_pretraining` task.

- `writer/`: the TFRecord writer (`albert-create-pretraining-data`), local or Apache Beam.
- `inputs`: the pretraining TFRecords as a `tf.data` pipeline.
- `model`: `AlbertPretrainer` and its loss.
- `kind`: the `pretrainer` model kind: serving spec, checkpoint names, registration, the `masked` text mode.
- `task`: `run_pretraining`.
"""

# The Keras classes of `model`, known by name before TensorFlow loads (`albert_tf.keras_names`,
# `albert_tf.__all__`); this module imports nothing at import time.
KERAS_CLASSES = ('AlbertPretrainer',)

# The command lines of this task (`albert_tf.commands` finds them here without importing the task).
COMMANDS = {"run_pretraining": "albert_tf.tasks.pretraining.task:RUN_PRETRAINING",
            "create_pretraining_data": "albert_tf.tasks.pretraining.writer.create_data:COMMAND"}
