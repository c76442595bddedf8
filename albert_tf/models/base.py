"""`PretrainedMixin`: the Keras config round trip and `from_pretrained` shared by the models on an encoder."""

from albert_tf.checkpoints import load_pretrained


class PretrainedMixin:
    """`get_config`, `from_config` and `from_pretrained` of a `keras.Model` holding an `AlbertModel` encoder.

    Put it before `keras.Model` in the bases. The model must take the `AlbertConfig` (or its dict) as its first
    constructor argument `config`, keep it as `self.config`, and keep each constructor argument listed in
    `_CONFIG_ARGUMENTS` as an attribute of the same name, so that `cls.from_config(model.get_config())` (and a
    `.keras` save/load) rebuilds the same model.
    """

    # Names of the constructor arguments, besides `config` and `name`, that `get_config` records.
    _CONFIG_ARGUMENTS = ()

    def get_config(self):
        config = {"config": self.config.to_dict()}
        config.update((argument, getattr(self, argument)) for argument in self._CONFIG_ARGUMENTS)
        config["name"] = self.name
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(config.pop("config"), **config)

    @classmethod
    def from_pretrained(cls, path, config=None, **model_kwargs):
        """The model with its weights from any source `albert_tf.checkpoints.load_pretrained` reads.

        The encoder, and the heads of this class when the source has them (a fresh head otherwise), from a
        release dir, `.tar.gz`, TF1 checkpoint prefix, TF-Hub TF1 module dir, one of our checkpoints, a TF2
        SavedModel of tf-models' AlbertEncoder, a keras-hub preset or a Hugging Face directory (safetensors).

        Args:
            path: str, the checkpoint source.
            config: optional `AlbertConfig`, dict or JSON path; default the source's `albert_config.json`.
            **model_kwargs: passed to the constructor (e.g. `num_labels=3` for `AlbertClassifier`).

        Returns:
            the built model.
        """
        return load_pretrained(cls, path, config=config, **model_kwargs)
