"""Token classification (named entities), with CoNLL-2003 data.

- `data`: the CoNLL reader, word-to-piece alignment and TFRecords.
- `model`: `AlbertTokenClassifier` and its loss.
- `kind`: the `token_classifier` model kind: serving spec, checkpoint names, registration, in-graph word packing.
- `conlleval`: entity-level precision, recall and F1 (as `conlleval.pl` and seqeval).
- `task`: the NER task and `run_ner`.
- `pipeline`: the `token-classification` pipeline.
"""

# The Keras classes of `model`, known by name before TensorFlow loads (`albert_tf.keras_names`,
# `albert_tf.__all__`); this module imports nothing.
KERAS_CLASSES = ('AlbertTokenClassifier',)
# The command lines of this task (`albert_tf.commands` finds them here without importing the task).
COMMANDS = {"run_ner": "albert_tf.tasks.ner.task:RUN_NER"}
