"""The `encoder` model kind: how `AlbertModel` is served and its registration (its checkpoint rows are
`albert_tf.checkpoints.table.ENCODER_ROWS`)."""

from albert_tf import registry
from albert_tf.models.albert_model import AlbertModel
from albert_tf.serving_spec import ServingSpec


class EncoderSpec(ServingSpec):
    """`AlbertModel`: the encoder's sequence and pooled outputs."""

    pipeline_tasks = ("feature-extraction",)
    mediapipe_task = ("TextEmbedder", "pooled_output")

    def outputs(self, out, threshold):
        return {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"]}


KIND = registry.register(registry.ModelKind(
    name="encoder", model_class=AlbertModel, serving_spec=EncoderSpec(), hf_architecture="AlbertModel", order=0))
