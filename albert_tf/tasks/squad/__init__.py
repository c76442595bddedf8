"""SQuAD 1.1 and 2.0 question answering, as the original `run_squad_v1.py` / `run_squad_v2.py`.

- `data`: the SQuAD JSON reader, features (doc stride) and TFRecords.
- `postprocess`: n-best answers, null odds and the official evaluation.
- `model`: `AlbertSquadV1`, `AlbertSquadV2` and their losses.
- `kind`: the `squad_v1`, `squad_v2` model kinds: serving spec, checkpoint names, registration, the `squad` text mode.
- `task`: the SQuAD task and `run_squad`.
"""

# The Keras classes of `model`, known by name before TensorFlow loads (`albert_tf.keras_names`,
# `albert_tf.__all__`); this module imports nothing.
KERAS_CLASSES = ('AlbertSquadV1', 'AlbertSquadV2')
# The command lines of this task (`albert_tf.commands` finds them here without importing the task).
COMMANDS = {"run_squad": "albert_tf.tasks.squad.task:RUN_SQUAD",
            "run_squad_v1": "albert_tf.tasks.squad.task:RUN_SQUAD_V1",
            "run_squad_v2": "albert_tf.tasks.squad.task:RUN_SQUAD_V2"}
