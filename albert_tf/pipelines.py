"""Text in, answers out: `pipeline(task, source, **options)` for every task of the package.

`pipeline` loads a model with its head and its tokenizer from `source` and returns a callable that takes raw
strings: one input gives one result, a list gives a list, run in batches of `batch_size` (default 32) with a
progress bar for lists longer than one batch. `source` is anything `from_pretrained` reads (a Google release
directory or `.tar.gz`, a TF1 checkpoint prefix, a TF-Hub TF1 module, a TF2 SavedModel of tf-models'
AlbertEncoder, a keras-hub preset, a Hugging Face directory, one of our `--output_dir` checkpoints, or a name
such as `albert_base_v2` or `hf:org/repo`) or an `albert-export` directory (a version directory, or the base
directory: its newest version), whose `serving_default` signature is then run on the same packed ids, or a
LiteRT export of `albert-export --format=tflite` (its `model.tflite` or its directory), run on the LiteRT
interpreter (`ai-edge-litert`) with the export's fixed lengths, labels and tokenizer.

The preprocessing is the runners' own code, so a pipeline answers what the runner writes for the same model,
input and options:

* `"fill-mask"`: `pipe("the [MASK] of france", top_k=5)` -> per `[MASK]` (in order) a list of `top_k`
  `{"token": piece, "token_id": int, "score": probability}` from the MLM head (`AlbertPretrainer`). The text
  between masks is tokenized chunk by chunk, as the export's `serve_text`, and packed as a GLUE sentence.
* `"text-classification"`: a string, a `(text_a, text_b)` pair or `{"text_a", "text_b"}` -> `{"label",
  "score", "scores"}` (`AlbertClassifier`, packed by `glue.convert_single_example`); labels from
  `labels=[...]`, else the GLUE task's list with `task_name=` (the original's order), else `LABEL_<i>`. A
  regression head (STS-B, one label) gives `{"score": value}`.
* `"question-answering"`: `pipe(question=..., context=...)`, `{"question", "context"}` or a list of those ->
  `{"answer", "score", "start", "end"}`, `context[start:end] == answer`, through `squad.py`'s doc-stride
  windows and `squad_postprocess.py`'s n-best decoding (v1 span head, or the v2 beam head, which answers ""
  when `null_score_diff_threshold` is given and the example's null score difference reaches it). `score` is
  the answer's n-best probability (for "" the sigmoid of the null score difference).
* `"multiple-choice"`: `{"article", "question", "options": [4 strings]}` -> `{"choice": int, "scores": [4]}`
  (`AlbertRace`, packed by `race.encode_example`).
* `"feature-extraction"`: a string or pair -> `{"pooled_output": [H], "sequence_output": [pieces, H]}` (NumPy;
  the `[CLS] ... [SEP]` positions, no padding).

Options have the runners' names and defaults (`max_seq_length`, `do_lower_case`, `doc_stride`,
`max_query_length`, `n_best_size`, `max_answer_length`, `null_score_diff_threshold`, `start_n_top`,
`end_n_top`, `max_qa_length`); `config=`, `spm_model_file=` and `vocab_file=` stand in for a source without
them. Mistakes in what the caller gives (an unknown task or option, a source without the task's head, a
question without a context) raise `albert_tf.errors.InputError`.
"""

import contextlib
import math
import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.export import lite
from albert_tf.text import ops as text_ops
from albert_tf.text import tokenization
from albert_tf.checkpoints import open_reader, resolve_source, restore_source, source_num_labels, table
from albert_tf.checkpoints.convert import detect_model
from albert_tf.config import AlbertConfig, check_max_seq_length
from albert_tf.tasks.glue import data as glue
from albert_tf.tasks.race import data as race
from albert_tf.tasks.squad import data as squad
from albert_tf.tasks.squad import postprocess as post
from albert_tf.tasks.race.data import RACE_NUM_CHOICES
from albert_tf.errors import InputError, MissingPackageError
from albert_tf.models.albert_model import AlbertModel, as_config, compile_forward
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2

_MASK_PATTERN = re.compile(r"\[mask\]", re.IGNORECASE)
_EXPORT_CONFIG = os.path.join("assets", "albert_config.json")


# --- Where the model runs: a Keras model, or the serving_default signature of an albert-export ----------------


class _KerasRunner:
    """Runs a Keras model of the package on batches of NumPy features through one `tf.function`."""

    def __init__(self, model):
        self.model = model
        self.config = model.config
        self._forward = compile_forward(model)

    def __call__(self, features, output_names):
        outputs = self._forward({name: tf.constant(value) for name, value in features.items()})
        return {name: outputs[name].numpy() for name in output_names}


class _ExportRunner:
    """Runs the `serving_default` signature of an `albert-export` SavedModel on batches of NumPy features.

    The export's kind (its model class) is read from the signature's outputs; the pretrainer's
    `masked_lm_positions` input is the signature's `mlm_positions`.
    """

    _RENAMED_INPUTS = {"masked_lm_positions": "mlm_positions"}

    def __init__(self, directory):
        self.directory = directory
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
        if "serving_default" not in self.loaded.signatures:
            raise InputError(f"`{directory}` has no `serving_default` signature: not an albert-export directory.")
        self.signature = self.loaded.signatures["serving_default"]
        self.output_specs = self.signature.structured_outputs
        self.input_specs = self.signature.structured_input_signature[1]
        self.config = AlbertConfig.from_json_file(os.path.join(directory, _EXPORT_CONFIG))
        self.kind = self._kind()
        self.do_lower_case = True
        self.spm_model_file = None
        if "tokenization_info" in self.loaded.signatures:
            info = self.loaded.signatures["tokenization_info"]()
            self.do_lower_case = bool(info["do_lower_case"].numpy())
            vocab = info["vocab_file"].numpy().decode("utf-8")
            self.spm_model_file = vocab or None
        self.max_seq_length = self._example_length()

    def _example_length(self):
        """The `max_seq_length` the export was written with: the longest `[L]` feature that its
        `serve_examples` signature parses (None without that signature)."""
        if "serve_examples" not in self.loaded.signatures:
            return None
        graph_def = self.loaded.signatures["serve_examples"].graph.as_graph_def()
        nodes = list(graph_def.node) + [node for function in graph_def.library.function
                                        for node in function.node_def]
        lengths = [shape.dim[0].size for node in nodes if node.op in ("ParseExampleV2", "ParseExample")
                   for shape in node.attr["dense_shapes"].list.shape if len(shape.dim) == 1]
        return max(lengths) if lengths else None

    def _kind(self):
        names = set(self.output_specs)
        if "mlm_logits" in names:
            return "pretrainer"
        if "start_top_index" in names:
            return "squad_v2"
        if "start_logits" in names:
            return "squad_v1"
        if "probabilities" in names and len(self.output_specs["probabilities"].shape) == 3:
            return "token_classifier"
        if "logits" in names and "probabilities" in names:
            return "race"
        if "probabilities" in names:
            return "classifier"
        return "encoder"

    def __call__(self, features, output_names):
        inputs = {self._RENAMED_INPUTS.get(name, name): tf.constant(value) for name, value in features.items()}
        inputs = {name: value for name, value in inputs.items() if name in self.input_specs}
        outputs = self.signature(**inputs)
        return {name: outputs[name].numpy() for name in output_names}


class _LiteRunner:
    """Runs a LiteRT export of `albert_tf.export.lite` (`albert-export --format=tflite`) on batches of NumPy features.

    The kind, lengths, labels and tokenizer come from its metadata file; the fixed batch is filled by
    `lite.LiteModel`, and the pretrainer's `mlm_positions` are padded with position 0 to the export's width.
    """

    _RENAMED_INPUTS = {"masked_lm_positions": "mlm_positions"}

    def __init__(self, model_path, metadata):
        self.directory = os.path.dirname(model_path)
        self.model = lite.LiteModel(model_path)
        self.kind = metadata["model_kind"]
        self.config = lite.load_config(model_path, metadata)
        self.output_specs = self.model.output_specs
        self.do_lower_case = bool(metadata["do_lower_case"])
        self.max_seq_length = int(metadata["max_seq_length"])
        self.labels = metadata.get("labels")
        spm_name = metadata.get("spm_model_file")
        self.spm_model_file = os.path.join(self.directory, spm_name) if spm_name else None

    def __call__(self, features, output_names):
        inputs = {self._RENAMED_INPUTS.get(name, name): value for name, value in features.items()}
        inputs = {name: value for name, value in inputs.items() if name in self.model.input_specs}
        if "mlm_positions" in inputs:
            width = int(self.model.input_specs["mlm_positions"].shape[-1])
            positions = np.asarray(inputs["mlm_positions"], np.int32)
            if positions.shape[-1] > width:
                raise InputError(f"The LiteRT export `{self.directory}` predicts at most {width} masks per input; "
                                 f"received an input with {positions.shape[-1]}.")
            inputs["mlm_positions"] = np.pad(positions, [(0, 0), (0, width - positions.shape[-1])])
        return self.model(inputs, output_names)


def _lite_pipeline(cls, task, found, options, spm_model_file, vocab_file):
    """The pipeline of `task` on a LiteRT export (`found`: its `.tflite` path and metadata)."""
    runner = _LiteRunner(*found)
    if runner.kind not in cls.export_kinds:
        raise InputError(f"The LiteRT export `{found[0]}` serves a {runner.kind} model; {task!r} needs an export of "
                         f"{' or '.join(cls.export_kinds)}.")
    options.setdefault("do_lower_case", runner.do_lower_case)
    max_seq_length = options.setdefault("max_seq_length", runner.max_seq_length)
    if max_seq_length != runner.max_seq_length:
        raise InputError(f"The LiteRT export `{found[0]}` has fixed inputs of length {runner.max_seq_length}. "
                         f"Received: `max_seq_length={max_seq_length}`.")
    if task == "text-classification" and runner.labels:
        options.setdefault("labels", runner.labels)
    tokenizer, use_spm = _tokenizer(spm_model_file or runner.spm_model_file, vocab_file,
                                    options["do_lower_case"], found[0])
    return cls(runner, tokenizer, use_spm, **options)


def _export_directory(source):
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


# --- The shared base -------------------------------------------------------------------------------------------


class Pipeline:
    """What every task shares: tokenizer, batching with a progress bar, one input -> one result, list -> list.

    Subclasses set `task`, `model_class`, `export_kinds` (the `albert-export` kinds that serve the task),
    `defaults` (their options with the runners' defaults) and `output_names`, and implement `_check` (one raw
    input -> its normalised form, or InputError), `_encode` (normalised inputs -> rows of NumPy features and a
    state) and `_decode` (state and the rows' outputs -> one result per input).

    Args:
        runner: `_KerasRunner` or `_ExportRunner`.
        tokenizer: `FullTokenizer`.
        use_spm: bool, whether `tokenizer` is SentencePiece (texts then go through `preprocess_text`).
        batch_size: int, rows per model call.
        progress: bool or None; None shows a progress bar when there is more than one batch.
        **options: the task's options (`defaults`).
    """

    task = None
    model_class = None
    export_kinds = ()
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
        self.process_text = glue.DataProcessor(use_spm=use_spm, do_lower_case=self.do_lower_case).process_text

    def __call__(self, inputs=None, **kwargs):
        inputs, single = self._inputs(inputs, kwargs)
        items = [self._check(item, index) for index, item in enumerate(inputs)]
        rows, state = self._encode(items)
        outputs = self._run(rows)
        results = self._decode(items, state, outputs)
        return results[0] if single else results

    def _inputs(self, inputs, kwargs):
        """`(list of raw inputs, whether one input was given)`; keyword inputs are the task's business."""
        if kwargs:
            raise InputError(f"Unexpected keyword arguments for {self.task!r}: {sorted(kwargs)}.")
        if inputs is None:
            raise InputError(f"Pass the input of {self.task!r} (one, or a list).")
        if isinstance(inputs, list):
            return inputs, False
        return [inputs], True

    def _run(self, rows):
        """Stacks the rows' features batch by batch, runs the model and returns one output dict per row."""
        outputs = []
        show = self.progress if self.progress is not None else len(rows) > self.batch_size
        bar = None
        if show:
            from tqdm.auto import tqdm   # Only when a bar is shown.
            bar = tqdm(total=len(rows), desc=self.task, unit="input")
        try:
            for start in range(0, len(rows), self.batch_size):
                batch = rows[start:start + self.batch_size]
                features = self._stack(batch)
                result = self.runner(features, self.output_names)
                outputs.extend({name: value[i] for name, value in result.items()} for i in range(len(batch)))
                if bar is not None:
                    bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()
        return outputs

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
        example = glue.InputExample(f"input-{index}", self.process_text(text_a),
                                    self.process_text(text_b) if text_b else None, label="0")
        feature = glue.convert_single_example(index, example, ["0"], self.max_seq_length,
                                              self.tokenizer, self.task)
        return {"input_ids": feature.input_ids, "input_mask": feature.input_mask,
                "segment_ids": feature.segment_ids}


_COMMON_OPTIONS = ("batch_size", "progress", "config", "spm_model_file", "vocab_file")


class _MaskedTokenizer:
    """`tokenize` keeps each literal `[MASK]` (any case) as the `[MASK]` piece and tokenizes the text between the
    masks chunk by chunk, as the export's in-graph `tokenize_with_masks`; texts come in unprocessed."""

    def __init__(self, tokenizer, process_text):
        self.tokenizer = tokenizer
        self.process_text = process_text

    def tokenize(self, text):
        pieces = []
        for i, chunk in enumerate(_MASK_PATTERN.split(text)):
            if i:
                pieces.append("[MASK]")
            pieces.extend(self.tokenizer.tokenize(self.process_text(chunk)))
        return pieces

    def convert_tokens_to_ids(self, tokens):
        return self.tokenizer.convert_tokens_to_ids(tokens)


# --- One class per task ----------------------------------------------------------------------------------------


class FillMaskPipeline(Pipeline):
    """`"fill-mask"`: the `top_k` most probable pieces at each `[MASK]` of a text (or a pair)."""

    task = "fill-mask"
    model_class = AlbertPretrainer
    export_kinds = ("pretrainer",)
    defaults = {"max_seq_length": 512, "do_lower_case": True, "top_k": 5}
    output_names = ("mlm_logits",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mask_id = self.tokenizer.convert_tokens_to_ids(["[MASK]"])[0]
        self.masked_tokenizer = _MaskedTokenizer(self.tokenizer, self.process_text)

    def __call__(self, inputs=None, top_k=None, **kwargs):
        if top_k is not None:
            with self._top_k(top_k):
                return super().__call__(inputs, **kwargs)
        return super().__call__(inputs, **kwargs)

    @contextlib.contextmanager
    def _top_k(self, top_k):
        saved, self.top_k = self.top_k, top_k
        try:
            yield
        finally:
            self.top_k = saved

    def _check(self, item, index):
        text_a, text_b = self._text_pair(item, index)
        if not _MASK_PATTERN.search(text_a + (text_b or "")):
            raise InputError(f"Input {index} of 'fill-mask' has no `[MASK]`: {text_a!r}.")
        return text_a, text_b

    def _encode(self, items):
        rows = []
        for index, (text_a, text_b) in enumerate(items):
            # The masked tokenizer processes the text chunk by chunk: the example holds the raw texts.
            example = glue.InputExample(f"input-{index}", text_a, text_b, label="0")
            feature = glue.convert_single_example(index, example, ["0"], self.max_seq_length,
                                                  self.masked_tokenizer, self.task)
            positions = [i for i, piece_id in enumerate(feature.input_ids) if piece_id == self.mask_id]
            rows.append({"input_ids": feature.input_ids, "input_mask": feature.input_mask,
                         "segment_ids": feature.segment_ids, "masked_lm_positions": positions})
        return rows, rows

    def _stack(self, batch):
        width = max(1, max(len(row["masked_lm_positions"]) for row in batch))
        features = {name: np.asarray([row[name] for row in batch], np.int32)
                    for name in ("input_ids", "input_mask", "segment_ids")}
        # Padded with position 0, as `serve_text`; the padded predictions are dropped in `_decode`.
        features["masked_lm_positions"] = np.asarray(
            [row["masked_lm_positions"] + [0] * (width - len(row["masked_lm_positions"])) for row in batch],
            np.int32)
        return features

    def _decode(self, items, rows, outputs):
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise InputError(f"`top_k` must be a positive int. Received: {self.top_k!r}.")
        results = []
        for row, output in zip(rows, outputs):
            # A mask cut off by `max_seq_length` has no prediction.
            logits = output["mlm_logits"][:len(row["masked_lm_positions"])].astype(np.float64)
            probabilities = np.exp(logits - logits.max(-1, keepdims=True))
            probabilities /= probabilities.sum(-1, keepdims=True)
            per_mask = []
            for probs in probabilities:
                top = np.argsort(-probs, kind="stable")[:self.top_k]
                per_mask.append([{"token": piece, "token_id": int(i), "score": float(probs[i])}
                                 for i, piece in zip(top, self.tokenizer.convert_ids_to_tokens(top))])
            results.append(per_mask)
        return results


class TextClassificationPipeline(Pipeline):
    """`"text-classification"`: the classifier head's label and probabilities (or its value for regression)."""

    task = "text-classification"
    model_class = AlbertClassifier
    export_kinds = ("classifier",)
    defaults = {"max_seq_length": 512, "do_lower_case": True, "labels": None, "task_name": None}
    output_names = ("probabilities",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.labels = resolve_labels(self.labels, self.task_name, self.runner_num_labels())

    def runner_num_labels(self):
        runner = self.runner
        if isinstance(runner, _KerasRunner):
            return runner.model.num_labels
        return int(runner.output_specs["probabilities"].shape[-1])

    def _check(self, item, index):
        return self._text_pair(item, index)

    def _encode(self, items):
        return [self._pack(index, a, b) for index, (a, b) in enumerate(items)], None

    def _decode(self, items, state, outputs):
        results = []
        for output in outputs:
            probabilities = np.reshape(output["probabilities"], [-1])
            if self.labels == [None]:
                results.append({"score": float(probabilities[0])})
                continue
            best = int(np.argmax(probabilities))
            results.append({"label": self.labels[best], "score": float(probabilities[best]),
                            "scores": [float(p) for p in probabilities]})
        return results


def resolve_labels(labels, task_name, num_labels):
    """The label names of a classifier with `num_labels` outputs: `labels`, else the GLUE task's list (`[None]`
    for STS-B), else `LABEL_<i>` (`[None]` for a one-output regression head)."""
    if labels is not None:
        labels = list(labels)
        if len(labels) != num_labels:
            raise InputError(f"`labels` has {len(labels)} names but the classifier head has {num_labels} outputs.")
        return labels
    if task_name is not None:
        labels = glue.get_processor(task_name).get_labels()
        if len(labels) != num_labels:
            raise InputError(f"Task {task_name!r} has {len(labels)} labels {labels} but the classifier head has "
                             f"{num_labels} outputs.")
        return labels
    return [None] if num_labels == 1 else [f"LABEL_{i}" for i in range(num_labels)]


class QuestionAnsweringPipeline(Pipeline):
    """`"question-answering"`: the answer span of a question in a context, through `run_squad.py`'s windows and
    n-best decoding (SQuAD 1.1 span head or the 2.0 beam head, whichever the source holds)."""

    task = "question-answering"
    export_kinds = ("squad_v1", "squad_v2")
    defaults = {"max_seq_length": 384, "doc_stride": 128, "max_query_length": 64, "do_lower_case": True,
                "n_best_size": 20, "max_answer_length": 30, "null_score_diff_threshold": None,
                "start_n_top": 5, "end_n_top": 5}

    def __init__(self, runner, tokenizer, use_spm, **kwargs):
        if not use_spm:
            raise InputError("'question-answering' needs a SentencePiece model (the answer alignment works on "
                             "SentencePiece pieces); pass `spm_model_file=`.")
        super().__init__(runner, tokenizer, use_spm, **kwargs)
        squad.check_lengths(self.max_seq_length, self.max_query_length)
        if isinstance(runner, _KerasRunner):
            self.v2 = isinstance(runner.model, AlbertSquadV2)
            if self.v2:
                self.start_n_top, self.end_n_top = runner.model.start_n_top, runner.model.end_n_top
        else:
            self.v2 = runner.kind == "squad_v2"
            if self.v2:
                # The beam sizes are fixed in the exported graph.
                self.start_n_top = int(runner.output_specs["start_top_index"].shape[-1])
                self.end_n_top = int(runner.output_specs["end_top_index"].shape[-1]) // self.start_n_top
        self.output_names = (("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
                              "cls_logits") if self.v2 else ("start_logits", "end_logits"))

    def _inputs(self, inputs, kwargs):
        if kwargs:
            unknown = set(kwargs) - {"question", "context"}
            if unknown or inputs is not None:
                raise InputError("'question-answering' takes `question=` and `context=`, or one dict "
                                 f"`{{'question', 'context'}}` or a list of them. Received keywords: {sorted(kwargs)}.")
            return [dict(kwargs)], True
        return super()._inputs(inputs, {})

    def _check(self, item, index):
        if not isinstance(item, dict):
            raise InputError(f"Input {index} of 'question-answering' must be a dict with `question` and `context`. "
                             f"Received: {type(item).__name__}.")
        for key in ("question", "context"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise InputError(f"Input {index} of 'question-answering' needs a non-empty string `{key}`. "
                                 f"Received keys: {sorted(item)}.")
        return squad.SquadExample(qas_id=str(index), question_text=item["question"],
                                  paragraph_text=item["context"])

    def _encode(self, examples):
        for example in examples:
            pieces = len(self.tokenizer.tokenize(tokenization.preprocess_text(example.question_text,
                                                                              lower=self.do_lower_case)))
            if pieces > self.max_query_length:
                logging.warning("question-answering: question %s has %d tokens; only its first "
                                "`max_query_length=%d` are used (as the original).", example.qas_id, pieces,
                                self.max_query_length)
        features = []
        squad.convert_examples_to_features(examples, self.tokenizer, self.max_seq_length, self.doc_stride,
                                           self.max_query_length, False, features.append, self.do_lower_case)
        names = ("input_ids", "input_mask", "segment_ids") + (("p_mask",) if self.v2 else ())
        return [{name: getattr(f, name) for name in names} for f in features], features

    def _decode(self, examples, features, outputs):
        results = []
        for feature, output in zip(features, outputs):
            if self.v2:
                results.append(post.RawResultV2(
                    unique_id=feature.unique_id,
                    start_top_log_probs=[float(x) for x in output["start_top_log_probs"]],
                    start_top_index=[int(x) for x in output["start_top_index"]],
                    end_top_log_probs=[float(x) for x in output["end_top_log_probs"]],
                    end_top_index=[int(x) for x in output["end_top_index"]],
                    cls_logits=float(output["cls_logits"])))
            else:
                results.append(post.RawResult(unique_id=feature.unique_id,
                                              start_log_prob=[float(x) for x in output["start_logits"]],
                                              end_log_prob=[float(x) for x in output["end_logits"]]))
        result_dict = {}
        if self.v2:
            cls_dict = {}
            post.accumulate_predictions_v2(result_dict, cls_dict, examples, features, results, self.n_best_size,
                                           self.max_answer_length, self.start_n_top, self.end_n_top)
            predictions, score_diffs, nbest = post.write_predictions_v2(
                result_dict, cls_dict, examples, features, results, self.n_best_size,
                null_score_diff_threshold=self.null_score_diff_threshold)
        else:
            post.accumulate_predictions_v1(result_dict, examples, features, results, self.n_best_size,
                                           self.max_answer_length)
            predictions, nbest = post.write_predictions_v1(result_dict, examples, features, results,
                                                           self.n_best_size)
            score_diffs = None
        by_example = {}
        for feature in features:
            by_example.setdefault(feature.example_index, []).append(feature)
        answers = []
        for example_index, example in enumerate(examples):
            answer = predictions[example.qas_id]
            if self.v2 and answer == "" and self.null_score_diff_threshold is not None:
                diff = score_diffs[example.qas_id]
                answers.append({"answer": "", "score": 1.0 / (1.0 + math.exp(-diff)), "start": 0, "end": 0})
                continue
            start, end = self._offsets(result_dict, example_index, example, by_example.get(example_index, []),
                                       answer)
            answers.append({"answer": answer, "score": float(nbest[example.qas_id][0]["probability"]),
                            "start": start, "end": end})
        return answers

    @staticmethod
    def _offsets(result_dict, example_index, example, features, answer):
        """Character offsets `[start, end)` in the context of the best span whose text is `answer`: the n-best
        decoding's first candidate (`squad_postprocess`), with the whitespace that decoding strips left out."""
        if not features:
            return 0, 0
        for pred in post.prelim_predictions(result_dict, example_index, features):
            feature = features[pred.feature_index]
            start = feature.tok_start_to_orig_index[pred.start_index]
            end = feature.tok_end_to_orig_index[pred.end_index] + 1
            raw = example.paragraph_text[start:end]
            if raw.strip() == answer:
                start += len(raw) - len(raw.lstrip())
                return start, start + len(answer)
        return 0, 0   # The decoding's placeholder ("empty" / "") for an example without a valid span.


class MultipleChoicePipeline(Pipeline):
    """`"multiple-choice"`: which of 4 options answers a question on an article (RACE packing)."""

    task = "multiple-choice"
    model_class = AlbertRace
    export_kinds = ("race",)
    defaults = {"max_seq_length": 512, "max_qa_length": 128, "do_lower_case": True}
    output_names = ("probabilities",)

    def _check(self, item, index):
        if not isinstance(item, dict) or not {"article", "question", "options"} <= set(item):
            raise InputError(f"Input {index} of 'multiple-choice' must be a dict with `article`, `question` and "
                             f"`options` (4 strings). Received: "
                             f"{sorted(item) if isinstance(item, dict) else type(item).__name__}.")
        options = item["options"]
        if not isinstance(options, (list, tuple)) or not all(isinstance(o, str) for o in options):
            raise InputError(f"Input {index} of 'multiple-choice': `options` must be a list of "
                             f"{RACE_NUM_CHOICES} strings. Received: {options!r}.")
        obj = {"article": item["article"], "questions": [item["question"]], "options": [list(options)]}
        (example,) = race.examples_from_object(obj, f"input {index}", "middle", self.process_text,
                                               require_answers=False)
        return example

    def _encode(self, examples):
        if self.max_qa_length > self.max_seq_length - 3:
            raise InputError(f"`max_qa_length` must be <= `max_seq_length` - 3. Received: `max_qa_length="
                             f"{self.max_qa_length}`, `max_seq_length={self.max_seq_length}`.")
        rows = []
        for example in examples:
            ids, mask, segments, _ = race.encode_example(example, self.tokenizer, self.max_seq_length,
                                                         self.max_qa_length)
            rows.append({"input_ids": ids, "input_mask": mask, "segment_ids": segments})
        return rows, None

    def _decode(self, examples, state, outputs):
        return [{"choice": int(np.argmax(o["probabilities"])), "scores": [float(p) for p in o["probabilities"]]}
                for o in outputs]


class FeatureExtractionPipeline(Pipeline):
    """`"feature-extraction"`: the encoder's pooled output and its sequence output at the real positions."""

    task = "feature-extraction"
    model_class = AlbertModel
    export_kinds = ("encoder", "pretrainer")
    defaults = {"max_seq_length": 512, "do_lower_case": True}
    output_names = ("pooled_output", "sequence_output")

    def _check(self, item, index):
        return self._text_pair(item, index)

    def _encode(self, items):
        rows = [self._pack(index, a, b) for index, (a, b) in enumerate(items)]
        if getattr(self.runner, "kind", None) == "pretrainer":
            for row in rows:
                row["masked_lm_positions"] = [0]   # The pretrainer's signature needs one position.
        return rows, rows

    def _decode(self, items, rows, outputs):
        return [{"pooled_output": o["pooled_output"],
                 "sequence_output": o["sequence_output"][:int(np.sum(row["input_mask"]))]}
                for row, o in zip(rows, outputs)]


PIPELINES = {cls.task: cls for cls in (FillMaskPipeline, TextClassificationPipeline, QuestionAnsweringPipeline,
                                       MultipleChoicePipeline, FeatureExtractionPipeline)}

# The head (checkpoint component) each task's model must find in the source.
_REQUIRED_HEADS = {"fill-mask": ("mlm",), "text-classification": ("classifier",),
                   "question-answering": ("squad_v1", "squad_v2"), "multiple-choice": ("race",),
                   "feature-extraction": ()}


# --- Loading -----------------------------------------------------------------------------------------------------


def _tokenizer(spm_model_file, vocab_file, do_lower_case, where):
    if spm_model_file:
        return tokenization.FullTokenizer(spm_model_file=spm_model_file, do_lower_case=do_lower_case), True
    if vocab_file:
        return tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case), False
    raise InputError(f"No SentencePiece model (or WordPiece vocab) found with `{where}`; pass `spm_model_file=`.")


def _keras_model(task, resolved, config, options):
    """The task's model built from `config` and restored from `resolved`, with the head the task needs."""
    source = resolved.path
    if task == "question-answering":
        kind, _ = detect_model(open_reader(resolved))
        if kind == "squad_v2":
            model = AlbertSquadV2(config, start_n_top=options.get("start_n_top", 5),
                                  end_n_top=options.get("end_n_top", 5))
        else:
            model = AlbertSquadV1(config)
    elif task == "text-classification":
        num_labels = source_num_labels(resolved.checkpoint_prefix)
        if num_labels is None:
            raise InputError(f"Source `{source}` has no classifier head (`output_weights`): 'text-classification' "
                             "needs a fine-tuned classifier (e.g. a run_classifier.py `model.ckpt-best`).")
        wanted = options.get("labels")
        if wanted is not None and len(list(wanted)) != num_labels:
            raise InputError(f"`labels` has {len(list(wanted))} names but the classifier head of `{source}` has "
                             f"{num_labels} outputs.")
        model = AlbertClassifier(config, num_labels=num_labels)
    else:
        model = PIPELINES[task].model_class(config)
    loaded = restore_source(model, resolved, allow_missing_heads=True)
    missing = [head for head in _REQUIRED_HEADS[task]
               if head in table.model_components(model) and head in loaded.missing_heads]
    if missing:
        raise InputError(f"Source `{source}` has no {missing[0]} head, which {task!r} needs "
                         f"({type(model).__name__}); its heads read as: {detect_model(open_reader(resolved))[0]}.")
    return model


def default_lengths(cls, options, longest):
    """Fills the length options not given (`max_seq_length`, and `max_query_length` / `max_qa_length`) with the
    task's defaults capped at `longest`: the export's length, or the model's `max_position_embeddings`."""
    if "max_seq_length" not in cls.defaults or not longest:
        return
    length = options.setdefault("max_seq_length", min(cls.defaults["max_seq_length"], int(longest)))
    if "max_query_length" in cls.defaults:   # the original's rule: max_seq_length > max_query_length + 3
        options.setdefault("max_query_length", min(cls.defaults["max_query_length"], length - 4))
    if "max_qa_length" in cls.defaults:
        options.setdefault("max_qa_length", min(cls.defaults["max_qa_length"], length - 3))


def pipeline(task, source, **options):
    """A callable answering `task` on raw text with the model and tokenizer of `source`.

    Args:
        task: str, one of `fill-mask`, `text-classification`, `question-answering`, `multiple-choice`,
            `feature-extraction`, `token-classification` (`albert_tf.tasks.ner.pipeline`).
        source: str or path, anything `from_pretrained` reads (or a release name), or an `albert-export`
            directory.
        **options: `batch_size` (32), `progress` (None: a bar for more than one batch), `config` /
            `spm_model_file` / `vocab_file` (for sources without them), and the task's options with the
            runners' names and defaults (see the module docstring).

    Returns:
        a `Pipeline` (call it on one input or a list).

    Raises:
        InputError: unknown task or option, or a source without the head the task needs.
    """
    if task == "token-classification":   # Its own module (`albert_tf.tasks.ner.pipeline`), which imports this one.
        from albert_tf.tasks.ner.pipeline import token_classification_pipeline
        return token_classification_pipeline(source, **options)
    if task not in PIPELINES:
        raise InputError(f"Unknown task {task!r}: `task` must be one of "
                         f"{sorted(list(PIPELINES) + ['token-classification'])}.")
    cls = PIPELINES[task]
    options = dict(options)
    config = options.pop("config", None)
    spm_model_file = options.pop("spm_model_file", None)
    vocab_file = options.pop("vocab_file", None)
    do_lower_case = options.get("do_lower_case", True)

    found = lite.find_export(source)
    if found is not None:
        return _lite_pipeline(cls, task, found, options, spm_model_file, vocab_file)
    export_dir = _export_directory(source)
    if export_dir is not None:
        runner = _ExportRunner(export_dir)
        if runner.kind not in cls.export_kinds:
            raise InputError(f"The export `{export_dir}` serves a {runner.kind} model; {task!r} needs an export of "
                             f"{' or '.join(cls.export_kinds)}.")
        options.setdefault("do_lower_case", runner.do_lower_case)
        default_lengths(cls, options, runner.max_seq_length or runner.config.max_position_embeddings)
        tokenizer, use_spm = _tokenizer(spm_model_file or runner.spm_model_file, vocab_file,
                                        options["do_lower_case"], export_dir)
        return cls(runner, tokenizer, use_spm, **options)

    with resolve_source(source) as resolved:
        config = config if config is not None else resolved.config_file
        if config is None:
            raise InputError(f"No config for `{source}`: {resolved.config_note or 'no albert_config.json found'}. "
                             "Pass `config=`.")
        config = as_config(config)
        # The tokenizer reads its model into memory: a source's temporary directory may go afterwards.
        tokenizer, use_spm = _tokenizer(spm_model_file or resolved.spm_model_file,
                                        vocab_file or (None if resolved.spm_model_file else resolved.vocab_file),
                                        do_lower_case, source)
        if use_spm:
            tokenization.check_spm_vocab_size(tokenizer.sp_model_proto, config.vocab_size,
                                              spm_model_file or resolved.spm_model_file, "the source's config")
        model = _keras_model(task, resolved, config, options)
    default_lengths(cls, options, config.max_position_embeddings)
    return cls(_KerasRunner(model), tokenizer, use_spm, **options)
