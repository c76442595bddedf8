"""`ServingSpec`: how `albert_tf.export.saved_model` serves one model class; each model kind declares its own
(`albert_tf.registry.ModelKind.serving_spec`, next to its model class).

A spec says what the signatures of `export_saved_model` take and return for its class: the token inputs of
`serving_default` and how the model is called on them, the named outputs, the `tf.Example` features of
`serve_examples` (from the TFRecord schemas of `albert_tf.data.features`), the raw-text inputs of `serve_text`
and how they are packed (`albert_tf.text.ops.TextPipeline`), and the checks of the export arguments; and for
the pipelines and LiteRT: the `albert_tf.pipeline` tasks its exports serve, its fixed LiteRT input shapes, the
facts an export's metadata records (`albert_tf.export.metadata`) and how a line of calibration text is packed.
"""

import abc

import tensorflow as tf

from albert_tf.config import TOKEN_INPUTS
from albert_tf.data import features
from albert_tf.errors import InputError
from albert_tf.text import packing



def string_specs(names):
    """`{name: TensorSpec([None], tf.string)}`: one string per example for each input in `names`."""
    return {name: tf.TensorSpec([None], tf.string, name=name) for name in names}


class ServingSpec(abc.ABC):
    """How one model class is served. Subclasses override what differs; the model kind that declares a spec
    (`albert_tf.registry.ModelKind.serving_spec`) sets `kind` and `model_class` when it is registered.

    The defaults describe a model called on the three token inputs `[batch, seq]` and served from the
    sentence (pair) inputs `text_a`, `text_b`, packed as GLUE's `convert_single_example`.
    """

    kind = None
    model_class = None

    # serving_default: named int32 features -> model call -> named outputs.

    def token_specs(self):
        """`{name: TensorSpec}` of the `serving_default` inputs."""
        return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in TOKEN_INPUTS}

    def model_inputs(self, features):
        """The model's call inputs from the serving features."""
        return {name: features[name] for name in TOKEN_INPUTS}

    @abc.abstractmethod
    def outputs(self, out, threshold):
        """The named serving outputs from the model's output dict."""

    # serve_examples: the original TFRecord features.

    def example_spec(self, max_seq_length, lengths):
        """`{name: FixedLenFeature}` parsed by `serve_examples` (the token features of the GLUE schema);
        `lengths`: every text mode's length by name (`albert_tf.text.modes.resolve_lengths`)."""
        del lengths  # For the kinds whose records have another length (the pretrainer's mask slots).
        return features.parse_spec(features.select(features.TOKENS, TOKEN_INPUTS), seq=max_seq_length)

    def example_features(self, parsed, max_seq_length):
        """(int32 serving features, outputs passed through) from the parsed `tf.Example`s."""
        del max_seq_length  # Used by the multiple-choice layout.
        return {name: tf.cast(parsed[name], tf.int32) for name in TOKEN_INPUTS}, {}

    # serve_text: raw strings -> tokenized and packed in the graph.

    def text_specs(self):
        """`{name: TensorSpec}` of the `serve_text` inputs."""
        return string_specs(("text_a", "text_b"))

    def text_features(self, pipeline, texts):
        """Packed int32 features from the `serve_text` inputs."""
        return pipeline.pack_texts(texts["text_a"], texts["text_b"])

    def text_outputs(self, outputs, features):
        """The `serve_text` outputs: the model's outputs plus the packed `input_ids`."""
        outputs["input_ids"] = features["input_ids"]
        return outputs

    # Arguments.

    def check_arguments(self, model, max_seq_length, threshold):
        """Raises ValueError on export arguments that do not fit this model class (the lengths are checked by
        the kind's text mode, `TextMode.check`)."""
        del max_seq_length  # For the task specs.
        if threshold is not None:
            raise InputError(f"`threshold` applies to classifiers only. Received `threshold={threshold}` for a "
                             f"{type(model).__name__}.")

    # Pipelines, export metadata and LiteRT.

    # The `albert_tf.pipeline` tasks that an export of this kind serves (`albert_tf.registry.serving_kinds`).
    pipeline_tasks = ()

    # The MediaPipe text task that runs this kind's `--format=mediapipe` export and the model output it reads:
    # `("TextClassifier", output)` (label probabilities) or `("TextEmbedder", output)`; None: no MediaPipe task.
    mediapipe_task = None

    def export_facts(self, model):
        """What an export of `model` records beyond the shared fields (`albert_tf.export.metadata`) and its text
        mode's lengths: the kind's own sizes. None here."""
        del model  # For the task specs.
        return {}

    def fixed_input_shapes(self, batch_size, max_seq_length, lengths):
        """`{name: shape}` of the fixed-shape `serving_default` inputs of a LiteRT export: the token specs with
        the batch dimension `batch_size` and every other unknown dimension `max_seq_length`."""
        del lengths  # For the kinds with other inputs (the pretrainer's `mlm_positions`).
        return {name: [batch_size] + [max_seq_length if dim is None else int(dim)
                                      for dim in spec.shape.as_list()[1:]]
                for name, spec in self.token_specs().items()}

    def calibration_rows(self, fields, path, number, tokenizer, do_lower_case, shapes):
        """The feature rows of line `number` of the calibration text `path`, split at tabs into `fields`:
        `text_a[<TAB>text_b]`, packed as GLUE's `convert_single_example`."""
        if len(fields) > 2:
            raise InputError(f"`{path}` line {number}: expected `text_a` or `text_a<TAB>text_b`.")
        text_a = packing.process_text(fields[0], do_lower_case=do_lower_case)
        text_b = packing.process_text(fields[1], do_lower_case=do_lower_case) if len(fields) == 2 else None
        return [packing.pack_pair(tokenizer, text_a, text_b, shapes["input_ids"][-1])]
