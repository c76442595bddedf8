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


def create_pretraining_data():
    """Console script `albert-create-pretraining-data` (setup.cfg): `create_data.main` after a quiet TF start."""
    from albert_tf import cli  # pylint: disable=import-outside-toplevel  # TensorFlow loads after the backend pick.
    cli.run_module("albert_tf.tasks.pretraining.writer.create_data")
