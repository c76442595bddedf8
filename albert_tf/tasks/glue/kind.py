"""The `classifier` model kind: how `AlbertClassifier` is served, its checkpoint names and its registration."""

import tensorflow as tf

from albert_tf import registry
from albert_tf.checkpoints import table
from albert_tf.serving_spec import ServingSpec
from albert_tf.tasks.glue.model import AlbertClassifier


class ClassifierSpec(ServingSpec):
    """`AlbertClassifier`: probabilities and predictions, and an optional constant `threshold` output."""

    pipeline_tasks = ("text-classification",)
    mediapipe_task = ("TextClassifier", "probabilities")

    def outputs(self, out, threshold):
        outputs = {"probabilities": out["probabilities"], "predictions": out["predictions"]}
        if threshold is not None:
            # A constant shipped with the model (e.g. a tuned decision threshold), one value per example so
            # that TF Serving's row format can split it like the other outputs.
            outputs["threshold"] = tf.fill(tf.shape(out["predictions"])[:1], tf.constant(threshold, tf.float32))
        return outputs

    def check_arguments(self, model, max_seq_length, threshold):
        pass  # Every argument applies.

    def export_facts(self, model):
        return {"num_labels": int(model.num_labels)}


# `classifier_utils.create_model`: root-scope `output_weights [num_labels, H]`, `output_bias`; transformers'
# `AlbertForSequenceClassification` names.
HEAD = table.output_projection_head("classifier", "", "classifier_head", hf_module="classifier")
KIND = registry.register(registry.ModelKind(
    name="classifier", model_class=AlbertClassifier, heads=(HEAD,), serving_spec=ClassifierSpec(),
    hf_architecture="AlbertForSequenceClassification", labels_variable="output_weights", order=2,
    keras_hub_task="AlbertTextClassifier"))
