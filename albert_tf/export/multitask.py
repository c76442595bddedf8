"""One SavedModel for several fine-tuned tasks that share one encoder: `export_multitask` (`albert-export --tasks`).

Runs fine-tuned with `--lora_rank` (Keras' LoRA: the encoder frozen, rank-r adapters trained) or with
`--freeze_encoder` (the head alone trained) from the same initial weights differ only in their adapters, the
biases of the adapted layers and their heads. The export holds the encoder's weights once, each task's own
weights, the SentencePiece model once and every task's label names (`assets/labels_<task>.txt`), with:

* per task `NAME`, the signatures of that run's own single-task export (`albert_tf.export.saved_model`) under the
  task's name: `NAME` (token ids, as `serving_default`), `NAME_examples` (as `serve_examples`) and `NAME_text`
  (as `serve_text`), with the same inputs and outputs;
* `serve_all`: raw text once (`text`, plus `text_b` when a task packs sentence pairs) -> every task's `serve_text`
  outputs, named `NAME/output`, for the tasks whose raw-text inputs are one text (or a pair of texts; the others
  have their own signatures). The frozen-encoder tasks that pack text alike read one encoder pass; each LoRA
  task runs its adapted pass;
* `tokenization_info`, TF Serving's warm-up requests (one per signature) and `assets.extra/albert_export.json`
  (kind `multitask`, the tasks with their kinds, labels, lengths and signatures).

Each run's directory holds `albert_run.json` (`albert_tf.training.run_record`, written by the runners when they
train) and its checkpoints (`model.ckpt-best`, else the latest). Every run's frozen encoder weights must be
bit for bit those of the others (they started from the same weights); full fine-tunes are refused.

How a task shares the encoder: its Keras model (adapters enabled for a LoRA run) is called with `stateless_call`,
its frozen encoder weights replaced by the shared encoder's variables and its own (adapters, biases, head) read from
its variables, so the SavedModel holds one copy of the encoder. The call is one traced function per model
structure, taking the weights as arguments (`_Forwards`), and the raw-text packing one traced function per text
pipeline (`_Packings`): every signature calls them, so the graph of the encoder is stored once per structure.
In `serve_all` the frozen-encoder tasks' models are built on the shared encoder itself (the task models'
`encoder=` argument, `SharedEncoder`), whose one pass their heads read.
"""

import contextlib
import dataclasses
import json
import os
import re
import shutil
import tempfile

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import registry
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.data import lengths as lengths_lib
from albert_tf.errors import InputError, check_export_backend
from albert_tf.export import saved_model as single
from albert_tf.export import warmup as warmup_lib
from albert_tf.models.albert_model import AlbertModel, as_config
from albert_tf.serving_spec import string_specs
from albert_tf.text import modes as text_modes
from albert_tf.text import ops as text_ops
from albert_tf.text import tokenization
from albert_tf.training import loop, run_record

KIND = "multitask"
SERVE_ALL = "serve_all"
EXAMPLES_SUFFIX = "_examples"
TEXT_SUFFIX = "_text"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
_RESERVED = (SERVE_ALL, single.SERVING_DEFAULT, single.TOKENIZATION_INFO)


def signature_names(task):
    """`{single-task signature: multi-task signature}` of the task named `task`."""
    return {single.SERVING_DEFAULT: task, single.SERVE_EXAMPLES: task + EXAMPLES_SUFFIX,
            single.SERVE_TEXT: task + TEXT_SUFFIX}


def parse_tasks(tasks):
    """`[(name, run_dir)]` from `"NAME=RUN_DIR,..."`, a list of `"NAME=RUN_DIR"` strings, a dict or pairs; an
    `InputError` for a malformed entry, a bad or reserved name, or a name given twice."""
    if isinstance(tasks, str):
        tasks = [entry for entry in tasks.split(",") if entry.strip()]
    if isinstance(tasks, dict):
        tasks = list(tasks.items())
    pairs = []
    for entry in tasks or ():
        if isinstance(entry, str):
            name, sep, run_dir = entry.partition("=")
            if not sep or not run_dir.strip():
                raise InputError(f"`tasks`: expected NAME=RUN_DIR, got {entry!r}.")
            entry = (name.strip(), run_dir.strip())
        name, run_dir = entry
        if not _NAME.match(str(name)):
            raise InputError(f"`tasks`: task name {name!r} must be a letter then letters, digits or _ (it names the "
                             "task's signatures).")
        if name in _RESERVED:
            raise InputError(f"`tasks`: task name {name!r} is the name of a signature of every multi-task export.")
        if any(name == other for other, _ in pairs):
            raise InputError(f"`tasks`: duplicate task name `{name}` ({dict(pairs)[name]} and {run_dir}); each task "
                             "needs a name of its own.")
        pairs.append((str(name), str(run_dir)))
    if not pairs:
        raise InputError("`tasks` names no task: pass NAME=RUN_DIR,... (runs fine-tuned with --lora_rank or "
                         "--freeze_encoder from the same initial weights).")
    signatures = {}
    for name, _ in pairs:
        for signature in signature_names(name).values():
            if signature in signatures or signature in _RESERVED:
                raise InputError(f"`tasks`: the signature `{signature}` of task `{name}` is also one of task "
                                 f"`{signatures.get(signature, signature)}`; rename one of them.")
            signatures[signature] = name
    return pairs


@dataclasses.dataclass
class _Run:
    name: str
    run_dir: str
    record: dict
    kind: object
    mode: str
    prefix: str
    model: object

    @property
    def spec(self):
        return self.kind.serving_spec

    def frozen_weights(self):
        """`{path: variable}` of the encoder weights this run did not train."""
        return {v.path: v for v in self.model.encoder.weights if not v.trainable}


def _inference_checkpoint(run_dir):
    best = os.path.join(run_dir, loop.BEST_CHECKPOINT_NAME)
    if tf.io.gfile.exists(best + ".index"):
        return best
    checkpoints = loop.list_checkpoints(run_dir)
    return checkpoints[-1][1] if checkpoints else None


def _load_run(name, run_dir):
    """The run of task `name` in `run_dir`: its record checked, its model rebuilt and restored."""
    where = f"Task `{name}` (`{run_dir}`)"
    try:
        record = run_record.read(run_dir)
    except InputError as e:
        raise InputError(f"{where}: {e}") from None
    mode = run_record.encoder_mode(record)
    if mode == "full":
        raise InputError(f"{where} is a full fine-tune (no --lora_rank, no --freeze_encoder): its encoder weights "
                         "are its own, so it cannot share one encoder; re-train it with --lora_rank or "
                         "--freeze_encoder, or export it alone.")
    kind = registry.get(record.get("kind")) if record.get("kind") in {k.name for k in registry.kinds()} else None
    if kind is None or not kind.heads or kind.serving_spec is None:
        raise InputError(f"{where} has no task head to serve (model kind {record.get('kind')!r}): a multi-task "
                         "export holds fine-tuned tasks.")
    prefix = _inference_checkpoint(run_dir)
    if prefix is None:
        raise InputError(f"{where} has no checkpoint (model.ckpt-best or model.ckpt-<step>).")
    model = kind.model_class.from_config(dict(record["model_config"]))
    if mode == "lora":
        model.enable_lora(int(record["lora_rank"]), target_names=record.get("lora_targets") or None)
    else:
        model.encoder.trainable = False
    try:
        restore_checkpoint(model, prefix, allow_missing_heads=False)
    except InputError as e:
        raise InputError(f"{where}: {str(e).splitlines()[0]}") from None
    return _Run(name, run_dir, record, kind, mode, prefix, model)


def _check_same_encoder(runs):
    """`(config, {path: value})`: the encoder config of every run and its frozen weights, the same bit for bit in
    every run that froze them; an `InputError` naming two runs that differ."""
    first = runs[0]
    config = first.record["model_config"]["config"]
    for run in runs[1:]:
        if run.record["model_config"]["config"] != config:
            differ = sorted(key for key in set(config) | set(run.record["model_config"]["config"])
                            if config.get(key) != run.record["model_config"]["config"].get(key))
            raise InputError(f"Tasks `{first.name}` (`{first.run_dir}`) and `{run.name}` (`{run.run_dir}`) have "
                             f"different encoder configs ({', '.join(differ)}): a multi-task export needs runs "
                             "fine-tuned from the same encoder.")
    reference = {}
    for run in runs:
        for path, variable in run.frozen_weights().items():
            value = variable.numpy()
            if path not in reference:
                reference[path] = (run, value)
                continue
            other, held = reference[path]
            if held.dtype != value.dtype or held.shape != value.shape or held.tobytes() != value.tobytes():
                raise InputError(f"Tasks `{other.name}` (`{other.run_dir}`) and `{run.name}` (`{run.run_dir}`) do "
                                 f"not start from the same encoder weights (`{path}` differs): a multi-task export "
                                 "needs runs fine-tuned from one initial checkpoint.")
    return config, {path: value for path, (_, value) in reference.items()}


def _same_value(runs, field, what):
    values = {}
    for run in runs:
        values.setdefault(run.record.get(field), run)
    if len(values) > 1:
        (a, run_a), (b, run_b) = list(values.items())[:2]
        raise InputError(f"Tasks `{run_a.name}` and `{run_b.name}` were trained with different {what} ({a} and "
                         f"{b}); one export holds one tokenizer.")
    return next(iter(values))


def _sentencepiece(runs, spm_model_file):
    """`(path, bytes)` of the SentencePiece model: `spm_model_file`, else the runs' (the same bytes in every run,
    else an `InputError` naming two runs)."""
    paths = [spm_model_file] if spm_model_file else [run.record.get("spm_model_file") for run in runs]
    found = {}
    for run, path in zip(runs, paths):
        if not path or not tf.io.gfile.exists(path):
            raise InputError(f"The SentencePiece model `{path}` of task `{run.name}` is not found: pass "
                             "`spm_model_file`.")
        if path not in found:
            with tf.io.gfile.GFile(path, "rb") as f:
                found[path] = (run, f.read())
    (first, proto), *others = found.values()
    for other, data in others:
        if data != proto:
            raise InputError(f"Tasks `{first.name}` and `{other.name}` were trained with different SentencePiece "
                             "models; one export holds one tokenizer.")
    return next(iter(found)), proto


class _Reuse:
    """Within `active()`, a call of the shared encoder on the input tensors of an earlier call (and the same
    keyword arguments) returns that call's outputs: `serve_all` runs the encoder once for the frozen-encoder
    tasks that pack text alike."""

    def __init__(self):
        self.calls = None
        self.hits = 0

    @contextlib.contextmanager
    def active(self):
        self.calls = []
        try:
            yield
        finally:
            self.calls = None

    def call(self, fn, inputs, kwargs):
        if self.calls is None or not isinstance(inputs, dict):
            return fn()
        key = (tuple(sorted((name, id(value)) for name, value in inputs.items())), repr(sorted(kwargs.items())))
        for held_key, _, outputs in self.calls:
            if held_key == key:
                self.hits += 1
                return outputs
        outputs = fn()
        self.calls.append((key, dict(inputs), outputs))   # The inputs held: their ids stay theirs.
        return outputs


class SharedEncoder(AlbertModel):
    """The encoder held once by a multi-task export; see `_Reuse` for its calls within `serve_all`."""

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self.reuse = _Reuse()

    def __call__(self, inputs, *args, **kwargs):
        return self.reuse.call(lambda: super(SharedEncoder, self).__call__(inputs, *args, **kwargs), inputs,
                               dict(kwargs, args=args))


class _Forwards:
    """The traced forward passes of an export: one concrete function per model structure (class, config, adapters)
    and kind of features, taking the features and the weights as arguments, so that the graph of the encoder is
    stored once per structure, not once per task and signature."""

    def __init__(self):
        self.templates = {}     # structure -> the first model of that structure
        self.functions = {}

    def template(self, structure, model):
        template = self.templates.setdefault(structure, model)
        if [tuple(v.shape) for v in template.variables] != [tuple(v.shape) for v in model.variables]:
            raise InputError(f"{type(model).__name__}: its weights differ in shape from another task's of the same "
                             "config.")
        return template

    def __call__(self, structure, features, trainable, non_trainable):
        template = self.templates[structure]
        key = (structure, tuple(sorted((name, t.dtype.name, t.shape.rank) for name, t in features.items())))
        function = self.functions.get(key)
        if function is None:
            def forward(features, trainable, non_trainable):
                outputs, _ = template.stateless_call(trainable, non_trainable, features, training=False)
                return outputs

            specs = ({name: tf.TensorSpec([None] * t.shape.rank, t.dtype) for name, t in features.items()},
                     [tf.TensorSpec(t.shape, t.dtype) for t in trainable],
                     [tf.TensorSpec(t.shape, t.dtype) for t in non_trainable])
            function = self.functions[key] = tf.function(forward).get_concrete_function(*specs)
        return function(features, trainable, non_trainable)


class _TaskForward:
    """A task's model called on the shared encoder's weights (`_Forwards`, its model's `stateless_call`): its
    frozen encoder weights read from the shared encoder's variables, its own (a LoRA run's adapters and adapted
    layers' biases, the head) from its variables. `variables` are those the export tracks for it."""

    def __init__(self, model, shared_by_path, forwards, structure):
        self.model, self.config, self.forwards, self.structure = model, model.config, forwards, structure
        forwards.template(structure, model)
        encoder_paths = {id(v): v.path for v in model.encoder.weights}
        self.non_trainable = []
        for v in model.non_trainable_variables:
            path = encoder_paths.get(id(v))
            if path is not None and path in shared_by_path:
                self.non_trainable.append(shared_by_path[path])
            else:
                self.non_trainable.append(v.numpy())    # A constant of the graph (a seed generator's state).
        self.variables = list(model.trainable_variables) + [v for v in self.non_trainable
                                                            if not isinstance(v, np.ndarray)]

    def __call__(self, inputs, training=False):
        del training  # Inference.
        trainable = [tf.convert_to_tensor(v.value) for v in self.model.trainable_variables]
        non_trainable = [tf.constant(v) if isinstance(v, np.ndarray) else tf.convert_to_tensor(v.value)
                         for v in self.non_trainable]
        return self.forwards(self.structure, dict(inputs), trainable, non_trainable)


class _Packings:
    """The traced raw-text packings of an export: one concrete function per (serving spec, text pipeline, inputs),
    called by every signature that packs text so (each task's `NAME_text`, `serve_all`)."""

    def __init__(self):
        self.functions = {}

    def __call__(self, spec, pipeline, texts):
        key = (type(spec), id(pipeline), tuple(sorted(texts)))
        function = self.functions.get(key)
        if function is None:
            def pack_text(texts):
                return spec.text_features(pipeline, texts)

            function = self.functions[key] = tf.function(pack_text).get_concrete_function(
                {name: tf.TensorSpec([None], tf.string) for name in texts})
        return function(dict(texts))


class _SharedPackingSpec:
    """A serving spec whose `text_features` is the export's shared packing (`_Packings`); the rest is the spec's."""

    def __init__(self, spec, packings):
        self.spec, self.packings = spec, packings

    def __getattr__(self, name):
        return getattr(self.spec, name)

    def text_features(self, pipeline, texts):
        return self.packings(self.spec, pipeline, texts)


def _structure(run):
    """What makes two runs' models one traced function: their class, constructor arguments and adapters."""
    config = {key: value for key, value in run.record["model_config"].items() if key != "name"}
    return json.dumps({"class": run.kind.name, "config": config, "mode": run.mode,
                       "lora": [run.record.get("lora_rank"), run.record.get("lora_targets")]},
                      sort_keys=True, default=str)


def _head_weights(model):
    encoder = {id(v) for v in model.encoder.weights}
    return [v for v in model.weights if id(v) not in encoder]


def _frozen_task_model(run, shared):
    """The frozen-encoder task's model built on `shared`, with the run's head weights."""
    arguments = dict(run.record["model_config"])
    for name in ("config", "name", "preprocessor", "quantization", "quantization_config"):
        arguments.pop(name, None)
    model = run.kind.model_class(encoder=shared, **arguments)
    targets, sources = _head_weights(model), _head_weights(run.model)
    if [tuple(v.shape) for v in targets] != [tuple(v.shape) for v in sources]:
        raise InputError(f"Task `{run.name}`: its head's weights do not fit a {type(model).__name__} on the shared "
                         "encoder.")
    for target, source in zip(targets, sources):
        target.assign(source.numpy())
    return model


def _serve_all(shared, all_tasks):
    """`serve_all`'s function: `all_tasks` `[(name, spec, forward, pipeline, input names, threshold)]`, the
    frozen-encoder tasks first; each packing of the text is made once, and the shared encoder runs once per
    packing (`_Reuse`)."""

    def serve_all(**texts):
        outputs, packed, previous = {}, {}, []
        with shared.reuse.active():
            for name, spec, forward, pipeline, names, threshold in all_tasks:
                inputs = {input_name: texts["text"] if input_name in ("text", "text_a") else texts["text_b"]
                          for input_name in names}
                packing = (id(pipeline), type(getattr(spec, "spec", spec)), names)
                if packing not in packed:
                    packed[packing] = lengths_lib.cut_to_longest(spec.text_features(pipeline, inputs),
                                                             single.SEQUENCE_FEATURES, pipeline.max_seq_length)
                features = packed[packing]
                if isinstance(forward, _TaskForward):
                    # The adapted passes one after the other: the activations of one pass at a time (the resident
                    # memory of one model), each pass using every core. (The frozen-encoder tasks share one pass.)
                    with tf.control_dependencies(previous):
                        features = {key: tf.identity(value) for key, value in features.items()}
                task_outputs = spec.text_outputs(
                    single.run_model(forward, spec, features, threshold), features)  # pylint: disable=protected-access
                previous = [value for value in task_outputs.values() if value.dtype != tf.string][:1]
                outputs.update((f"{name}/{key}", value) for key, value in task_outputs.items())
        return outputs

    return serve_all


class _MultiTaskModule(tf.Module):
    """What is saved: the shared encoder's variables, each task's serving module (`saved_model._ServingModule`:
    its signatures and own variables), the assets and `serve_all`."""

    def __init__(self, shared, tasks, config_asset, spm_asset, label_assets, do_lower_case, all_tasks):
        super().__init__(name="albert_multitask")
        self.encoder_variables = single.backing_variables(shared)
        self.tasks = tasks                    # {name: _ServingModule}
        self.config_file = config_asset
        self.vocab_file = spm_asset
        self.label_files = label_assets
        # The heads of the frozen-encoder tasks' models on the shared encoder (serve_all's): small copies.
        self.serve_all_variables = [getattr(v, "value", v) for task in all_tasks if not isinstance(task[2], _TaskForward)
                                    for v in _head_weights(task[2])]
        lower = tf.constant(bool(do_lower_case))

        def tokenization_info():
            return {"vocab_file": self.vocab_file.asset_path, "do_lower_case": lower}

        self.tokenization_info = tf.function(tokenization_info, input_signature=[])
        self.serve_all = None
        if all_tasks:
            pairs = any("text_b" in names for _, _, _, _, names, _ in all_tasks)
            specs = string_specs(("text", "text_b") if pairs else ("text",))
            self.serve_all = single.signature_fn(_serve_all(shared, all_tasks), specs)  # pylint: disable=protected-access

    def signatures(self):
        signatures = {single.TOKENIZATION_INFO: self.tokenization_info}
        for name, module in self.tasks.items():
            names = signature_names(name)
            for single_name, fn in module.signatures().items():
                if single_name in names:
                    signatures[names[single_name]] = fn
        if self.serve_all is not None:
            signatures[SERVE_ALL] = self.serve_all
        return signatures


def _serve_all_inputs(spec):
    """The raw-text input names of `spec` when `serve_all` can feed them (one text, or a pair), else None."""
    names = tuple(spec.text_specs())
    if names in (("text",), ("text_a",), ("text_a", "text_b")):
        return names
    return None


def export_multitask(tasks, export_dir, version=None, warmup=None, spm_model_file=None):
    """Exports fine-tuned runs that share one encoder as one TF Serving SavedModel in `<export_dir>/<version>/`.

    Args:
        tasks: `"NAME=RUN_DIR,..."`, a list of `"NAME=RUN_DIR"`, a dict `{name: run_dir}` or `(name, run_dir)`
            pairs: each run's output directory (trained with `--lora_rank` or `--freeze_encoder` from the same
            initial weights); `NAME` names the task's signatures.
        export_dir: str, the base directory TF Serving watches.
        version: optional int, the version subdirectory; default one more than the largest existing.
        warmup: TF Serving's warm-up requests, as `export_saved_model`'s `warmup`.
        spm_model_file: optional str, the SentencePiece model; default the runs' own (one for all).

    Returns:
        str, the version directory written.
    """
    check_export_backend()
    pairs = parse_tasks(tasks)
    warmup = single.check_warmup(warmup)   # pylint: disable=protected-access
    runs = [_load_run(name, run_dir) for name, run_dir in pairs]
    config, frozen = _check_same_encoder(runs)
    do_lower_case = _same_value(runs, "do_lower_case", "casing (do_lower_case)")
    spm_model_file, proto = _sentencepiece(runs, spm_model_file)
    config = as_config(config)
    tokenization.check_spm_vocab_size(proto, config.vocab_size, spm_model_file, "the runs' config")
    if version is None:
        version = single.next_version(export_dir)
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or version < 0:
        raise InputError(f"`version` must be a non-negative int. Received: `version={version!r}`.")
    final_dir = os.path.join(export_dir, str(int(version)))
    if tf.io.gfile.exists(final_dir):
        raise InputError(f"`{final_dir}` already exists; pass another `version` or none for the next one.")

    shared = _shared_encoder(config, runs, frozen)
    staging = tempfile.mkdtemp(prefix="albert_export_")
    created = not tf.io.gfile.exists(export_dir)
    try:
        assets = _assets(staging, config, spm_model_file, proto, runs)
        module, facts, all_tasks = _module(shared, runs, assets, proto, do_lower_case, config.vocab_size)
        requests = None
        if warmup:
            requests = _warmup_requests(module, runs)
        metadata = {"kind": KIND, "tasks": facts, "task_order": [run.name for run in runs],
                    "do_lower_case": bool(do_lower_case), "signatures": sorted(module.signatures()),
                    "serve_all_tasks": [task[0] for task in all_tasks], "config_file": "assets/albert_config.json",
                    "spm_model_file": f"assets/{os.path.basename(spm_model_file)}"}
        tf.io.gfile.makedirs(export_dir)
        tmp_dir = os.path.join(export_dir, f".tmp-{int(version)}-{os.getpid()}")
        logging.info("Exporting tasks %s to %s", ", ".join(name for name, _ in pairs), final_dir)
        final_dir = single.save_then_rename(   # pylint: disable=protected-access
            module, tmp_dir, final_dir, os.path.basename(os.path.normpath(export_dir)), requests, metadata,
            next_free=version is None)
    except BaseException:
        if created and tf.io.gfile.isdir(export_dir) and not tf.io.gfile.listdir(export_dir):
            tf.io.gfile.rmtree(export_dir)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    logging.info("Exported signatures %s to %s", sorted(module.signatures()), final_dir)
    return final_dir


def _shared_encoder(config, runs, frozen):
    """The `SharedEncoder` of `config` holding the frozen weights `frozen` (`{path: value}`); the weights that
    every run trained (the adapted layers' biases) take the first run's values, which no task reads."""
    shared = SharedEncoder(config)
    shared_by_path = {v.path: v for v in shared.weights}
    for run in runs:
        missing = sorted(set(run.frozen_weights()) - set(shared_by_path))
        if missing:
            raise InputError(f"Task `{run.name}`: encoder weights {missing[:3]} are not an encoder's of its config.")
    fallback = {v.path: v.numpy() for v in runs[0].model.encoder.weights}
    for path, variable in shared_by_path.items():
        variable.assign(frozen[path] if path in frozen else fallback[path])
    return shared


def _assets(staging, config, spm_model_file, proto, runs):
    """`(config asset, SentencePiece asset, {task: labels asset})`, their files written in `staging`."""
    config_path = os.path.join(staging, "albert_config.json")
    config.to_json_file(config_path)
    spm_copy = os.path.join(staging, os.path.basename(spm_model_file))
    with open(spm_copy, "wb") as f:
        f.write(proto)
    label_assets = {}
    for run in runs:
        if run.record.get("labels"):
            path = os.path.join(staging, f"labels_{run.name}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(f"{label}\n" for label in run.record["labels"]))
            label_assets[run.name] = tf.saved_model.Asset(path)
    return tf.saved_model.Asset(config_path), tf.saved_model.Asset(spm_copy), label_assets


def _module(shared, runs, assets, proto, do_lower_case, vocab_size):
    """`(_MultiTaskModule, {task: metadata facts}, serve_all's tasks)`."""
    config_asset, spm_asset, label_assets = assets
    shared_by_path = {v.path: v for v in shared.weights}
    pipelines, modules, all_tasks, facts, tokenizer, forwards = {}, {}, [], {}, None, _Forwards()
    packings = _Packings()
    for run in runs:
        spec = _SharedPackingSpec(run.spec, packings)
        max_seq_length = int(run.record["max_seq_length"])
        lengths = text_modes.resolve_lengths(dict(run.record.get("lengths") or {}), max_seq_length, shrink=False)
        key = (max_seq_length, tuple(sorted(lengths.items())))
        if key not in pipelines:
            pipeline = text_ops.TextPipeline(proto, do_lower_case, max_seq_length, vocab_size,
                                             name=f"text_pipeline_{len(pipelines)}", **lengths)
            if tokenizer is None:
                tokenizer = pipeline.tokenizer
            pipeline.tokenizer = tokenizer     # One SentencePiece resource for every packing.
            pipelines[key] = pipeline
        pipeline = pipelines[key]
        forward = _TaskForward(run.model, shared_by_path, forwards, _structure(run))
        # serve_all runs the frozen-encoder tasks' heads on one pass of the shared encoder.
        all_forward = _frozen_task_model(run, shared) if run.mode == "frozen" else forward
        threshold = run.record.get("threshold")
        spec.check_arguments(run.model, max_seq_length, threshold)
        modules[run.name] = single._ServingModule(   # pylint: disable=protected-access
            forward, spec, config_asset, spm_asset, pipeline, do_lower_case, max_seq_length, lengths, threshold)
        inputs = _serve_all_inputs(spec)
        if inputs is not None:
            all_tasks.append((run.name, spec, all_forward, pipeline, inputs, threshold))
        facts[run.name] = {"kind": spec.kind, "model_class": type(run.model).__name__, "encoder": run.mode,
                           "run_dir": os.path.abspath(run.run_dir), "checkpoint": run.prefix,
                           "max_seq_length": max_seq_length, "labels": run.record.get("labels"),
                           "labels_file": f"assets/labels_{run.name}.txt" if run.name in label_assets else None,
                           "lora_rank": int(run.record.get("lora_rank") or 0),
                           "signatures": signature_names(run.name), "in_serve_all": inputs is not None,
                           **single.kind_lengths(spec, lengths), **spec.export_facts(run.model)}
    # The frozen-encoder tasks first: their one encoder pass is traced before the adapted passes.
    all_tasks.sort(key=lambda task: isinstance(task[2], _TaskForward))
    module = _MultiTaskModule(shared, modules, config_asset, spm_asset, label_assets, do_lower_case, all_tasks)
    return module, facts, all_tasks


def _warmup_requests(module, runs):
    """One warm-up request per signature: each task's at its own `max_seq_length` and `tf.Example` features."""
    requests = {}
    by_signature = {}
    for run in runs:
        for signature in signature_names(run.name).values():
            by_signature[signature] = run
    for name, fn in module.signatures().items():
        specs = {arg.name: arg for arg in fn.input_signature}
        run = by_signature.get(name)
        if run is None:
            requests[name] = warmup_lib.signature_inputs(specs, 8)
            continue
        length = int(run.record["max_seq_length"])
        lengths = text_modes.resolve_lengths(dict(run.record.get("lengths") or {}), length, shrink=False)
        examples = warmup_lib.example_bytes(run.spec.example_spec(length, lengths))
        requests[name] = warmup_lib.signature_inputs(specs, length, examples)
    return requests


def task_metadata(metadata, task, directory):
    """`(metadata of one task, its token-ids signature)` of the multi-task export `directory` (`metadata`: its
    `albert_export.json`), as a single-task export's metadata reads (kind, lengths, casing, labels); an
    `InputError` when `task` is not given or not one of its tasks, or the export is not a multi-task one."""
    if metadata.get("kind") != KIND:
        raise InputError(f"`export_task={task!r}` applies to multi-task exports (albert-export --tasks); "
                         f"`{directory}` is a {metadata.get('kind')} export.")
    tasks = metadata.get("task_order") or sorted(metadata.get("tasks", {}))
    if task not in metadata.get("tasks", {}):
        given = "" if task is None else f" (not {task!r})"
        raise InputError(f"`{directory}` is a multi-task export of the tasks {', '.join(tasks)}: pass "
                         f"`export_task=` one of them{given}.")
    facts = dict(metadata["tasks"][task])
    facts.update(do_lower_case=metadata.get("do_lower_case", True), spm_model_file=metadata.get("spm_model_file"),
                 config_file=metadata.get("config_file"))
    return facts, facts["signatures"][single.SERVING_DEFAULT]


class MultiTaskModel:
    """A multi-task export loaded with `tf.saved_model.load` (`load`): `predict(texts)` answers every task of
    `serve_all` in one call, `predict(texts, task=NAME)` one task through its `NAME_text` signature.

    Attributes:
        tasks: the export's task names; labels: `{task: label names or None}`; metadata: its `albert_export.json`.
    """

    def __init__(self, directory):
        import tensorflow_text  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        from albert_tf.export import metadata as metadata_lib  # pylint: disable=import-outside-toplevel
        self.metadata = metadata_lib.read(directory)
        if self.metadata.get("kind") != KIND:
            raise InputError(f"`{directory}` is a {self.metadata.get('kind')} export, not a multi-task one "
                             "(albert-export --tasks): load it with `albert_tf.pipeline` or `tf.saved_model.load`.")
        self.directory = directory
        self.tasks = list(self.metadata["task_order"])
        self.labels = {name: facts.get("labels") for name, facts in self.metadata["tasks"].items()}
        self.loaded = tf.saved_model.load(directory)

    def predict(self, texts, text_b=None, task=None):
        """`{task: {output: numpy array}}` of `serve_all` on `texts` (a string or a list; `text_b`: the second
        texts of pair tasks), or with `task`, `{output: array}` of that task's `NAME_text` signature."""
        texts = [texts] if isinstance(texts, (str, bytes)) else list(texts)
        pairs = [""] * len(texts) if text_b is None else ([text_b] if isinstance(text_b, (str, bytes))
                                                           else list(text_b))
        if len(pairs) != len(texts):
            raise InputError(f"`text_b` must have one entry per text: {len(texts)} texts, {len(pairs)} in `text_b`.")
        if task is not None:
            if task not in self.metadata["tasks"]:
                raise InputError(f"`task` must be one of {', '.join(self.tasks)}. Received: {task!r}.")
            signature = self.loaded.signatures[signature_names(task)[single.SERVE_TEXT]]
            names = list(signature.structured_input_signature[1])
            inputs = {name: tf.constant(pairs if name == "text_b" else texts) for name in names}
            return {name: value.numpy() for name, value in signature(**inputs).items()}
        if SERVE_ALL not in self.loaded.signatures:
            raise InputError(f"`{self.directory}` has no `serve_all` (none of its tasks takes one text): pass `task`.")
        signature = self.loaded.signatures[SERVE_ALL]
        names = list(signature.structured_input_signature[1])
        outputs = signature(**{name: tf.constant(pairs if name == "text_b" else texts) for name in names})
        found = {}
        for key, value in outputs.items():
            name, _, output = key.partition("/")
            found.setdefault(name, {})[output] = value.numpy()
        return found


def load(directory):
    """The multi-task export `directory` (a version directory) as a `MultiTaskModel`."""
    return MultiTaskModel(directory)
