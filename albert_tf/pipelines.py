"""Text in, answers out: `pipeline(task, source, **options)` for every task of the package.

`pipeline` loads a model with its head and its tokenizer from `source` and returns a callable that takes raw
strings: one input gives one result, a list (or a NumPy array of texts, or a generator) gives a list, run in batches of `batch_size` (default 32) with a
progress bar for lists longer than one batch. `source` is anything `from_pretrained` reads (a Google release
directory or `.tar.gz`, a TF1 checkpoint prefix, a TF-Hub TF1 module, a TF2 SavedModel of tf-models'
AlbertEncoder, a keras-hub preset, a Hugging Face directory, one of our `--output_dir` checkpoints, or a name
such as `albert_base_v2` or `hf:org/repo`) or an `albert-export` directory (a version directory, or the base
directory: its newest version), whose `serving_default` signature is then run on the same packed ids, or a
LiteRT export of `albert-export --format=tflite` (its `model.tflite` or its directory), run on the LiteRT
interpreter (`ai-edge-litert`) with the export's fixed lengths, labels and tokenizer.

This module is what every task shares: the runners (a Keras model, an export's `serving_default`, a LiteRT
interpreter), the `Pipeline` base, loading, and the encoder's `"feature-extraction"` pipeline. Each task's
pipeline lives in its task package (`albert_tf/tasks/<task>/pipeline.py`) and registers itself
(`albert_tf.registry.register_pipeline`); `pipeline(task, ...)` finds it there (`registry.pipelines()`), and an
export's kind comes from the export's own metadata (`assets.extra/albert_export.json`, `albert_tf.export.metadata`;
for LiteRT `albert_lite.json`), checked against the kinds whose serving spec serves the task
(`registry.serving_kinds`). The tasks (the registry lists them; each task module's docstring says what its
pipeline takes and gives):

* `"fill-mask"`: `pipe("the [MASK] of france", top_k=5)` -> per `[MASK]` a list of `top_k`
  `{"token", "token_id", "score"}` from the MLM head (`AlbertPretrainer`).
* `"text-classification"`: a string, a `(text_a, text_b)` pair or `{"text_a", "text_b"}` -> `{"label", "score",
  "scores"}` (`AlbertClassifier`); a regression head gives `{"score": value}`.
* `"question-answering"`: `pipe(question=..., context=...)` -> `{"answer", "score", "start", "end"}` through the
  SQuAD runner's windows and n-best decoding.
* `"multiple-choice"`: `{"article", "question", "options": [4 strings]}` -> `{"choice": int, "scores": [4]}`
  (`AlbertRace`).
* `"token-classification"`: a text -> its tagged words or entities (`AlbertTokenClassifier`).
* `"feature-extraction"` (here): a string or pair -> `{"pooled_output": [H], "sequence_output": [pieces, H]}`
  (NumPy; the `[CLS] ... [SEP]` positions, no padding).

The preprocessing is the runners' own code, so a pipeline answers what the runner writes for the same model,
input and options. Options have the runners' names and defaults (`max_seq_length`, `do_lower_case`,
`doc_stride`, `max_query_length`, `n_best_size`, `max_answer_length`, `null_score_diff_threshold`,
`start_n_top`, `end_n_top`, `max_qa_length`); `config=`, `spm_model_file=` and `vocab_file=` stand in for a
source without them. Mistakes in what the caller gives (an unknown task or option, a source without the task's
head, a question without a context) raise `albert_tf.errors.InputError`.
"""

import collections.abc
import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import registry
from albert_tf.checkpoints import resolve_source, restore_source, table
from albert_tf.checkpoints.convert import describe_heads
from albert_tf.config import TOKEN_INPUTS, AlbertConfig, check_max_seq_length
from albert_tf.data import lengths as length_buckets
from albert_tf.errors import InputError, MissingPackageError
from albert_tf.export import lite
from albert_tf.export import metadata as export_metadata
from albert_tf.layers.tf_fast_path import default_jit_compile
from albert_tf.models.albert_model import AlbertModel, as_config, compile_forward
from albert_tf.text import ops as text_ops
from albert_tf.text import modes as text_modes
from albert_tf.text import packing, tokenization
from albert_tf.training import inference

_EXPORT_CONFIG = os.path.join("assets", "albert_config.json")
_COMMON_OPTIONS = ("batch_size", "progress", "config", "spm_model_file", "vocab_file", "num_threads")
# The features with a sequence axis (last), cut to a batch's padded length; the others (`masked_lm_positions`)
# are kept whole.
SEQUENCE_FEATURES = TOKEN_INPUTS + ("p_mask",)


# --- Where the model runs: a Keras model, an albert-export's serving_default, or a LiteRT export ---------------


class KerasRunner:
    """Runs a Keras model of the package on batches of NumPy features through one `tf.function` (on Keras'
    TensorFlow backend), or the runners' inference step (`albert_tf.training.inference`: one `jax.jit` per input
    shape) on the others."""

    input_names = ()
    dynamic_lengths = True   # Any sequence length up to the model's positions.

    def __init__(self, model):
        self.model = model
        self.config = model.config
        self._step = None
        if keras.backend.backend() != "tensorflow":
            # The inference step compiles one program per input shape.
            self.compiles_per_shape = True
            self._step = inference.make_step(model, lambda inputs: model(inputs, training=False))
            return
        # XLA (where a GPU or TPU is visible) compiles once per length; a graph on CPU runs any length as it is.
        self.compiles_per_shape = default_jit_compile()
        self._forward = compile_forward(model, jit_compile=self.compiles_per_shape)
        self._traced = set()

    def __call__(self, features, output_names):
        if self._step is not None:
            outputs = self._step({name: np.asarray(value) for name, value in features.items()})
            return {name: np.asarray(keras.ops.convert_to_numpy(outputs[name])) for name in output_names}
        inputs = {name: tf.constant(value) for name, value in features.items()}
        # One trace of any length and batch size, made on the first call: the length-aware batches of a call
        # then reuse it instead of tracing their first few shapes one by one.
        key = tuple(sorted((name, value.shape.rank) for name, value in inputs.items()))
        if key not in self._traced:
            self._forward.get_concrete_function(
                {name: tf.TensorSpec([None] * value.shape.rank, value.dtype) for name, value in inputs.items()})
            self._traced.add(key)
        outputs = self._forward(inputs)
        return {name: outputs[name].numpy() for name in output_names}


class ExportRunner:
    """Runs the `serving_default` signature of an `albert-export` SavedModel on batches of NumPy features.

    The export's kind and `max_seq_length` are read from its metadata (`assets.extra/albert_export.json`); an
    export without it is refused (re-export it). The pretrainer's `masked_lm_positions` input is the
    signature's `mlm_positions`.
    """

    _RENAMED_INPUTS = {"masked_lm_positions": "mlm_positions"}
    compiles_per_shape = False   # The signature's graph runs any length as it is.

    def __init__(self, directory, export_task=None):
        self.directory = directory
        self.metadata = export_metadata.read(directory)
        signature_name = "serving_default"
        if export_task is not None or self.metadata.get("kind") == "multitask":
            from albert_tf.export import multitask  # A multi-task export: the task's own signature and facts.
            self.metadata, signature_name = multitask.task_metadata(self.metadata, export_task, directory)
            self.labels = self.metadata.get("labels")
        self.kind = self.metadata["kind"]
        self.max_seq_length = self.metadata.get("max_seq_length")
        try:
            import tensorflow_text  # noqa: F401  (registers the ops of the `serve_text` signature)
        except ImportError:
            tensorflow_text = None
        try:
            self.loaded = tf.saved_model.load(directory)
        except (tf.errors.NotFoundError, KeyError) as e:
            if tensorflow_text is None:
                raise MissingPackageError(f"Loading the export `{directory}` needs the tensorflow-text ops of its "
                                          "`serve_text` signature: pip install "
                                          f"{text_ops.tensorflow_text_requirement()}") from e
            raise
        if signature_name not in self.loaded.signatures:
            raise InputError(f"`{directory}` has no `{signature_name}` signature: not an albert-export directory.")
        self.signature = self.loaded.signatures[signature_name]
        self.output_specs = self.signature.structured_outputs
        self.input_specs = self.signature.structured_input_signature[1]
        self.input_names = tuple(self.input_specs)
        # Exports take `[batch, None]` ids; one with a fixed length keeps it.
        self.dynamic_lengths = self.input_specs["input_ids"].shape[-1] is None
        self.config = AlbertConfig.from_json_file(os.path.join(directory, _EXPORT_CONFIG))
        self.do_lower_case = True
        self.spm_model_file = None
        if "tokenization_info" in self.loaded.signatures:
            info = self.loaded.signatures["tokenization_info"]()
            self.do_lower_case = bool(info["do_lower_case"].numpy())
            vocab = info["vocab_file"].numpy().decode("utf-8")
            self.spm_model_file = vocab or None

    def __call__(self, features, output_names):
        inputs = {self._RENAMED_INPUTS.get(name, name): tf.constant(value) for name, value in features.items()}
        inputs = {name: value for name, value in inputs.items() if name in self.input_specs}
        outputs = self.signature(**inputs)
        return {name: outputs[name].numpy() for name in output_names}


class LiteRunner:
    """Runs a LiteRT export of `albert_tf.export.lite` (`albert-export --format=tflite`) on batches of NumPy features.

    The kind, lengths, labels and tokenizer come from its metadata file. An export with resizable inputs (the
    default of `albert-export --format=tflite`) runs each batch at its own size and length, cut to its longest
    member exactly (`length_multiple` 1: resizing the interpreter costs no compilation), in runs of at most
    `rows_per_run` rows of similar length: on real text a run of 8 sorted rows pads less than one of 32, and
    LiteRT's int8 matrix products are as fast on 8 rows of tokens (measured on albert-base, 96 sentences of
    20-152 pieces: a quarter less CPU time than runs of 32, benchmarks/README.md); a fixed-shape export
    (`--format=mediapipe`, or `dynamic_shapes=False`) gets every batch at its full length, the fixed batch filled
    by `lite.LiteModel`. The pretrainer's `mlm_positions` are padded with position 0 to the export's width.
    `num_threads`: the interpreter's CPU threads (default: every core this process may run on).
    """

    _RENAMED_INPUTS = {"masked_lm_positions": "mlm_positions"}
    length_multiple = 1
    ROWS_PER_RUN = 8

    def __init__(self, model_path, metadata, num_threads=None):
        self.directory = os.path.dirname(model_path)
        self.model = lite.LiteModel(model_path, num_threads=num_threads)
        # On-device runtimes of a fixed-shape export take its shapes as they are.
        self.dynamic_lengths = self.model.dynamic_shapes
        self.rows_per_run = self.ROWS_PER_RUN if self.dynamic_lengths else None
        self.metadata = metadata
        self.kind = metadata["model_kind"]
        self.config = lite.load_config(model_path, metadata)
        self.output_specs = self.model.output_specs
        self.input_names = tuple(self.model.input_specs)
        self.do_lower_case = bool(metadata["do_lower_case"])
        self.max_seq_length = int(metadata["max_seq_length"])
        self.labels = metadata.get("labels")
        spm_name = metadata.get("spm_model_file")
        self.spm_model_file = os.path.join(self.directory, spm_name) if spm_name else None
        # A `--format=mediapipe` export, whose MediaPipe clients read less of some texts (`Pipeline._warn_dropped`).
        self.mediapipe = os.path.isfile(os.path.join(self.directory, lite.MEDIAPIPE_SPM_FILE))

    def __call__(self, features, output_names):
        inputs = {self._RENAMED_INPUTS.get(name, name): value for name, value in features.items()}
        inputs = {name: value for name, value in inputs.items() if name in self.model.input_specs}
        width = self.model.input_specs["mlm_positions"].shape[-1] if "mlm_positions" in inputs else None
        if width is not None:   # A fixed-shape export's mask slots; a resizable one takes any number.
            positions = np.asarray(inputs["mlm_positions"], np.int32)
            if positions.shape[-1] > width:
                raise InputError(f"The LiteRT export `{self.directory}` predicts at most {width} masks per input; "
                                 f"received an input with {positions.shape[-1]}.")
            inputs["mlm_positions"] = np.pad(positions, [(0, 0), (0, width - positions.shape[-1])])
        # A `--format=mediapipe` export keeps one output (a classifier's probabilities, an encoder's pooled output).
        return self.model(inputs, [name for name in output_names if name in self.output_specs])



def real_length(input_mask):
    """The length a row needs: one past its last real position (`input_mask` 1) over all its sequences (a
    multiple-choice row holds one per option), at least 1."""
    mask = np.asarray(input_mask).reshape(-1, np.shape(input_mask)[-1])
    real = np.flatnonzero(mask.any(axis=0))
    return int(real[-1]) + 1 if real.size else 1


def export_directory(source):
    """The SavedModel directory of an `albert-export` at `source` (a version dir, or the newest version of a base
    dir), or None when `source` is not one."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    path = os.fspath(source)

    def is_export(directory):
        return (os.path.isfile(os.path.join(directory, "saved_model.pb"))
                and not os.path.isfile(os.path.join(directory, "tfhub_module.pb"))
                and os.path.isfile(os.path.join(directory, _EXPORT_CONFIG)))

    if not os.path.isdir(path):
        return None
    if is_export(path):
        return path
    versions = [int(name) for name in os.listdir(path)
                if name.isdigit() and is_export(os.path.join(path, name))]
    return os.path.join(path, str(max(versions))) if versions else None


def make_tokenizer(spm_model_file, vocab_file, do_lower_case, where):
    """`(FullTokenizer, whether it is SentencePiece)` from a SentencePiece model, else a WordPiece vocab."""
    if spm_model_file:
        return tokenization.FullTokenizer(spm_model_file=spm_model_file, do_lower_case=do_lower_case), True
    if vocab_file:
        return tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case), False
    raise InputError(f"No SentencePiece model (or WordPiece vocab) found with `{where}`; pass `spm_model_file=`.")


def split_options(options):
    """`(task options, config, spm_model_file, vocab_file, do_lower_case)`: the loading options taken out of a
    copy of `options`."""
    options = dict(options)
    config = options.pop("config", None)
    spm_model_file = options.pop("spm_model_file", None)
    vocab_file = options.pop("vocab_file", None)
    return options, config, spm_model_file, vocab_file, options.get("do_lower_case", True)


def default_lengths(cls, options, longest):
    """Fills the length options not given (`max_seq_length`, and the task's text-mode lengths such as a question
    limit) with the task's defaults capped at `longest` (the export's length, or the model's
    `max_position_embeddings`), each text-mode length cut to leave its packing room (`text.modes.Length.room`)."""
    if "max_seq_length" not in cls.defaults or not longest:
        return
    length = options.setdefault("max_seq_length", min(cls.defaults["max_seq_length"], int(longest)))
    for name, mode_length in text_modes.lengths().items():
        if name in cls.defaults and mode_length.room is not None:
            options.setdefault(name, min(cls.defaults[name], length - mode_length.room))


# --- The shared base -------------------------------------------------------------------------------------------


class _ServingKinds:
    """`Pipeline.export_kinds`: the kinds whose exports serve the class's task, from the registry."""

    def __get__(self, instance, owner):
        return registry.serving_kinds(owner.task)


class Pipeline:
    """What every task shares: tokenizer, batching with a progress bar, one input -> one result, list -> list.

    Subclasses set `task`, `model_class`, `required_heads` (the heads, checkpoint components, that a source must
    hold), `defaults` (their options with the runners' defaults) and `output_names`, implement `_check` (one raw
    input -> its normalised form, or InputError), `_encode` (normalised inputs -> rows of NumPy features and a
    state) and `_decode` (state and the rows' outputs -> one result per input), and may override `build_model`
    and `runner_options` (how a checkpoint becomes the task's model; options an export gives). A task's module
    registers its class (`albert_tf.registry.register_pipeline`). `export_kinds`, the kinds whose exports serve
    the task, comes from the registry (their serving specs' `pipeline_tasks`).

    Args:
        runner: `KerasRunner`, `ExportRunner` or `LiteRunner`.
        tokenizer: `FullTokenizer`.
        use_spm: bool, whether `tokenizer` is SentencePiece (texts then go through `preprocess_text`).
        batch_size: int, rows per model call.
        progress: bool or None; None shows a progress bar when there is more than one batch.
        **options: the task's options (`defaults`).
    """

    task = None
    model_class = None
    required_heads = ()
    export_kinds = _ServingKinds()
    defaults = {}
    output_names = ()

    def __init__(self, runner, tokenizer, use_spm, batch_size=32, progress=None, **options):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"`batch_size` must be a positive int. Received: {batch_size!r}.")
        self.runner = runner
        self.tokenizer = tokenizer
        self.use_spm = use_spm
        self.batch_size = batch_size
        self.progress = progress
        for name, default in self.defaults.items():
            setattr(self, name, options.pop(name, default))
        if options:
            raise InputError(f"Unknown options for {self.task!r}: {sorted(options)}. Options: "
                             f"{sorted(set(self.defaults) | set(_COMMON_OPTIONS))}.")
        max_seq_length = getattr(self, "max_seq_length", None)
        if max_seq_length is not None:
            check_max_seq_length(max_seq_length, runner.config.max_position_embeddings)

    def process_text(self, text):
        """A raw text as the task's runner reads it (`preprocess_text` with SentencePiece)."""
        return packing.process_text(text, use_spm=self.use_spm, do_lower_case=self.do_lower_case)

    def __call__(self, inputs=None, **kwargs):
        inputs, single = self._inputs(inputs, kwargs)
        items = [self._check(item, index) for index, item in enumerate(inputs)]
        if getattr(self.runner, "mediapipe", False):
            self._warn_dropped(inputs)
        rows, state = self._encode(items)
        outputs = self._run(rows)
        results = self._decode(items, state, outputs)
        return results[0] if single else results

    def _warn_dropped(self, inputs):
        """Logs a warning naming the inputs that hold U+0000: MediaPipe's text tasks read a text as a C string and
        stop there, while this pipeline reads it whole (docs/deploying_small.md)."""
        def texts(value):
            if isinstance(value, str):
                yield value
            elif isinstance(value, dict):
                for part in value.values():
                    yield from texts(part)
            elif isinstance(value, (list, tuple)):
                for part in value:
                    yield from texts(part)

        held = [index for index, item in enumerate(inputs) if any("\x00" in text for text in texts(item))]
        if held:
            logging.warning("%s: input%s %s hold%s U+0000: MediaPipe's text tasks stop reading a text there (a C "
                            "string), this pipeline reads it whole, so the two answers differ.", self.task,
                            "s" if len(held) > 1 else "", ", ".join(map(str, held[:10])) + (", ..." if len(held) > 10
                                                                                              else ""),
                            "" if len(held) > 1 else "s")

    def _inputs(self, inputs, kwargs):
        """`(list of raw inputs, whether one input was given)`; keyword inputs are the task's business."""
        if kwargs:
            raise InputError(f"Unexpected keyword arguments for {self.task!r}: {sorted(kwargs)}.")
        if inputs is None:
            raise InputError(f"Pass the input of {self.task!r} (one, or a list).")
        if isinstance(inputs, list):
            return inputs, False
        if isinstance(inputs, np.ndarray):
            # A NumPy array of texts: each row one input (a row of two: a pair); a 0-d array is one input.
            if inputs.ndim == 0:
                return [inputs.item()], True
            if inputs.ndim > 2:
                raise InputError(f"A NumPy array input of {self.task!r} has one text per row (or a pair: two "
                                 f"columns). Received: shape {list(inputs.shape)}.")
            return [tuple(row) if isinstance(row, list) else row for row in inputs.tolist()], False
        if isinstance(inputs, collections.abc.Iterator):
            return list(inputs), False   # A generator or another iterator: its items, read once.
        return [inputs], True

    def _run(self, rows):
        """Stacks the rows' features batch by batch, runs the model and returns one output dict per row (in the
        rows' order). Rows of similar length share a batch, cut to its longest member (`_batches`)."""
        outputs = [None] * len(rows)
        bar = self._progress_bar(len(rows))
        try:
            for indices, length in self._batches(rows):
                features = self._stack([rows[i] for i in indices])
                if length is not None:
                    features = {name: value[..., :length] if name in SEQUENCE_FEATURES else value
                                for name, value in features.items()}
                result = self.runner(features, self.output_names)
                for k, i in enumerate(indices):
                    outputs[i] = {name: value[k] for name, value in result.items()}
                if bar is not None:
                    bar.update(len(indices))
        finally:
            if bar is not None:
                bar.close()
        return outputs

    def _batches(self, rows):
        """`(row indices, length)` per batch. On a runner that takes any length, rows are grouped by their real
        length (`input_mask`) and each batch is cut to its longest member rounded up by
        `albert_tf.data.lengths.padded_length` to the runner's multiple (`length_multiple`: 8 for a graph
        that runs any length as it is, 32 where each new length compiles again); the attention mask hides the
        padding, so the outputs at the real positions do not change. A runner of fixed shapes (LiteRT) gets
        the rows in order at their full length (`length` None)."""
        if not rows or not getattr(self.runner, "dynamic_lengths", False):
            return [(list(range(start, min(start + self.batch_size, len(rows)))), None)
                    for start in range(0, len(rows), self.batch_size)]
        full = np.shape(rows[0]["input_ids"])[-1]
        real = [real_length(row["input_mask"]) for row in rows]
        multiple = getattr(self.runner, "length_multiple", None) or length_buckets.length_multiple(
            getattr(self.runner, "compiles_per_shape", False))
        rows_per_run = min(self.batch_size, getattr(self.runner, "rows_per_run", None) or self.batch_size)
        return [(indices, length_buckets.padded_length(max(real[i] for i in indices), full, multiple))
                for indices in length_buckets.batches_by_length(real, rows_per_run)]

    def _progress_bar(self, total):
        """A tqdm bar over `total` rows when `progress` asks for one (None: more than one batch), else None."""
        show = self.progress if self.progress is not None else total > self.batch_size
        if not show:
            return None
        try:
            from tqdm.auto import tqdm   # Only when a bar is shown; a plain install has no tqdm.
        except ImportError:
            if self.progress:
                raise MissingPackageError("`progress=True` draws its bar with tqdm: pip install tqdm") from None
            return None
        return tqdm(total=total, desc=self.task, unit="input")

    def _stack(self, batch):
        return {name: np.asarray([row[name] for row in batch], np.int32) for name in batch[0]}

    # --- helpers shared by the sentence tasks ---

    def _text_pair(self, item, index):
        """A string, a `(text_a, text_b)` pair or `{"text_a", "text_b"}` -> `(text_a, text_b or None)`."""
        if isinstance(item, dict):
            unknown = set(item) - {"text_a", "text_b"}
            if "text_a" not in item or unknown:
                raise InputError(f"Input {index} of {self.task!r}: a dict needs `text_a` (and optionally "
                                 f"`text_b`). Received keys: {sorted(item)}.")
            item = (item["text_a"], item.get("text_b"))
        if isinstance(item, str):
            return item, None
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) \
                and (item[1] is None or isinstance(item[1], str)):
            return item
        raise InputError(f"Input {index} of {self.task!r} must be a string or a (text_a, text_b) tuple of strings. "
                         f"Received: {type(item).__name__}.")

    def _pack(self, index, text_a, text_b):
        """GLUE packing (`convert_single_example`): `[CLS] a [SEP] (b [SEP])`, padded to `max_seq_length`."""
        del index  # The row's place; the packing does not depend on it.
        return packing.pack_pair(self.tokenizer, self.process_text(text_a),
                                 self.process_text(text_b) if text_b else None, self.max_seq_length)


    # --- loading ---

    @classmethod
    def build_model(cls, resolved, config, options):
        """The task's model for the checkpoint source `resolved` (before its weights are restored)."""
        del resolved, options  # Used by the tasks whose head depends on the source or the options.
        return cls.model_class(config)

    @classmethod
    def runner_options(cls, runner, options):
        """Fills options that an export records (`runner.metadata`); none here."""
        del runner, options  # Used by the tasks whose export records options (a classifier's labels).

    @classmethod
    def _check_kind(cls, runner, where, what):
        if runner.kind not in cls.export_kinds:
            raise InputError(f"The {what}`{where}` serves a {runner.kind} model; {cls.task!r} needs an export of "
                             f"{' or '.join(cls.export_kinds)}.")

    @classmethod
    def _keras_model(cls, resolved, config, options):
        """The task's model built from `config` and restored from `resolved`, with the heads the task needs."""
        model = cls.build_model(resolved, config, options)
        loaded = restore_source(model, resolved, allow_missing_heads=True)
        missing = [head for head in cls.required_heads
                   if head in table.model_components(model) and head in loaded.missing_heads]
        if missing:
            raise InputError(f"Source `{resolved.path}` has no {missing[0]} head, which {cls.task!r} needs "
                             f"({type(model).__name__}); it holds {describe_heads(resolved)}.")
        return model

    @classmethod
    def load(cls, source, **options):
        """The pipeline of `cls.task` on `source` (a LiteRT export, an `albert-export` or a checkpoint source);
        see `pipeline`."""
        options, config, spm_model_file, vocab_file, do_lower_case = split_options(options)
        num_threads = options.pop("num_threads", None)
        found = lite.find_export(source)
        if found is not None:
            return cls._from_lite(found, options, spm_model_file, vocab_file, num_threads)
        if num_threads is not None:
            raise InputError(f"`num_threads` applies to a LiteRT export (`albert-export --format=tflite`); `{source}` "
                             "runs on TensorFlow, whose CPU threads `tf.config.threading."
                             "set_intra_op_parallelism_threads` sets before the first model call.")
        export_dir = export_directory(source)
        if export_dir is not None:
            runner = ExportRunner(export_dir, options.pop("export_task", None))
            cls._check_kind(runner, export_dir, "export ")
            options.setdefault("do_lower_case", runner.do_lower_case)
            cls.runner_options(runner, options)
            default_lengths(cls, options, runner.max_seq_length or runner.config.max_position_embeddings)
            tokenizer, use_spm = make_tokenizer(spm_model_file or runner.spm_model_file, vocab_file,
                                                options["do_lower_case"], export_dir)
            return cls(runner, tokenizer, use_spm, **options)
        with resolve_source(source) as resolved:
            config = config if config is not None else resolved.config_file
            if config is None:
                raise InputError(f"No config for `{source}`: "
                                 f"{resolved.config_note or 'no albert_config.json found'}. Pass `config=`.")
            config = as_config(config)
            # The tokenizer reads its model into memory: a source's temporary directory may go afterwards.
            tokenizer, use_spm = make_tokenizer(
                spm_model_file or resolved.spm_model_file,
                vocab_file or (None if resolved.spm_model_file else resolved.vocab_file), do_lower_case, source)
            if use_spm:
                tokenization.check_spm_vocab_size(tokenizer.sp_model_proto, config.vocab_size,
                                                  spm_model_file or resolved.spm_model_file, "the source's config")
            model = cls._keras_model(resolved, config, options)
        default_lengths(cls, options, config.max_position_embeddings)
        return cls(KerasRunner(model), tokenizer, use_spm, **options)

    @classmethod
    def _from_lite(cls, found, options, spm_model_file, vocab_file, num_threads=None):
        """The pipeline on a LiteRT export (`found`: its `.tflite` path and metadata); `batch_size` defaults to a
        resizable export's `batch_size`."""
        runner = LiteRunner(*found, num_threads=num_threads)
        cls._check_kind(runner, found[0], "LiteRT export ")
        if runner.dynamic_lengths:
            options.setdefault("batch_size", int(runner.metadata.get("batch_size") or 32))
        options.setdefault("do_lower_case", runner.do_lower_case)
        max_seq_length = options.setdefault("max_seq_length", runner.max_seq_length)
        if max_seq_length != runner.max_seq_length and not runner.dynamic_lengths:
            raise InputError(f"The LiteRT export `{found[0]}` has fixed inputs of length {runner.max_seq_length}. "
                             f"Received: `max_seq_length={max_seq_length}`.")
        cls.runner_options(runner, options)
        tokenizer, use_spm = make_tokenizer(spm_model_file or runner.spm_model_file, vocab_file,
                                            options["do_lower_case"], found[0])
        return cls(runner, tokenizer, use_spm, **options)


# --- The encoder's pipeline ------------------------------------------------------------------------------------


@registry.register_pipeline
class FeatureExtractionPipeline(Pipeline):
    """`"feature-extraction"`: the encoder's pooled output and its sequence output at the real positions."""

    task = "feature-extraction"
    model_class = AlbertModel
    defaults = {"max_seq_length": 512, "do_lower_case": True}
    output_names = ("pooled_output", "sequence_output")

    def _check(self, item, index):
        return self._text_pair(item, index)

    def _encode(self, items):
        rows = [self._pack(index, a, b) for index, (a, b) in enumerate(items)]
        if "mlm_positions" in self.runner.input_names:
            for row in rows:
                row["masked_lm_positions"] = [0]   # A signature with masked-LM positions needs one.
        return rows, rows

    def _decode(self, items, rows, outputs):
        # A `--format=mediapipe` encoder export has no sequence output.
        return [{"pooled_output": o["pooled_output"],
                 **({"sequence_output": o["sequence_output"][:int(np.sum(row["input_mask"]))]}
                    if "sequence_output" in o else {})}
                for row, o in zip(rows, outputs)]


# --- The entry point -------------------------------------------------------------------------------------------


def pipeline(task, source, **options):
    """A callable answering `task` on raw text with the model and tokenizer of `source`.

    Args:
        task: str, a registered pipeline task (`albert_tf.registry.pipelines()`: `fill-mask`,
            `text-classification`, `question-answering`, `multiple-choice`, `feature-extraction`,
            `token-classification`).
        source: str or path, anything `from_pretrained` reads (or a release name), an `albert-export`
            directory, or a LiteRT export.
        **options: `batch_size` (32; a resizable LiteRT export's own `batch_size`), `progress` (None: a bar
            for more than one batch), `config` / `spm_model_file` / `vocab_file` (for sources without them),
            `num_threads` (a LiteRT export's interpreter threads; default: every core this process may run on),
            and the task's options with the runners' names and defaults (see the module docstring); `export_task`:
            the task of a multi-task export (`albert-export --tasks`) to answer with (its own signature, labels
            and lengths).

    Returns:
        a `Pipeline` (call it on one input or a list).

    Raises:
        InputError: unknown task or option, or a source without the head the task needs.
    """
    classes = registry.pipelines()
    if task not in classes:
        raise InputError(f"Unknown task {task!r}: `task` must be one of {sorted(classes)}.")
    return classes[task].load(source, **options)


def __getattr__(name):
    """`PIPELINES` (task -> class) and the registered pipeline classes (`TextClassificationPipeline`, ...) are
    names of this module, found through the registry."""
    if name == "PIPELINES":
        return registry.pipelines()
    classes = {cls.__name__: cls for cls in registry.pipelines().values()}
    if name in classes:
        return classes[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
