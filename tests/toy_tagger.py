"""A toy tagger defined only in the tests: its Keras class and serving spec (tests/toy_tagger.py
registers it; tests/test_layout.py writes its source into a new task folder)."""

import keras
from albert_tf.layers.heads import AlbertOutputProjection
from albert_tf import AlbertModel
from albert_tf.models.albert_model import as_config
from albert_tf.models.base import PretrainedMixin
from albert_tf.serving_spec import ServingSpec


CONFIG = dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_hidden_groups=1,
              num_attention_heads=2, intermediate_size=24, max_position_embeddings=16, hidden_act="gelu")
TOY_HEAD = "toy_tagger"


class AlbertToyTagger(PretrainedMixin, keras.Model):
    """A token tagger: `sequence_output` -> `tagger/output_weights [num_labels, H]`, `output_bias`."""

    _CONFIG_ARGUMENTS = ("num_labels",)

    def __init__(self, config=None, num_labels=3, encoder=None, preprocessor=None, **kwargs):
        kwargs.setdefault("name", "toy_tagger")
        encoder = encoder or AlbertModel(as_config(config), dtype=kwargs.get("dtype"))
        super().__init__(**kwargs)
        self.encoder, self.config, self.recompute, self.num_labels = encoder, encoder.config, False, num_labels
        self.tagger_head = AlbertOutputProjection(num_labels, self.config.hidden_size, 0.02,
                                                  dtype=self.dtype_policy, name="tagger")
        self.tagger_head.build()
        self.set_preprocessor(preprocessor)
        self.built = True

    def call(self, inputs, training=None):
        inputs = self.token_inputs(inputs)
        sequence = self.encoder(inputs, training=training)["sequence_output"]
        return {"logits": self.tagger_head(sequence)}                     # [batch, seq, num_labels]


class ToySpec(ServingSpec):
    def outputs(self, out, threshold):
        return {"logits": out["logits"]}
