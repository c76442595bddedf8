"""RACE multiple-choice reading comprehension, as the original `run_race.py`.

- `data`: the RACE JSON reader, features (four choices) and TFRecords.
- `model`: `AlbertRace` and its loss.
- `kind`: the `race` model kind: serving spec, checkpoint names, registration, the `race` text mode.
- `task`: the RACE task and `run_race`.
"""

# The Keras classes of `model`, known by name before TensorFlow loads (`albert_tf.keras_names`,
# `albert_tf.__all__`); this module imports nothing.
KERAS_CLASSES = ('AlbertRace',)
# The command lines of this task (`albert_tf.commands` finds them here without importing the task).
COMMANDS = {"run_race": "albert_tf.tasks.race.task:RUN_RACE"}
