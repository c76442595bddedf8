"""`AlbertPreprocessor`: raw strings -> packed ALBERT features as a serializable Keras layer.

The layer holds the in-graph tokenizer and packing of `albert_tf.text.ops.TextPipeline` (the same code as the
`serve_text` exports): `preprocess_text` with the digit-comma rule, SentencePiece ids and the original's
feature converters. A task model holding one (`AlbertClassifier(..., preprocessor=pre)`) takes raw strings
in `fit`, `evaluate` and `predict`; the layer runs in the `tf.data` input pipeline there, so the model's own
computation stays the same graph of int32 features on every device.

How the inputs are packed is a text mode (`albert_tf.text.modes`): the shared `text` mode of sentences and pairs,
or a mode that a task declares in its folder and registers with its model kind; the layer dispatches through the
registry (`albert_tf.registry.text_modes`) and names no task.

The SentencePiece model is kept in the layer's config as a base64 string, so that a `.keras` file of a model
holding the layer carries its tokenizer.
"""

import base64
import hashlib
import os

import keras
import tensorflow as tf

from albert_tf.text import modes as text_modes
from albert_tf.text import ops as text_ops
from albert_tf.checkpoints import keras_hub, resolve_source
from albert_tf.config import AlbertConfig, check_max_seq_length
from albert_tf.errors import InputError

# How `call` packs its inputs: the names of the registered text modes (`text` and the tasks' own, e.g.
# `("text", "masked", "squad", "race")`); None decides by their structure (see `AlbertPreprocessor.call`).
DEFAULT_MAX_SEQ_LENGTH = 512   # `--max_seq_length` of run_classifier.py and run_race.py.


# SHA-256 -> bytes of the SentencePiece models of the preprocessors made in this process (for `from_config`).
_PROTOS = {}
# `spm_model` of a preprocessor whose SentencePiece model comes later, from a `.keras` file's assets.
_PENDING = object()
# The asset file of the SentencePiece model in a `.keras` file.
ASSET = "spiece.model"


def _proto_bytes(spm_model):
    """The bytes of a SentencePiece model given as bytes or as the path of a `.model` file."""
    if isinstance(spm_model, (bytes, bytearray, memoryview)):
        return bytes(spm_model)
    if isinstance(spm_model, (str, os.PathLike)):
        path = os.fspath(spm_model)
        if not tf.io.gfile.exists(path):
            raise InputError(f"SentencePiece model not found: `{path}`.")
        with tf.io.gfile.GFile(path, "rb") as f:
            return f.read()
    raise InputError("`spm_model` must be the bytes of a SentencePiece model or the path of its `.model` file. "
                     f"Received: {type(spm_model).__name__}.")


def string_tensors(inputs):
    """Text inputs (a string or list of strings, a tuple of them, or a dict of them) as tf.string tensors."""
    if isinstance(inputs, dict):
        return {key: text_modes.strings(key, value) for key, value in inputs.items()}
    if isinstance(inputs, tuple):
        return tuple(text_modes.strings(f"inputs[{i}]", value) for i, value in enumerate(inputs))
    return text_modes.strings("inputs", inputs)


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPreprocessor(keras.layers.Layer):
    """Raw strings -> the int32 features of an ALBERT task model, packed as the original's converters.

    Called on (the `text` mode, `albert_tf.text.modes.TEXT`):
      * a string tensor or list `[batch]`: single sentences, GLUE `convert_single_example` (`[CLS] a [SEP]`,
        the first `max_seq_length - 2` tokens);
      * a tuple `(text_a, text_b)` of two `[batch]` string tensors or lists: sentence pairs, truncated by
        `_truncate_seq_pair` (a row with an empty `text_b` is a single sentence); also a dict `text_a`, `text_b`;
    or on a dict of the keys of a task's text mode (`albert_tf.tasks.<task>.kind`), e.g. `question`,
    `context` (SQuAD: `[CLS] question [SEP] context [SEP]` of the first document span, plus `p_mask`) or
    `article`, `question`, `options [batch, 4]` (RACE, features `[batch, 4, max_seq_length]`). A mode asked for by
    name that packs sentences (`mode="masked"`: each literal `[MASK]` becomes the mask id, plus
    `masked_lm_positions` and `masked_lm_weights` int32 `[batch, max_predictions_per_seq]`) packs them its way.

    Returns a dict of int32 tensors `input_ids`, `input_mask`, `segment_ids` `[batch, max_seq_length]` (and the
    extra features above).

    Args:
        spm_model: bytes of the SentencePiece model, or the path of its `.model` file.
        max_seq_length: int, L, the padded length.
        do_lower_case: bool, lower-case in the normalisation (True for every English release).
        **kwargs: the packing lengths of the registered text modes (`albert_tf.text.modes.lengths()`), each with
            the original's flag name and default: `max_query_length` (SQuAD question tokens kept; 64, or
            `max_seq_length - 4` when that is smaller, so the document has room), `max_qa_length` (RACE
            question+option tokens kept; 128, or `max_seq_length - 3`), `max_predictions_per_seq` (the mask slots
            of `mode="masked"`; 20); each is an attribute of the layer. Other keywords go to `keras.layers.Layer`.

    Example:
        pre = albert_tf.AlbertPreprocessor.from_pretrained("albert_base_v2", max_seq_length=128)
        features = pre(["the movie was good ."])            # {"input_ids": [1, 128], ...}
    """

    def __init__(self, spm_model, max_seq_length=DEFAULT_MAX_SEQ_LENGTH, do_lower_case=True, **kwargs):
        known = text_modes.lengths()
        lengths = {name: kwargs.pop(name) for name in list(kwargs) if name in known}
        kwargs.setdefault("name", "albert_preprocessor")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        # TensorFlow string tensors in and out on every Keras backend (as Keras' own `TextVectorization`): the
        # layer runs in `tf.data` pipelines, and its inputs are never converted to the backend's arrays.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.max_seq_length = text_modes.positive_int("max_seq_length", max_seq_length, 4)
        resolved = text_modes.resolve_lengths(lengths, self.max_seq_length)
        self.length_names = tuple(resolved)
        for name, value in resolved.items():
            setattr(self, name, value)
        self.do_lower_case = bool(do_lower_case)
        self._proto = self.pipeline = self.vocab_size = self._spm_sha256 = None
        if spm_model is not _PENDING:
            self._set_proto(_proto_bytes(spm_model))
        self.built = True

    def _set_proto(self, proto):
        self._proto = proto
        self._spm_sha256 = hashlib.sha256(proto).hexdigest()
        _PROTOS[self._spm_sha256] = proto
        self.pipeline = self._new_pipeline()
        self.vocab_size = self.pipeline.tokenizer.vocab_size

    def _require_proto(self):
        if self._proto is None:
            raise InputError(f"This AlbertPreprocessor was rebuilt from a config that names its SentencePiece model "
                             f"only by SHA-256 ({self._spm_sha256}): load the `.keras` file that holds the model, or "
                             "create the preprocessor with `spm_model=`.")

    @property
    def lengths(self):
        """`{name: value}` of the text modes' packing lengths (`max_query_length`, ...)."""
        return {name: getattr(self, name) for name in self.length_names}

    def _new_pipeline(self):
        return text_ops.TextPipeline(self._proto, self.do_lower_case, self.max_seq_length, **self.lengths)

    def ensure_tokenizer(self):
        """Rebuilds the tokenizer when its SentencePiece resource is gone; call it eagerly before tracing uses.

        tensorflow-text's SentencePiece resource created eagerly belongs to its op kernel, and TensorFlow drops
        eager kernels when the global seed is set (`tf.random.set_seed`, `keras.utils.set_random_seed`), which
        deletes the resource: graphs traced afterwards would fail with "Resource ... SentencepieceOp ... does not
        exist". A one-string probe finds that out and a new tokenizer replaces the dead one.
        """
        self._require_proto()
        if not tf.executing_eagerly():
            return
        try:
            self.pipeline.tokenizer.tokenize_normalized(tf.constant([""]))
        except tf.errors.NotFoundError:
            self.pipeline = self._new_pipeline()

    @property
    def spm_model_proto(self):
        """bytes, the serialized SentencePiece model."""
        return self._proto

    def check_model(self, config, mode="text"):
        """Raises InputError when this preprocessor does not fit a model of `config` (an `AlbertConfig`) packed
        in `mode` (one of `albert_tf.text.modes.names()`)."""
        if self.vocab_size is not None and self.vocab_size > config.vocab_size:
            raise InputError(f"The preprocessor's SentencePiece model has {self.vocab_size} pieces but the model's "
                             f"`vocab_size` is {config.vocab_size}: they must come from the same release.")
        check_max_seq_length(self.max_seq_length, config.max_position_embeddings)
        checked = text_modes.get(mode)
        if checked is not None and checked.check is not None:
            checked.check(self)

    def __call__(self, inputs, *args, **kwargs):
        # Keras layers take tensors as positional inputs: Python strings and lists are converted first.
        inputs = string_tensors(inputs)
        self.ensure_tokenizer()
        return super().__call__(inputs, *args, **kwargs)

    def validate(self, inputs, mode=None):
        """Raises InputError when `inputs` are not text that `call` packs (without tokenizing anything); returns
        the name of the text mode their structure selects (`"text"`, or a task's mode such as `"squad"`). Task
        models run it eagerly on the whole input before they build their `tf.data` pipeline, so errors come with
        their message rather than from inside a dataset function."""
        if mode is not None and mode not in text_modes.names():
            raise InputError(f"`mode` must be one of {text_modes.names()} or None. Received: `mode={mode!r}`.")
        inputs = string_tensors(inputs)
        if isinstance(inputs, dict):
            selected = text_modes.by_keys(inputs)
            if selected is None:
                raise InputError(f"Text inputs given as a dict need {text_modes.layouts()}. Received keys: "
                                 f"{sorted(inputs)}.")
            if selected.validate is not None:
                selected.validate(self, inputs)
            return selected.name
        if isinstance(inputs, tuple):
            if len(inputs) != 2:
                raise InputError("Sentence pairs are a tuple of two lists `(text_a, text_b)`. Received a tuple of "
                                 f"{len(inputs)} items.")
            text_modes.check_same_batch(("text_a", inputs[0]), ("text_b", inputs[1]))
        return text_modes.TEXT.name

    def call(self, inputs, mode=None):
        """Packs `inputs` (see the class docstring); `mode` is one of `albert_tf.text.modes.names()` or None (by the inputs' structure)."""
        self._require_proto()
        selected = text_modes.get(self.validate(inputs, mode))
        if selected.pack is not None:
            return selected.pack(self, inputs)
        asked = text_modes.get(mode) if mode is not None else None
        packer = asked if asked is not None and asked.takes_pairs else selected
        if isinstance(inputs, dict):
            return self._texts(inputs["text_a"], inputs.get("text_b"), packer)
        if isinstance(inputs, tuple):
            return self._texts(inputs[0], inputs[1], packer)
        return self._texts(inputs, None, packer)

    def _texts(self, text_a, text_b, packer):
        text_a = text_modes.flat_strings("text_a", text_a)
        if text_b is None:
            text_b = tf.fill(tf.shape(text_a), "")
        else:
            text_b = text_modes.flat_strings("text_b", text_b)
            text_modes.check_same_batch(("text_a", text_a), ("text_b", text_b))
        return packer.pack_pairs(self, text_a, text_b)

    def get_config(self):
        """The config, with the SentencePiece model named by its SHA-256 only (a `.keras` file holds the model as
        the asset `spiece.model`; `from_config` in this process finds it by the SHA-256), so that a config stays
        short: Keras prints it whole in its errors."""
        config = super().get_config()
        config.update(spm_model_sha256=self._spm_sha256, max_seq_length=self.max_seq_length,
                      do_lower_case=self.do_lower_case, **self.lengths)
        return config

    @classmethod
    def from_config(cls, config):
        """The preprocessor of `config`; its SentencePiece model comes from a preprocessor of this process with
        the same SHA-256, the config itself (`spm_model_base64`, as older versions wrote), or the `.keras` file's
        asset (`load_assets`, which Keras calls after `from_config`)."""
        config = dict(config)
        sha256 = config.pop("spm_model_sha256", None)
        encoded = config.pop("spm_model_base64", None)
        proto = base64.b64decode(encoded) if encoded else _PROTOS.get(sha256)
        preprocessor = cls(_PENDING if proto is None else proto, **config)
        if proto is None:
            preprocessor._spm_sha256 = sha256   # pylint: disable=protected-access  (own class)
        return preprocessor

    def save_assets(self, dir_path):
        """Writes the SentencePiece model to `dir_path/spiece.model` (Keras calls it when saving a `.keras` file)."""
        with open(os.path.join(dir_path, ASSET), "wb") as f:
            f.write(self._proto)

    def load_assets(self, dir_path):
        """Reads the SentencePiece model that `save_assets` wrote (Keras calls it when loading a `.keras` file)."""
        with open(os.path.join(dir_path, ASSET), "rb") as f:
            proto = f.read()
        if self._spm_sha256 not in (None, hashlib.sha256(proto).hexdigest()):
            raise InputError(f"The SentencePiece model in the `.keras` file is not the one its config names "
                             f"(SHA-256 {self._spm_sha256}).")
        if self._proto is None:
            self._set_proto(proto)

    @classmethod
    def from_pretrained(cls, source, max_seq_length=None, spm_model=None, **kwargs):
        """The preprocessor of a pretrained source: its SentencePiece model.

        Args:
            source: anything `albert_tf.checkpoints.resolve_source` reads (a release directory or `.tar.gz`, a
                checkpoint prefix, a TF-Hub module, a keras-hub preset, a Hugging Face directory, one of our
                checkpoint directories, a release name).
            max_seq_length: optional int; default a keras-hub preset's preprocessor `sequence_length`, else 512,
                or the source's `max_position_embeddings` when smaller.
            spm_model: optional bytes or path of the SentencePiece model, for sources without one.
            **kwargs: more constructor arguments (`do_lower_case`, `max_query_length`, ...).

        Returns:
            `AlbertPreprocessor`.
        """
        with resolve_source(source) as resolved:
            if spm_model is None:
                if resolved.spm_model_file is None:
                    raise InputError(f"No SentencePiece model found with `{source}`; pass `spm_model=` (the "
                                     "`.model` file or its bytes).")
                spm_model = resolved.spm_model_file
            proto = _proto_bytes(spm_model)
            config = AlbertConfig.from_json_file(resolved.config_file) if resolved.config_file else None
            if max_seq_length is None and resolved.layout == "keras_hub_preset":
                max_seq_length = keras_hub.sequence_length(resolved.directory)   # A task preset's preprocessor.
        if max_seq_length is None:
            max_seq_length = DEFAULT_MAX_SEQ_LENGTH
            if config is not None:
                max_seq_length = min(max_seq_length, config.max_position_embeddings)
        preprocessor = cls(proto, max_seq_length=max_seq_length, **kwargs)
        if config is not None:
            preprocessor.check_model(config)
        return preprocessor
