"""`PretrainedMixin`: what the task models on an encoder share: their construction (the encoder, `output_weights`
heads, the checks of their arguments), the Keras config round trip, `from_pretrained`, an optional
`AlbertPreprocessor` (raw strings in `fit`, `evaluate`, `predict` and calls) and `compile` with the task's
defaults."""

import keras
import numpy as np

from albert_tf import registry
from albert_tf.checkpoints import load_pretrained
from albert_tf.config import TOKEN_INPUTS
from albert_tf.data import lengths as length_buckets
from albert_tf.errors import InputError
from albert_tf.layers.heads import AlbertOutputProjection
from albert_tf.models.albert_model import AlbertModel, as_config, quantize_int8, quantized, with_quantization
from albert_tf.models.lora import LoraMixin
from albert_tf.text.inputs import (batched_slices, is_dataset, is_token_features, looks_like_text, mapped,
                                text_call_inputs)

DEFAULT_BATCH_SIZE = 32
# The packed features with a sequence axis (last), cut by `predict` to a batch's longest text.
_SEQUENCE_FEATURES = TOKEN_INPUTS + ("p_mask",)


def _num_examples(name, value):
    if isinstance(value, dict):
        sizes = {f"{name}[{key!r}]": _num_examples(name, v) for key, v in value.items()}
    elif isinstance(value, tuple):
        sizes = {f"{name}[{i}]": _num_examples(name, v) for i, v in enumerate(value)}
    else:
        return len(value) if not isinstance(value, (str, bytes)) else 1
    if len(set(sizes.values())) > 1:
        raise InputError(f"The parts of `{name}` must have one entry per example. Received sizes: "
                         + ", ".join(f"{k}={v}" for k, v in sizes.items()) + ".")
    return next(iter(sizes.values()))


def _as_slices(value):
    """Lists of strings, NumPy arrays and tensors as `from_tensor_slices` takes them (a lone string: one row)."""
    if isinstance(value, dict):
        return {key: _as_slices(v) for key, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_as_slices(v) for v in value)
    if isinstance(value, (str, bytes)):
        return [value]
    return value


def check_positive_int(name, value):
    """Raises `InputError` unless the argument `name` is an int >= 1."""
    if not isinstance(value, int) or value < 1:
        raise InputError(f"`{name}` must be a positive int. Received: {value!r}.")


def check_dropout_rate(name, value):
    """Raises `InputError` unless the argument `name` is a rate in [0, 1)."""
    if not 0.0 <= value < 1.0:
        raise InputError(f"`{name}` must be in [0, 1). Received: {value!r}.")


def build_encoder(config, encoder, recompute, dtype, missing):
    """The encoder of a task model: `encoder` as given, else a new `AlbertModel(as_config(config), recompute,
    dtype)`; `InputError(missing)` when both are None."""
    if encoder is None:
        if config is None:
            raise InputError(missing)
        encoder = AlbertModel(as_config(config), recompute=recompute, dtype=dtype)
    return encoder


class PretrainedMixin(LoraMixin):
    """`get_config`, `from_config`, `from_pretrained`, the preprocessor and `compile` defaults of a
    `keras.Model` holding an `AlbertModel` encoder.

    Put it before `keras.Model` in the bases. The model must take the `AlbertConfig` (or its dict) as its first
    constructor argument `config`, keep it as `self.config`, and keep each constructor argument listed in
    `_CONFIG_ARGUMENTS` as an attribute of the same name, so that `cls.from_config(model.get_config())` (and a
    `.keras` save/load) rebuilds the same model. Its constructor gets the encoder from `build_encoder`, calls
    `self.init_encoder(encoder, **kwargs)` in place of `keras.Model.__init__`, makes its heads (`output_projection`
    for an `output_weights`/`output_bias` one) and ends with `self.finish_init(preprocessor)`; `call` begins with
    `self.token_inputs(inputs)`.

    With a preprocessor (`albert_tf.AlbertPreprocessor`), `fit`, `evaluate` and `predict` take raw text
    (strings, `(text_a, text_b)` tuples of lists, or the task's dict of strings, or a `tf.data.Dataset` of
    them as the first element): it is packed in the input pipeline (`tf.data` map, `batch_size` default 32)
    and the model trains and predicts on the packed ids, so what runs on the device is the same as with ids.
    `predict` adds the packed `input_ids` (and the task's other packed features listed in
    `_PREDICT_PASSTHROUGH`) to the outputs. Calling the model on strings packs them first.

    `compile()` fills what is not given with the task's defaults: the loss (`default_loss`, or the original's
    task loss `task_loss` where it returns None), the metrics (`default_metrics`) and the optimizer,
    `create_optimizer`'s AdamW (or LAMB) with the original's schedule from `_TRAINING_DEFAULTS`
    (`learning_rate`, `num_train_steps`, `num_warmup_steps`, which `compile` also takes). A plain Keras loss
    applies to `loss_output(outputs)` (the logits for the classifier and RACE models).
    """

    # Names of the constructor arguments, besides `config` and `name`, that `get_config` records.
    _CONFIG_ARGUMENTS = ()
    # How the preprocessor packs text for this model (`AlbertPreprocessor.call`'s `mode`).
    _PREPROCESS_MODE = "text"
    # Packed features that `predict` on text returns along with the model's outputs.
    _PREDICT_PASSTHROUGH = ("input_ids",)
    # While `predict` runs on text cut to each batch's longest: the outputs to pad back (`_uncut`).
    _cut_outputs = None
    # `compile()` defaults: the optimizer name of `create_optimizer` and its schedule.
    _TRAINING_DEFAULTS = dict(optimizer="adamw", learning_rate=3e-5, num_train_steps=10000, num_warmup_steps=1000)
    _uses_task_loss = False
    # `preprocessor` is an instance attribute only (`finish_init` sets it, None or a layer): under PyTorch a
    # layer attribute lives in the module's `_modules`, where a class attribute of the same name would hide it.
    # The label that a task's loss ignores (the token classifier's -100), exempt from `check_labels`.
    _IGNORED_LABEL = None

    # --- Construction ------------------------------------------------------------------------------------

    def init_encoder(self, encoder, **kwargs):
        """`keras.Model.__init__(**kwargs)`, then the model holds `encoder` and takes its `config` and
        `recompute` (an encoder passed in keeps its own)."""
        super().__init__(**kwargs)
        self.encoder = encoder
        self.config = encoder.config
        self.recompute = encoder.recompute

    def output_projection(self, num_outputs, name):
        """A built `AlbertOutputProjection` head named `name`: the TF1 `output_weights [num_outputs, H]` and
        `output_bias` on the encoder's hidden size, in the model's dtype policy."""
        head = AlbertOutputProjection(num_outputs, self.config.hidden_size, self.config.initializer_range,
                                      dtype=self.dtype_policy, name=name)
        head.build()
        return head

    def finish_init(self, preprocessor, head_dropout_rate=0.0):
        """The end of the constructor: holds `preprocessor` (`set_preprocessor`) and marks the model built.

        `head_dropout_rate`: the rate of the head's own dropout (`head_dropout`). It draws from the encoder's
        dropout seed generator; when the encoder has none (its dropout rates are 0, as in the v2 configs), the
        model makes its own (`head_dropout_seed`, seeded by `keras.utils.set_random_seed` as Keras' `Dropout`
        is). A seed generator's state is not a weight (`.keras` files and `model.weights` leave it out); the
        training loop's checkpoints save it, so a resumed run draws the masks the uninterrupted run draws."""
        self._head_seed = None
        if head_dropout_rate > 0 and self.encoder.dropout_seed_generator() is None:
            self._head_seed = keras.random.SeedGenerator(name="head_dropout_seed")
        self.set_preprocessor(preprocessor)
        self.built = True

    def head_dropout(self, x, rate, training):
        """Dropout of `rate` on `x` when `training` is True (the heads' `dropout` of the original), drawn with
        `keras.random.dropout` from the encoder's dropout seed generator (or the model's own, see `finish_init`):
        the random state lives in the model, where a checkpoint can save it, not in a stateful op (the
        original's `tf.nn.dropout`, which a resumed process would draw again from its start)."""
        if not training or rate <= 0:
            return x
        seed = self._head_seed if self._head_seed is not None else self.encoder.dropout_seed_generator()
        return keras.random.dropout(x, rate, seed=seed)

    # --- Config ------------------------------------------------------------------------------------------

    def get_config(self):
        config = {"config": self.config.to_dict()}
        config.update((argument, getattr(self, argument)) for argument in self._CONFIG_ARGUMENTS)
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(self.preprocessor)
        config["name"] = self.name
        return with_quantization(self, config)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("preprocessor"), dict):
            import albert_tf.text.preprocessor  # noqa: F401  Registers AlbertPreprocessor (deferred: tensorflow-text).
            config["preprocessor"] = keras.saving.deserialize_keras_object(config["preprocessor"])
        quantization = {key: config.pop(key) for key in ("quantization", "quantization_config") if key in config}
        return quantized(cls(config.pop("config"), **config), quantization)

    @classmethod
    def from_pretrained(cls, path, config=None, preprocessor=None, **model_kwargs):
        """The model with its weights from any source `albert_tf.checkpoints.load_pretrained` reads.

        The encoder, and the heads of this class when the source has them (a fresh head otherwise), from a
        release dir, `.tar.gz`, TF1 checkpoint prefix, TF-Hub TF1 module dir, one of our checkpoints, a TF2
        SavedModel of tf-models' AlbertEncoder, a keras-hub preset or a Hugging Face directory (safetensors).

        Args:
            path: str, the checkpoint source.
            config: optional `AlbertConfig`, dict or JSON path; default the source's `albert_config.json`.
            preprocessor: optional; True for an `AlbertPreprocessor` from the source's SentencePiece model
                (`AlbertPreprocessor.from_pretrained(path)`), a dict of `AlbertPreprocessor.from_pretrained`
                arguments (e.g. `{"max_seq_length": 128}`), or an `AlbertPreprocessor`.
            **model_kwargs: passed to the constructor (e.g. `num_labels=3` for `AlbertClassifier`).

        Returns:
            the built model.
        """
        if preprocessor is True or isinstance(preprocessor, dict):
            from albert_tf.text.preprocessor import AlbertPreprocessor  # Deferred: needs tensorflow-text.
            options = preprocessor if isinstance(preprocessor, dict) else {}
            preprocessor = AlbertPreprocessor.from_pretrained(path, **options)
        if preprocessor not in (None, False):
            model_kwargs["preprocessor"] = preprocessor
        return load_pretrained(cls, path, config=config, **model_kwargs)

    # --- Preprocessor ------------------------------------------------------------------------------------

    def set_preprocessor(self, preprocessor):
        """Holds `preprocessor` (an `AlbertPreprocessor` or None) after checking it fits the model."""
        if preprocessor is not None:
            from albert_tf.text.preprocessor import AlbertPreprocessor  # Deferred: needs tensorflow-text.
            if not isinstance(preprocessor, AlbertPreprocessor):
                raise InputError("`preprocessor` must be an `albert_tf.AlbertPreprocessor` (or None). Received: "
                                 f"{type(preprocessor).__name__}.")
            preprocessor.check_model(self.config, self._PREPROCESS_MODE)
        self.preprocessor = preprocessor

    def preprocess(self, inputs):
        """Raw text -> this model's packed features, by its preprocessor."""
        if self.preprocessor is None:
            raise InputError(f"{type(self).__name__} takes a dict of token ids (`input_ids`, `input_mask`, "
                             "`segment_ids`); raw text needs a preprocessor: build the model with "
                             "`preprocessor=albert_tf.AlbertPreprocessor(...)` or `from_pretrained(..., "
                             "preprocessor=True)`.")
        return self.preprocessor(inputs, mode=self._PREPROCESS_MODE)

    def __call__(self, inputs, *args, **kwargs):
        # Keras models take tensors as positional inputs: raw text in Python lists is converted first
        # (`text_call_inputs`: packed here on the backends without string arrays).
        if self.preprocessor is not None and not is_token_features(inputs) and looks_like_text(inputs):
            inputs = text_call_inputs(inputs, self.preprocess)
        return super().__call__(inputs, *args, **kwargs)

    def token_inputs(self, inputs):
        """`inputs` when they are token ids, else (text) the preprocessor's packing of them."""
        if isinstance(inputs, dict) and "input_ids" in inputs:
            return inputs
        if self.preprocessor is None and not looks_like_text(inputs):
            return inputs   # Left to the model's own checks of its inputs.
        return self.preprocess(inputs)

    def _text_dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False, cut=False):
        """A batched `tf.data.Dataset` of `(packed features, y, sample_weight)` from raw text, or None when `x`
        is already token ids (left to Keras as given). With `cut`, each batch's features are cut to its longest
        text (`albert_tf.data.lengths.cut_to_longest`)."""
        if is_token_features(x):
            return None
        if self.preprocessor is None:
            if looks_like_text(x):
                self.preprocess(x)   # Raises the error that says how to add a preprocessor.
            return None
        self.preprocessor.ensure_tokenizer()   # Before the map function captures its resource.
        if is_dataset(x):
            if y is not None or sample_weight is not None:
                raise InputError("With a `tf.data.Dataset` as `x`, `y` and `sample_weight` come from the dataset "
                                 "(elements `(x, y)` or `(x, y, sample_weight)`); do not pass them.")

            def pack_element(*element):
                return (self._packed_batch(element[0], cut),) + element[1:]

            return mapped(x, pack_element)
        if x is None:
            raise InputError("`x` is required: the texts.")
        if isinstance(x, list) and x and isinstance(x[0], (tuple, list)) and len(x[0]) == 2 \
                and getattr(registry.text_mode(self._PREPROCESS_MODE), "takes_pairs", False):
            raise InputError("Sentence pairs are a tuple of two lists `(texts_a, texts_b)`, not a list of pairs: "
                             "pass `tuple(zip(*pairs))`.")
        x = _as_slices(x)
        if isinstance(x, (list, tuple, dict, np.ndarray)) and _num_examples("x", x) == 0:
            raise InputError("`x` holds no examples: pass at least one text.")
        self.preprocessor.validate(x, self._PREPROCESS_MODE)
        n = _num_examples("x", x)
        arrays = [x]
        for name, value in (("y", y), ("sample_weight", sample_weight)):
            if value is None:
                continue
            if _num_examples(name, value) != n:
                raise InputError(f"`{name}` must have one entry per example of `x`: {n} examples, "
                                 f"{_num_examples(name, value)} entries in `{name}`.")
            arrays.append(value)
        if sample_weight is not None and y is None:
            raise InputError("`sample_weight` needs `y`.")
        if n == 0:
            raise InputError("`x` holds no examples.")
        batch_size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise InputError(f"`batch_size` must be a positive int. Received: `batch_size={batch_size!r}`.")
        dataset = batched_slices(arrays, n, batch_size, shuffle)

        def pack(*element):
            return (self._packed_batch(element[0], cut),) + element[1:]

        return mapped(dataset, pack)

    def _packed_batch(self, texts, cut):
        """The preprocessor's packing of one batch of texts; with `cut`, at its longest text (rounded up)."""
        features = self.preprocess(texts)
        if not cut:
            return features
        return length_buckets.cut_to_longest(features, _SEQUENCE_FEATURES, self.preprocessor.max_seq_length,
                                             length_buckets.length_multiple(self._compiles_per_length()))

    def _compiles_per_length(self):
        """Whether `predict` compiles once per input length: with Keras' `jit_compile` (XLA on TensorFlow, JAX's
        jit, its default there); a TensorFlow graph without XLA and eager PyTorch run any length as it is."""
        return bool(self.jit_compile)

    def check_labels(self, y, name="y"):
        """Raises `InputError` naming the first entry of `y` outside `[0, num_labels)` (a model with
        `num_labels` > 1; arrays and lists, not datasets), before Keras traces anything."""
        num_labels = getattr(self, "num_labels", None)
        if y is None or is_dataset(y) or isinstance(y, dict) or not isinstance(num_labels, int) or num_labels < 2:
            return
        try:
            values = np.asarray(y)
        except (TypeError, ValueError):
            return
        if values.dtype.kind not in "iuf":
            if values.dtype.kind in "USO":
                raise InputError(f"`{name}` must hold integer class ids in [0, {num_labels}); got "
                                 f"{values.reshape(-1)[:1].tolist()} ... ({values.dtype.name}).")
            return
        bad = (values < 0) | (values >= num_labels) | (values != np.floor(values))
        if self._IGNORED_LABEL is not None:
            bad &= values != self._IGNORED_LABEL
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            where = ", ".join(map(str, index))
            ignored = f" (or {self._IGNORED_LABEL}, ignored)" if self._IGNORED_LABEL is not None else ""
            raise InputError(f"`{name}[{where}]` is {values[index].item()!r}: labels must be integers in "
                             f"[0, {num_labels}){ignored} for `num_labels={num_labels}`.")

    def fit(self, x=None, y=None, batch_size=None, validation_data=None, shuffle=True, sample_weight=None,
            validation_batch_size=None, **kwargs):
        """`keras.Model.fit`; with a preprocessor, `x` may be raw text (see the class docstring). Labels outside
        `[0, num_labels)` are refused before anything is traced (`check_labels`)."""
        self.check_labels(y)
        if validation_data is not None and not is_dataset(validation_data):
            self.check_labels(keras.utils.unpack_x_y_sample_weight(tuple(validation_data))[1],
                              "validation_data y")
        dataset = self._text_dataset(x, y, sample_weight, batch_size, shuffle=shuffle)
        if validation_data is not None and not is_dataset(validation_data):
            val_x, val_y, val_w = keras.utils.unpack_x_y_sample_weight(tuple(validation_data))
            val = self._text_dataset(val_x, val_y, val_w, validation_batch_size or batch_size)
            if val is not None:
                validation_data, validation_batch_size = val, None
        elif validation_data is not None:
            val = self._text_dataset(validation_data)
            if val is not None:
                validation_data = val
        if dataset is not None:
            # The dataset is shuffled when it is built (Keras does not shuffle datasets).
            x, y, sample_weight, batch_size, shuffle = dataset, None, None, None, False
        return super().fit(x, y, batch_size=batch_size, validation_data=validation_data, shuffle=shuffle,
                           sample_weight=sample_weight, validation_batch_size=validation_batch_size, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """`keras.Model.evaluate`; with a preprocessor, `x` may be raw text (see the class docstring)."""
        self.check_labels(y)
        dataset = self._text_dataset(x, y, sample_weight, batch_size)
        if dataset is not None:
            x, y, sample_weight, batch_size = dataset, None, None, None
        return super().evaluate(x, y, batch_size=batch_size, sample_weight=sample_weight, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict`; with a preprocessor, `x` may be raw text (see the class docstring).

        Each batch of text runs at its longest text (not at the preprocessor's `max_seq_length`), rounded up to
        a multiple of 8, or of 32 where each new length compiles once (`jit_compile`: JAX's default, XLA;
        `albert_tf.data.lengths.length_multiple`): the outputs are the same (the attention mask
        hides padding), and the outputs with a sequence axis come back at `max_seq_length` as before,
        positions past the batch's cut holding 0 (`p_mask` 1)."""
        if is_dataset(x) and int(x.cardinality()) == 0:
            raise InputError("`x` is a dataset without elements: nothing to predict.")
        dataset = self._text_dataset(x, batch_size=batch_size, cut=True)
        if dataset is None:
            return self._predict_batches(x, batch_size=batch_size, **kwargs)
        # The outputs to pad back (`_uncut`), read when Keras traces its predict function: a new one for text.
        self._cut_outputs = self._sequence_outputs(dataset.element_spec[0])
        self.predict_function = None
        try:
            return self._predict_batches(dataset, batch_size=None, **kwargs)
        finally:
            self._cut_outputs = None
            self.predict_function = None

    def _predict_batches(self, x, **kwargs):
        """`keras.Model.predict`; a dataset that turns out to yield no batch (its size unknown beforehand, a
        `filter` that keeps nothing) is an `InputError`, and the model stays usable."""
        # Keras' predict may take the variables' values out of the model for its loop (the stateless backends do)
        # and put them back after its last batch: a loop without a batch leaves them out. Their values are kept
        # here to put back (on the other backends a value is the variable itself, and putting it back changes
        # nothing).
        kept = [(variable, variable.value) for variable in self.variables] if is_dataset(x) else []
        try:
            return super().predict(x, **kwargs)
        except UnboundLocalError as e:   # Keras' predict reads its last batch's outputs after an empty loop.
            if not is_dataset(x):
                raise
            for variable, value in kept:
                variable.assign(value)
            self.predict_function = None
            raise InputError("`x` yielded no batch: nothing to predict.") from e

    def _sequence_outputs(self, feature_specs):
        """The names of the outputs (and passthrough features) with a sequence axis: those whose length along
        the features' sequence axis follows the input's, from two symbolic calls at different lengths (JAX
        traces concrete lengths only)."""
        axis = len(feature_specs["input_ids"].shape) - 1
        names = {name for name, spec in feature_specs.items()
                 if len(spec.shape) > axis and spec.shape[axis] is None}
        full = self.preprocessor.max_seq_length
        specs = []
        for length in (full, full - 1):
            inputs = {}
            for name, spec in feature_specs.items():
                shape = [2 if size is None else size for size in spec.shape]
                if name in names:
                    shape[axis] = length
                inputs[name] = keras.KerasTensor(shape, dtype=spec.dtype.name)
            specs.append(self.compute_output_spec(inputs))
        def first(value):
            return value[0] if isinstance(value, (list, tuple)) and value else value

        for name, value in specs[0].items():
            shape, other = getattr(first(value), "shape", ()), getattr(first(specs[1][name]), "shape", ())
            if len(shape) > axis and shape[axis] != other[axis]:
                names.add(name)
        return frozenset(names)

    def predict_step(self, *args):
        """The backend trainer's `predict_step` (`(data)`, or JAX's stateless `(state, data)`, which returns
        `(outputs, non_trainable_variables)`), plus the packed features of `_PREDICT_PASSTHROUGH` with a
        preprocessor."""
        result = super().predict_step(*args)
        stateless = len(args) == 2
        outputs = result[0] if stateless else result
        x, _, _ = keras.utils.unpack_x_y_sample_weight(args[-1])
        if self.preprocessor is not None and isinstance(x, dict) and isinstance(outputs, dict):
            outputs = dict(outputs)
            outputs.update((name, x[name]) for name in self._PREDICT_PASSTHROUGH if name in x)
            outputs = self._uncut(outputs, x)
        return (outputs,) + tuple(result[1:]) if stateless else outputs

    def _uncut(self, outputs, x):
        """The outputs of a batch cut to its longest text (`predict`) padded back along their sequence axis to
        the preprocessor's `max_seq_length`, so that the batches concatenate as before."""
        if self._cut_outputs is None:
            return outputs
        axis = len(x["input_ids"].shape) - 1
        full = self.preprocessor.max_seq_length

        def pad(value, fill):
            paddings = [[0, 0]] * len(value.shape)
            # A batch is cut to at most `full` (`cut_to_longest`): a static int on JAX, a tensor on TensorFlow.
            paddings[axis] = [0, full - keras.ops.shape(value)[axis]]
            return keras.ops.pad(value, paddings, constant_values=fill)

        padded = {}
        for name, value in outputs.items():
            if name in self._cut_outputs:
                fill = 1 if name == "p_mask" else 0
                value = [pad(v, fill) for v in value] if isinstance(value, (list, tuple)) else pad(value, fill)
            padded[name] = value
        return padded

    # --- Compile -----------------------------------------------------------------------------------------

    def default_loss(self):
        """The Keras loss `compile()` uses on `loss_output`, or None for the task's own `task_loss`."""
        return None

    def default_metrics(self):
        """The metrics `compile()` uses (a list, or None)."""
        return None

    def loss_output(self, outputs):
        """What a loss given to `compile` (and its metrics) sees of the model's outputs."""
        return outputs

    def task_loss(self, x, y, outputs, sample_weight=None):
        """The original's training loss of this task (used by `compile()` when `default_loss` is None)."""
        raise InputError(f"{type(self).__name__} has no default loss: pass `loss=` to `compile`.")

    def compile(self, optimizer=None, loss=None, loss_weights=None, metrics=None, learning_rate=None,
                num_train_steps=None, num_warmup_steps=None, **kwargs):
        """`keras.Model.compile` with the task's defaults for what is not given.

        Args:
            optimizer: a Keras optimizer (or its name), `"adamw"` or `"lamb"` (the original's, through
                `albert_tf.training.optimization.create_optimizer`), or None for the task's default.
            loss: a Keras loss on `loss_output(outputs)` (the logits), or None for the task's loss.
            loss_weights: as `keras.Model.compile`.
            metrics: Keras metrics, or None for the task's (`default_metrics`).
            learning_rate: float, the peak learning rate of the original's schedule (when the optimizer is built
                here); default `_TRAINING_DEFAULTS`.
            num_train_steps: int, the schedule's decay horizon (the learning rate is 0 from there on).
            num_warmup_steps: int, linear warm-up steps; default 10% of `num_train_steps` when that is given,
                else `_TRAINING_DEFAULTS`.
            **kwargs: more `keras.Model.compile` arguments (`steps_per_execution`, ...); `jit_compile` defaults
                to False, as the runners' `--jit_compile` (Keras's "auto" would turn XLA on where a GPU is).
        """
        defaults = self._TRAINING_DEFAULTS
        schedule_given = any(v is not None for v in (learning_rate, num_train_steps, num_warmup_steps))
        if optimizer is None or (isinstance(optimizer, str) and optimizer.lower() in ("adamw", "lamb")):
            from albert_tf.training.optimization import create_optimizer  # Deferred: keeps imports light.
            if num_warmup_steps is None:
                num_warmup_steps = (int(0.1 * num_train_steps) if num_train_steps is not None
                                    else defaults["num_warmup_steps"])
            optimizer = create_optimizer(
                defaults["learning_rate"] if learning_rate is None else learning_rate,
                defaults["num_train_steps"] if num_train_steps is None else num_train_steps,
                num_warmup_steps, optimizer=(optimizer or defaults["optimizer"]).lower())
        elif schedule_given:
            raise InputError("`learning_rate`, `num_train_steps` and `num_warmup_steps` build the original's "
                             "optimizer; with an optimizer object, set its learning rate there.")
        self._uses_task_loss = False
        if loss is None:
            loss = self.default_loss()
            self._uses_task_loss = loss is None
        if metrics is None:
            metrics = self.default_metrics()
        kwargs.setdefault("jit_compile", False)
        # A task loss is saved in the compile config as no loss, so that loading compiles with it again.
        super().compile(optimizer=optimizer, loss=loss, loss_weights=loss_weights, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        """Compiles from `get_compile_config()` (`.keras` loading): the saved optimizer, loss and metrics."""
        import albert_tf.training.optimization  # noqa: F401  Registers the ALBERT optimizers and schedule.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.optimizer is not None and self.built:
            self.optimizer.build(self.trainable_variables)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self._uses_task_loss:
            loss = self.task_loss(x, y, y_pred, sample_weight)
            for extra in self.losses:
                loss = loss + keras.ops.cast(keras.ops.sum(extra), loss.dtype)
            return loss
        return super().compute_loss(x, y, self.loss_output(y_pred), sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(x, y, self.loss_output(y_pred), sample_weight)

    def quantize(self, mode=None, config=None, **kwargs):
        """Keras' `quantize("int8")`, weight-only unless `config` names an activation quantizer
        (`albert_tf.models.albert_model.quantize_int8`)."""
        quantize_int8(self, super().quantize, mode, config, **kwargs)

