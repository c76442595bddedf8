"""SavedModel export for TF Serving: token-id, serialized `tf.Example` and raw-text signatures.

`export_saved_model(model, export_dir, ...)` writes `<export_dir>/<version>/`, the layout TF Serving watches,
for any model of this package: `AlbertModel` (encoder), `AlbertPretrainer`, `AlbertClassifier`,
`AlbertSquadV1`, `AlbertSquadV2` and `AlbertRace`. Every export has three signatures:

* `serving_default`: int32 `input_ids`, `input_mask`, `segment_ids` `[batch, seq]` of any `seq` up to the
  model's `max_position_embeddings` (`[batch, 4, seq]` for RACE;
  plus `mlm_positions` for the pretrainer, as the original TF-Hub `mlm` signature) -> the model's named
  outputs (the names of the original `export_to_tfhub.py` modules). SQuAD v2 derives `p_mask` from
  `input_mask` and `segment_ids`.
* `serve_examples`: a `[batch]` string tensor `examples` of serialized `tf.Example`s with the original TFRecord
  feature names and lengths (int64 `[max_seq_length]`), as the original `run_classifier.py --export_dir`.
* `serve_text`: raw UTF-8 strings (`text_a`, `text_b`; SQuAD `question`, `context`; RACE `article`,
  `question`, `options [batch, 4]`) normalised, SentencePiece-tokenised (tensorflow-text ops, through
  `albert_tf.text.ops`), truncated and packed in the graph exactly like the Python pipeline (the original
  `tokenization.py`, `classifier_utils.py`, `squad_utils.py`, `race_utils.py`), then cut to the batch's longest
  text rounded up to a multiple of 8 (`albert_tf.data.lengths.cut_to_longest`): the outputs with a sequence
  axis have that length, not `max_seq_length`. It needs the tensorflow-text
  ops in the process that loads the model (`import tensorflow_text`).

plus `tokenization_info` (no inputs: the path of the SentencePiece asset and `do_lower_case`, as the TF-Hub
module). The SentencePiece model and `albert_config.json` are saved as assets, and
`assets.extra/albert_export.json` (`albert_tf.export.metadata`) says what the export is: its model kind, lengths,
casing and signatures, which the pipelines read.

What differs between model classes lives in one `ServingSpec` per class (`albert_tf.serving_spec`), declared by its
model kind next to the model class (`albert_tf.registry`; `serving_spec(model)` finds it by class): its token
inputs, how it is called, its named outputs, its `tf.Example` features (from `albert_tf.data.features`), its
raw-text inputs and packing, and its argument checks. Everything else is shared.

Why `tf.Module` + `tf.saved_model.save` rather than `keras.export.ExportArchive`: the export needs string-input
signatures backed by a tensorflow-text resource, named assets, and a `tokenization_info` function; a plain
`tf.Module` holds all of these as attributes with no special casing, and `tf.saved_model.save` is what TF
Serving reads. The module tracks the list of the `tf.Variable`s behind the Keras model's variables
(`backing_variables`): a Keras 3 model kept as an attribute of a `tf.Module` leaves the variables of nested
layer lists untracked, and tracking the Keras 3 wrappers saves each variable twice, which TF Serving's session
loader cannot run. Every signature is a `tf.function` with an explicit
`input_signature`, so int32 inputs stay int32 and a wrong dtype or rank is rejected by the signature.
"""

import contextlib
import inspect
import os
import re
import shutil
import tempfile

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.models.lora import merged_copy
from albert_tf import registry
from albert_tf.text import modes as text_modes
from albert_tf.text import ops as text_ops
from albert_tf.text import tokenization
from albert_tf.export import metadata as metadata_lib
from albert_tf.export import warmup as warmup_lib
from albert_tf.checkpoints import load_pretrained, resolve_source
from albert_tf.config import TOKEN_INPUTS, check_max_seq_length
from albert_tf.data import lengths as lengths_lib
from albert_tf.errors import InputError, check_export_backend
from albert_tf.fileio import check_directory
from albert_tf.models.albert_model import as_config
from albert_tf.serving_spec import string_specs

SERVING_DEFAULT = "serving_default"
SERVE_EXAMPLES = "serve_examples"
SERVE_TEXT = "serve_text"
# The packed features with a sequence axis (last), cut by `serve_text` to the batch's longest text.
SEQUENCE_FEATURES = TOKEN_INPUTS + ("p_mask",)
TOKENIZATION_INFO = "tokenization_info"


# --- Serving specs: one per model kind, declared with its model class (`albert_tf.registry`) ---------------

def model_kinds():
    """The names of the registered model kinds that have a serving spec (what `export_from_checkpoint` exports)."""
    return tuple(kind.name for kind in registry.kinds() if kind.serving_spec is not None)


def serving_spec(model):
    """The `ServingSpec` of `model`, looked up by its class (or the nearest base class that has one)."""
    kind = registry.kind_of(model)
    if kind is None or kind.serving_spec is None:
        classes = [kind.model_class.__name__ for kind in registry.kinds() if kind.serving_spec is not None]
        raise TypeError(f"`model` must be an {', '.join(classes[:-1])} or {classes[-1]} (a registered model "
                        f"kind). Received: {type(model).__name__}.")
    return kind.serving_spec


def _spec_for_kind(kind):
    if kind not in model_kinds():
        raise InputError(f"`model` must be one of {', '.join(model_kinds())}. Received: `model={kind!r}`.")
    return registry.get(kind).serving_spec


def model_kind(model):
    """The export kind of `model` (one of `model_kinds()`), from its class."""
    return serving_spec(model).kind


def example_feature_spec(kind, max_seq_length, **lengths):
    """`{name: FixedLenFeature}` parsed by `serve_examples` for a model kind (the original TFRecord schemas of
    `create_pretraining_data.py`, `classifier_utils.py`, `squad_utils.py`, `race_utils.py`); `lengths`: the
    text modes' lengths (the pretraining records' `max_predictions_per_seq`), defaults for those not given."""
    spec = _spec_for_kind(kind)
    return spec.example_spec(max_seq_length, text_modes.resolve_lengths(lengths, max_seq_length, shrink=False))


def text_mode(spec):
    """The text mode that the model kind of the serving spec `spec` packs raw text with."""
    return registry.get(spec.kind).text_mode or text_modes.TEXT


def kind_lengths(spec, lengths):
    """`{name: value}` of the lengths (`lengths`: `text_modes.resolve_lengths`) that the text mode of `spec`'s
    kind takes: what an export of the kind records (`max_query_length` of a SQuAD model, ...)."""
    return {length.name: lengths[length.name] for length in text_mode(spec).lengths}


# --- Shared pieces of the signatures ------------------------------------------------------------------------


def _check_features(features, max_position_embeddings, vocab_size):
    """Graph-side checks the signature's dtype/rank check cannot do: equal shapes, length limit, id range."""
    ids = features["input_ids"]
    checks = [tf.debugging.assert_non_negative(ids, message="`input_ids` must be non-negative"),
              tf.debugging.assert_less(ids, vocab_size, message=f"`input_ids` must be < vocab_size={vocab_size}")]
    for name in ("input_mask", "segment_ids", "p_mask"):
        if name in features:
            checks.append(tf.debugging.assert_equal(
                tf.shape(features[name]), tf.shape(ids),
                message=f"`{name}` must have the shape of `input_ids`"))
    checks.append(tf.debugging.assert_less_equal(
        tf.shape(ids)[-1], max_position_embeddings,
        message=f"The sequence length must be at most max_position_embeddings={max_position_embeddings}"))
    if "mlm_positions" in features:
        checks.append(tf.debugging.assert_equal(
            tf.shape(features["mlm_positions"])[0], tf.shape(ids)[0],
            message="`mlm_positions` must have the batch size of `input_ids`"))
    with tf.control_dependencies(checks):
        return {name: tf.identity(t) for name, t in features.items()}


def backing_variables(model):
    """The `tf.Variable`s behind `model.variables` (Keras 3 wraps each in a `keras.Variable`)."""
    return [getattr(v, "value", v) for v in model.variables]


def run_model(model, spec, features, threshold=None):
    """Calls `model` (inference mode) on int32 serving features and returns the named serving outputs."""
    return spec.outputs(model(spec.model_inputs(features), training=False), threshold)


# --- The exported module ----------------------------------------------------------------------------------


class _ServingModule(tf.Module):
    """What is saved: the model's variables, the assets, the text pipeline and the signature functions."""

    def __init__(self, model, spec, config_asset, spm_asset, text_pipeline, do_lower_case, max_seq_length,
                 lengths, threshold):
        super().__init__(name="albert_serving")
        # The backing `tf.Variable`s, not the Keras 3 wrappers: a tracked wrapper saves a second copy of its
        # variable, so the session loader of TF Serving restores one set while the signatures read the other,
        # uninitialized ("Could not find variable ..."; keras-team/keras#20095). Not the Keras model object
        # either: its nested layer lists leave variables untracked.
        self.model_variables = backing_variables(model)
        self.config_file = config_asset
        self.vocab_file = spm_asset
        self.text_pipeline = text_pipeline
        max_positions = int(model.config.max_position_embeddings)
        vocab_size = int(model.config.vocab_size)

        def serve_tokens(**features):
            return run_model(model, spec, _check_features(features, max_positions, vocab_size), threshold)

        self.serve_tokens = signature_fn(serve_tokens, spec.token_specs())

        def serve_examples(examples):
            parsed = tf.io.parse_example(examples, spec.example_spec(max_seq_length, lengths))
            features, passthrough = spec.example_features(parsed, max_seq_length)
            outputs = run_model(model, spec, features, threshold)
            outputs.update(passthrough)
            return outputs

        self.serve_examples = signature_fn(serve_examples, string_specs(("examples",)))

        if text_pipeline is not None:
            def serve_text(**texts):
                texts = _same_rows(texts)
                # Cut to the batch's longest text (rounded up to a multiple of 8): short text runs short.
                features = lengths_lib.cut_to_longest(spec.text_features(self.text_pipeline, texts),
                                                      SEQUENCE_FEATURES, max_seq_length)
                return spec.text_outputs(run_model(model, spec, features, threshold), features)

            self.serve_text = signature_fn(serve_text, spec.text_specs())

        lower = tf.constant(bool(do_lower_case))

        def tokenization_info():
            vocab = self.vocab_file.asset_path if self.vocab_file is not None else tf.constant("")
            return {"vocab_file": vocab, "do_lower_case": lower}

        self.tokenization_info = tf.function(tokenization_info, input_signature=[])

    def signatures(self):
        signatures = {SERVING_DEFAULT: self.serve_tokens, SERVE_EXAMPLES: self.serve_examples,
                      TOKENIZATION_INFO: self.tokenization_info}
        if self.text_pipeline is not None:
            signatures[SERVE_TEXT] = self.serve_text
        return signatures


def signature_fn(fn, specs):
    """A `tf.function` with `input_signature=specs.values()` calling `fn(**{name: tensor})`.

    A loaded signature checks the dtype of its inputs but not their shape, so each input first goes through
    `tf.ensure_shape`: a tensor of the wrong rank fails right there with "Shape of tensor input_ids [3] is not
    compatible with expected shape [?,?]", not deep in the graph.
    """
    names = list(specs)

    def wrapper(*args):
        return fn(**{name: tf.ensure_shape(arg, specs[name].shape, name=f"check_{name}")
                     for name, arg in zip(names, args)})

    # Keyword names of the signature (TF Serving's input keys) are these parameter names.
    wrapper.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    wrapper.__name__ = fn.__name__
    return tf.function(wrapper, input_signature=list(specs.values()))


# --- Public API -------------------------------------------------------------------------------------------


def next_version(export_dir):
    """1 + the largest integer-named subdirectory of `export_dir` (1 when there is none)."""
    if not tf.io.gfile.isdir(export_dir):
        return 1
    versions = [int(name.rstrip("/")) for name in tf.io.gfile.listdir(export_dir)
                if re.fullmatch(r"\d+/?", name)]
    return max(versions, default=0) + 1


def export_saved_model(model, export_dir, spm_model_file=None, do_lower_case=True, max_seq_length=512,
                       version=None, config=None, threshold=None, text_signature=True, warmup=None, **lengths):
    """Exports `model` as a TF Serving SavedModel in `<export_dir>/<version>/`.

    Args:
        model: a built `AlbertModel`, `AlbertPretrainer`, `AlbertClassifier`, `AlbertSquadV1`,
            `AlbertSquadV2` or `AlbertRace` (the kind is read from the class).
        export_dir: str, the model base directory TF Serving watches.
        spm_model_file: optional str, the SentencePiece `.model`; saved as an asset and needed for
            `serve_text` (without it, only the token-id and `tf.Example` signatures are exported).
        do_lower_case: bool, lower-case raw text (True for all English releases).
        max_seq_length: int, L: the length of the `tf.Example` features and of the packed raw text.
        version: optional int, the version subdirectory; default: one more than the largest existing.
        config: optional `AlbertConfig`/dict/JSON path saved as the `albert_config.json` asset; default: the
            model's config.
        threshold: optional float, a constant output `threshold` of the classifier signatures.
        text_signature: bool; False leaves out `serve_text` (the SentencePiece model is still an asset), so the
            export uses core TensorFlow ops only and loads in servers without the tensorflow-text ops (and in
            `saved_model_cli run` or a C++/Java program linking plain TensorFlow): the token-ids-only export.
        warmup: whether to write TF Serving's warm-up requests (`assets.extra/tf_serving_warmup_requests`, one
            `PredictionLog` per signature; `albert_tf.export.warmup`). None: when tensorflow-serving-api is installed
            (a warning otherwise); True: always (an error without the package); False: never.
        **lengths: the packing lengths of the text modes (`albert_tf.text.modes.lengths()`, with the original
            flags' names and defaults): `max_predictions_per_seq` (the pretraining `tf.Example`s'
            `masked_lm_positions`), `max_query_length` (SQuAD `serve_text`: questions keep their first tokens),
            `max_qa_length` (RACE `serve_text`: question+option keep their last tokens). The export records those
            of the model's kind (`assets.extra/albert_export.json`).

    Returns:
        str, the path of the written version directory.
    """
    check_export_backend()
    model = merged_copy(model)   # LoRA adapters merged into the kernels (`albert_tf.models.lora`)
    spec = serving_spec(model)
    warmup = check_warmup(warmup)
    version_given = version
    final_dir, version, lengths = _check_export_arguments(model, spec, export_dir, spm_model_file, max_seq_length,
                                                          version, threshold, lengths)
    config = as_config(config) if config is not None else model.config
    proto = None
    if spm_model_file is not None:
        with tf.io.gfile.GFile(spm_model_file, "rb") as f:
            proto = f.read()
        tokenization.check_spm_vocab_size(proto, model.config.vocab_size, spm_model_file, "the model's config")
    # Everything that can reject the arguments runs before anything is written.
    pipeline = None
    if proto is not None and text_signature:
        pipeline = text_ops.TextPipeline(proto, do_lower_case, max_seq_length, model.config.vocab_size, **lengths)
    tf.io.gfile.makedirs(export_dir)
    staging = tempfile.mkdtemp(prefix="albert_export_")  # The asset files, copied into the export by save().
    tmp_dir = os.path.join(export_dir, f".tmp-{int(version)}-{os.getpid()}")
    try:
        config_path = os.path.join(staging, "albert_config.json")
        config.to_json_file(config_path)
        spm_asset = None
        if proto is not None:
            spm_copy = os.path.join(staging, os.path.basename(spm_model_file))
            with open(spm_copy, "wb") as f:
                f.write(proto)
            spm_asset = tf.saved_model.Asset(spm_copy)
        module = _ServingModule(model, spec, tf.saved_model.Asset(config_path), spm_asset, pipeline,
                                do_lower_case, int(max_seq_length), lengths, threshold)
        logging.info("Exporting %s (%s) to %s", type(model).__name__, spec.kind, final_dir)
        requests = None
        if warmup:
            requests = _warmup_requests(spec, module.signatures(), int(max_seq_length), lengths)
        metadata = _metadata(model, spec, module, spm_model_file if proto is not None else None, do_lower_case,
                             max_seq_length, lengths)
        final_dir = save_then_rename(module, tmp_dir, final_dir, os.path.basename(os.path.normpath(export_dir)),
                                      requests, metadata, next_free=version_given is None)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    logging.info("Exported signatures %s to %s", sorted(module.signatures()), final_dir)
    return final_dir


def _same_rows(texts):
    """`texts` (`serve_text`'s string inputs) behind a check, in the graph, that they have one row per example:
    a request whose inputs differ in length fails with a message naming the two inputs (TF Serving returns it
    to the client), not inside the tokenizer's ragged ops."""
    names = sorted(texts)
    checks = [tf.debugging.assert_equal(
        tf.shape(texts[name])[0], tf.shape(texts[names[0]])[0],
        message=f"serve_text: `{name}` and `{names[0]}` must have one row per example; they differ in length")
        for name in names[1:]]
    with tf.control_dependencies(checks):
        return {name: tf.identity(value) for name, value in texts.items()}


def _check_export_arguments(model, spec, export_dir, spm_model_file, max_seq_length, version, threshold, lengths):
    """Raises on arguments `export_saved_model` cannot use; returns `(version directory, version, lengths)`
    (every text mode's length: `lengths` and the defaults)."""
    check_directory(export_dir, "export_dir")
    if not isinstance(max_seq_length, (int, np.integer)) or max_seq_length < 3:
        raise InputError(f"`max_seq_length` must be an int >= 3. Received: `max_seq_length={max_seq_length!r}`.")
    check_max_seq_length(max_seq_length, model.config.max_position_embeddings)
    lengths = text_modes.resolve_lengths(lengths, int(max_seq_length), shrink=False)
    text_modes.check_lengths(text_mode(spec), int(max_seq_length), lengths)
    spec.check_arguments(model, max_seq_length, threshold)
    if spm_model_file is not None and not tf.io.gfile.exists(spm_model_file):
        raise FileNotFoundError(f"`spm_model_file` not found: `{spm_model_file}`.")
    if version is None:
        version = next_version(export_dir)
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or version < 0:
        raise InputError(f"`version` must be a non-negative int. Received: `version={version!r}`.")
    final_dir = os.path.join(export_dir, str(int(version)))
    if tf.io.gfile.exists(final_dir):
        raise InputError(f"`{final_dir}` already exists; pass another `version` or none for the next one.")
    return final_dir, version, lengths


def check_warmup(warmup):
    """The `warmup` argument resolved to a bool (None: whether tensorflow-serving-api is installed)."""
    if warmup is None:
        if warmup_lib.serving_apis() is None:
            logging.warning("tensorflow-serving-api is not installed: exporting without TF Serving warm-up "
                            "requests (pip install \"albert_tf[serving]\" writes them).")
            return False
        return True
    if warmup:
        warmup_lib.require_serving_apis()
    return bool(warmup)


def _warmup_requests(spec, signatures, max_seq_length, lengths):
    """`{signature: {input: value}}`: one warm-up request per signature (`albert_tf.export.warmup`)."""
    examples = warmup_lib.example_bytes(spec.example_spec(max_seq_length, lengths))
    requests = {}
    for name, fn in signatures.items():
        specs = {arg.name: arg for arg in fn.input_signature}
        requests[name] = warmup_lib.signature_inputs(specs, max_seq_length, examples)
    return requests


def _metadata(model, spec, module, spm_model_file, do_lower_case, max_seq_length, lengths):
    """The content of `assets.extra/albert_export.json` (`albert_tf.export.metadata`)."""
    facts = {"kind": spec.kind, "model_class": type(model).__name__, "max_seq_length": int(max_seq_length),
             "do_lower_case": bool(do_lower_case), "signatures": sorted(module.signatures()),
             "config_file": "assets/albert_config.json",
             "spm_model_file": f"assets/{os.path.basename(spm_model_file)}" if spm_model_file else None}
    facts.update(kind_lengths(spec, lengths))
    facts.update(spec.export_facts(model))
    return facts


def save_then_rename(module, tmp_dir, final_dir, model_name, warmup_requests=None, metadata=None, next_free=False):
    """`tf.saved_model.save` (the warm-up requests and `metadata`) into `tmp_dir`, then a rename to `final_dir`
    (nothing left behind on errors); returns the version directory written.

    When another export took `final_dir` meanwhile (two exports into one directory at once), the export goes to
    the next free version with `next_free` (the version was not given), else it is an `InputError`."""
    try:
        if tf.io.gfile.exists(tmp_dir):
            tf.io.gfile.rmtree(tmp_dir)
        tf.saved_model.save(module, tmp_dir, signatures=module.signatures())
        if warmup_requests:
            warmup_lib.write_warmup_requests(tmp_dir, model_name, warmup_requests)
        if metadata is not None:
            metadata_lib.write(tmp_dir, metadata)
        final_dir = _rename_to_free_version(tmp_dir, final_dir, next_free)
    except BaseException:
        if tf.io.gfile.exists(tmp_dir):
            tf.io.gfile.rmtree(tmp_dir)
        raise
    return final_dir


def _rename_to_free_version(tmp_dir, final_dir, next_free):
    export_dir = os.path.dirname(final_dir)
    for _ in range(100):
        try:
            tf.io.gfile.rename(tmp_dir, final_dir)
            return final_dir
        except (tf.errors.OpError, OSError):
            if not tf.io.gfile.exists(final_dir):
                raise
            if not next_free:
                raise InputError(f"`{final_dir}` was written by another export meanwhile; pass another `version` "
                                 "or none for the next one.") from None
            taken, final_dir = final_dir, os.path.join(export_dir, str(next_version(export_dir)))
            logging.warning("%s was written by another export meanwhile: exporting to %s.", taken, final_dir)
    raise InputError(f"No free version in `{export_dir}`: other exports write there at the same time.")


def export_from_checkpoint(input_path, export_dir, model="encoder", num_labels=2, albert_config_file=None,
                           spm_model_file=None, **export_kwargs):
    """Loads a model from any checkpoint source and exports it (the library side of `albert-export`).

    Args:
        input_path: str, anything `albert_tf.checkpoints.resolve_source` reads: a Google TF1 checkpoint
            prefix, release directory or `.tar.gz`, a TF-Hub TF1 module directory, or one of our checkpoints.
        export_dir: str, base directory; the export goes to `<export_dir>/<version>/`.
        model: str, one of `model_kinds()`.
        num_labels: int, labels of a kind with a `labels_variable` (the classifier: 1 = regression); ignored by
            the other kinds.
        albert_config_file: optional str, the config when the source has none (our TF2 checkpoints).
        spm_model_file: optional str; default: the SentencePiece model found with the source (without one,
            `serve_text` is not exported).
        **export_kwargs: more `export_saved_model` arguments (`max_seq_length`, `do_lower_case`, ...).

    Returns:
        str, the version directory written.
    """
    check_export_backend()
    _spec_for_kind(model)                     # Refuses a kind without a serving spec.
    with model_from_checkpoint(input_path, model, num_labels, albert_config_file, spm_model_file) as loaded:
        net, config, spm_model_file = loaded
        if spm_model_file is None:
            logging.warning("No SentencePiece model given or found with `%s`: exporting without `serve_text`.",
                            input_path)
        return export_saved_model(net, export_dir, spm_model_file=spm_model_file, config=config,
                                  **export_kwargs)


@contextlib.contextmanager
def model_from_checkpoint(input_path, model, num_labels=2, albert_config_file=None, spm_model_file=None):
    """Yields `(net, config, spm_model_file)`: the `model` kind's Keras model with all its weights (heads
    included) from the checkpoint source `input_path`, its config, and the SentencePiece model (given, else the
    source's, else None), checked against the config's `vocab_size`. The source stays open in the block (a
    `.tar.gz` is extracted for it), so the export can copy its files."""
    kind = registry.get(model)
    with resolve_source(input_path) as source:
        config = albert_config_file or source.config_file
        if config is None:
            raise InputError(f"No `albert_config.json` found with `{input_path}`; pass `albert_config_file`.")
        spm_model_file = spm_model_file or source.spm_model_file
        if spm_model_file is not None:
            # Checked before the weights load: a tokenizer of another model would serve wrong ids.
            if not tf.io.gfile.exists(spm_model_file):
                raise InputError(f"`spm_model_file` not found: `{spm_model_file}`.")
            tokenization.check_spm_vocab_size(spm_model_file, as_config(config).vocab_size, spm_model_file,
                                              config if isinstance(config, str) else "the source's config")
        # Heads must come from the checkpoint: an export with a freshly initialised head would serve noise.
        net = load_pretrained(kind.model_class, source.checkpoint_prefix, config=config,
                              allow_missing_heads=False, **kind.model_kwargs(num_labels))
        yield net, config, spm_model_file

