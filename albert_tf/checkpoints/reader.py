"""Reads Google's TF1 checkpoints (and our TF2 ones) into our Keras models, one variable at a time.

TF1 checkpoints are read through the table of `table.py`: every name is checked (missing, unexpected, wrong
shape: one error listing them all, raised before anything is assigned), then each value is read (`RestoreV2`
straight into a TF tensor), assigned and dropped, so at most one variable is held twice beside the model
(`benchmarks/bench_convert.py` measures it).

The foreign layouts (TF2 SavedModels of tf-models' AlbertEncoder, keras-hub presets, Hugging Face safetensors)
are read the same way: `open_reader` gives a `foreign.MappedReader` that shows their variables under the
original TF1 names, with the transposes and reshapes between the layouts applied one variable at a time.

Our TF2 checkpoints (`tf.train.Checkpoint(model=model, optimizer=...)` written by the training loop) are
restored object by object: the `encoder` into the encoder of any of our model classes, each head when the
checkpoint's model has one under the same attribute. The model's weights are checked against its kind's rows
first (`table.model_targets`), and every checkpoint object with variables must be the encoder, a head of the
model, or a head of another registered kind (ignored, as a TF1 head name is): nothing is skipped unseen.

A checkpoint that does not fit raises `CheckpointMismatchError` (the names missing, unexpected, mis-shaped); one
whose files cannot be read raises `DamagedCheckpointError`. Both are `InputError`s.
"""

import collections
import dataclasses
import re

import keras
import tensorflow as tf
from absl import logging
from tensorflow.core.protobuf import trackable_object_graph_pb2

from albert_tf import registry
from albert_tf.checkpoints import hf, keras_hub, table
from albert_tf.checkpoints import tfhub as saved_model
from albert_tf.checkpoints.foreign import MappedReader
from albert_tf.checkpoints.sources import FOREIGN_KINDS, resolve_source
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
HUB_PREFIX = "module/"
_DAMAGE_ERRORS = (tf.errors.OutOfRangeError, tf.errors.DataLossError)
# Children of a checkpoint's `model` that are the Keras model's training state, not weights: a model saved after
# `compile`/`fit` carries its optimizer.
_KERAS_MODEL_STATE = frozenset({"optimizer"})
# A variable in the text of a `tf.train.Checkpoint` restore error (its values are never shown).
_VARIABLE_NAME = re.compile(r"<(?:tf\.Variable|KerasVariable|Variable)[^>]*?(?:path|name)?=?\s*'([^']+)'")


class DamagedCheckpointError(InputError):
    """A checkpoint whose files cannot be read completely (e.g. a truncated `.data-*` shard)."""


class CheckpointMismatchError(InputError):
    """A checkpoint that does not fit the model.

    Attributes:
        missing: list of str, names of the model's variables the checkpoint lacks.
        unexpected: list of str, names in the checkpoint with no place in any registered model.
        mismatched: list of str, `name [checkpoint shape] (model: [shape])` entries.
    """

    def __init__(self, message, missing=(), unexpected=(), mismatched=()):
        super().__init__(message)
        self.missing, self.unexpected, self.mismatched = list(missing), list(unexpected), list(mismatched)


@dataclasses.dataclass
class LoadResult:
    """What a restore did.

    Attributes:
        format: `tf1` or `tf2`.
        loaded: list of str, TF1 names (or TF2 object paths) assigned.
        ignored: list of str, head variables of the checkpoint the model has no place for.
        missing_heads: list of str, head components of the model the checkpoint lacks (left initialised).
        skipped: int, optimizer slots and `global_step` entries skipped.
    """

    format: str
    loaded: list
    ignored: list
    missing_heads: list
    skipped: int = 0


class CheckpointReader:
    """Names, shapes and values of a checkpoint, optimizer slots removed and a TF-Hub `module/` prefix stripped.

    Args:
        prefix: str, checkpoint prefix.
    """

    def __init__(self, prefix):
        self.prefix = prefix
        try:
            self._reader = tf.train.load_checkpoint(prefix)
        except (tf.errors.OpError, ValueError) as e:
            raise InputError(f"Cannot read checkpoint `{prefix}`: {e}") from None
        shapes = self._reader.get_variable_to_shape_map()
        self._raw_dtypes = self._reader.get_variable_to_dtype_map()
        self.raw_shapes = {name: tuple(shape) for name, shape in shapes.items()}
        stripped = [name[len(HUB_PREFIX):] if name.startswith(HUB_PREFIX) else name for name in shapes]
        self.is_tf2 = OBJECT_GRAPH_KEY in shapes and not any(name.startswith("bert/") for name in stripped)
        self.skipped = sorted(name for name in shapes if table.is_skipped(name))
        self.shapes = collections.OrderedDict()
        self._raw_names = {}
        for raw in sorted(shapes):
            if raw == OBJECT_GRAPH_KEY or table.is_skipped(raw):
                continue
            name = raw[len(HUB_PREFIX):] if raw.startswith(HUB_PREFIX) else raw
            if name in self._raw_names:
                raise InputError(f"Checkpoint `{prefix}` holds `{name}` both with and without the `module/` "
                                 "prefix; cannot tell which to use.")
            self._raw_names[name] = raw
            self.shapes[name] = tuple(shapes[raw])

    def _damaged(self, raw_name, error):
        detail = error.message if hasattr(error, "message") else error
        return DamagedCheckpointError(f"Checkpoint `{self.prefix}` is damaged (truncated or corrupt `.data-*` "
                                      f"file?): reading `{raw_name}` failed: {detail}")

    def _get_tensor(self, raw_name):
        try:
            return self._reader.get_tensor(raw_name)
        # A truncated `.data-*` shard makes the reader raise IndexError ("Read less bytes than requested").
        except (tf.errors.OpError, ValueError, IndexError) as e:
            raise self._damaged(raw_name, e) from None

    def read(self, name):
        """The value of `name` (as listed in `shapes`) as a numpy array."""
        return self._get_tensor(self._raw_names[name])

    def read_tensor(self, name):
        """The value of `name` as an eager tensor, read straight into TF memory (no numpy copy)."""
        raw = self._raw_names[name]
        try:
            return tf.raw_ops.RestoreV2(prefix=self.prefix, tensor_names=[raw], shape_and_slices=[""],
                                        dtypes=[self._raw_dtypes[raw]])[0]
        except tf.errors.OpError as e:
            raise self._damaged(raw, e) from None

    # --- TF2 object-graph checkpoints ---------------------------------------------------------------
    # A variable reachable by several paths (e.g. also through `optimizer/_trainable_variables/N`) is stored
    # under one key only, so objects are found by walking the object graph, not by parsing key names.

    def _graph(self):
        if not hasattr(self, "_object_graph"):
            graph = trackable_object_graph_pb2.TrackableObjectGraph()
            graph.ParseFromString(self._get_tensor(OBJECT_GRAPH_KEY))
            self._object_graph = graph
        return self._object_graph

    def _child(self, node_id, name):
        for child in self._graph().nodes[node_id].children:
            if child.local_name == name:
                return child.node_id
        return None

    def _count_variables(self, node_id):
        graph, seen, stack, count = self._graph(), set(), [node_id], 0
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            node = graph.nodes[current]
            count += any(attribute.name == "VARIABLE_VALUE" for attribute in node.attributes)
            stack.extend(child.node_id for child in node.children)
        return count

    def _node(self, path):
        node_id = 0
        for name in path.split("/") if path else []:
            node_id = self._child(node_id, name)
            if node_id is None:
                return None
        return node_id

    def tf2_children(self, path="model"):
        """`{attribute: number of variables}` for each child of the object at `path` (default `model`)."""
        node_id = self._node(path)
        if node_id is None:
            return {}
        return {child.local_name: self._count_variables(child.node_id)
                for child in self._graph().nodes[node_id].children}

    def tf2_model_variable_count(self):
        """Number of variables reachable from the checkpoint's `model` object."""
        model_id = self._child(0, "model")
        return 0 if model_id is None else self._count_variables(model_id)

    def tf2_value(self, path):
        """The value (numpy) of the variable at object path `path`, or None."""
        node_id = self._node(path)
        for attribute in [] if node_id is None else self._graph().nodes[node_id].attributes:
            if attribute.name == "VARIABLE_VALUE":
                return self._get_tensor(attribute.checkpoint_key)
        return None

    def tf2_adapters(self, path):
        """The object paths, relative to `path`, of the Keras `Dense` layers under it that hold LoRA adapters
        (children `lora_kernel_a` and `lora_kernel_b`), each layer once, in object-graph order."""
        start = self._node(path)
        if start is None:
            return []
        graph, found, seen, queue = self._graph(), [], {start}, [(start, "")]
        while queue:
            node_id, relative = queue.pop(0)
            names = {child.local_name for child in graph.nodes[node_id].children}
            if {"lora_kernel_a", "lora_kernel_b"} <= names:
                found.append(relative)
                continue
            for child in graph.nodes[node_id].children:
                if child.node_id not in seen:
                    seen.add(child.node_id)
                    queue.append((child.node_id, f"{relative}/{child.local_name}".lstrip("/")))
        return found

    def tf2_shape(self, path):
        """Shape of the variable at object path `path` (e.g. `model/classifier_head/output_weights`), or None."""
        node_id = self._node(path)
        if node_id is None:
            return None
        for attribute in self._graph().nodes[node_id].attributes:
            if attribute.name == "VARIABLE_VALUE":
                return self.raw_shapes.get(attribute.checkpoint_key)
        return None


def _format_list(title, items, limit=200):
    shown = list(items)[:limit]
    more = f"\n    ... and {len(items) - limit} more" if len(items) > limit else ""
    return f"  {title} ({len(items)}):\n" + "\n".join(f"    {item}" for item in shown) + more


def _check_tf1(model, reader, allow_missing_heads):
    """Matches the model's table targets with the checkpoint; raises one ValueError listing every problem."""
    targets = table.model_targets(model)
    present = reader.shapes
    missing, mismatched, missing_heads = [], [], []
    by_component = collections.OrderedDict()
    for name, target in targets.items():
        by_component.setdefault(target.component, []).append(name)
    may_lack = getattr(reader, "may_lack", set())
    for component, names in by_component.items():
        absent = [name for name in names if name not in present and name not in may_lack]
        if component != table.ENCODER and allow_missing_heads and len(absent) == len(names):
            missing_heads.append(component)
            continue
        missing.extend(absent)
    for name, target in targets.items():
        if name in present and present[name] != target.tf1_shape():
            mismatched.append(f"{name} {list(present[name])} (model: {list(target.tf1_shape())})")
    extra = [name for name in present if name not in targets]
    ignored = [name for name in extra if table.is_head_name(name)]
    unexpected = [name for name in extra if not table.is_head_name(name)]
    lacking = [name for name in targets if name in may_lack and name not in present]
    if lacking:
        logging.warning("`%s` has no %s (its layout leaves them out); they keep their initial values.",
                        reader.prefix, ", ".join(lacking))
    if missing or unexpected or mismatched:
        parts = [f"Checkpoint `{reader.prefix}` does not match {type(model).__name__} "
                 f"(config: {table.get_encoder(model).config.to_dict()}):"]
        if missing:
            parts.append(_format_list("missing from the checkpoint", missing))
        if unexpected:
            parts.append(_format_list("unexpected in the checkpoint (config too small, or not an ALBERT variable)",
                                      unexpected))
        if mismatched:
            parts.append(_format_list("shape mismatch", mismatched))
        raise CheckpointMismatchError("\n".join(parts), missing, unexpected, mismatched)
    return targets, ignored, missing_heads


def _assign(target, reader, name):
    """Reads `name` and assigns it; an identity transform never makes a numpy copy of the value."""
    if target.transform is table.IDENTITY:
        value = reader.read_tensor(name)
    else:
        value = target.transform.to_keras(reader.read(name))
    if value.dtype != target.variable.dtype:
        value = tf.cast(value, target.variable.dtype)
    target.variable.assign(value)


def restore_tf1(model, prefix, allow_missing_heads=True):
    """Assigns a Google-format TF1 checkpoint (the original's variable names) to `model`, variable by variable.

    Args:
        model: `AlbertModel`, `AlbertPretrainer` or a task model.
        prefix: str, checkpoint prefix, or a reader (`CheckpointReader`, `MappedReader` of a foreign layout).
        allow_missing_heads: bool, accept a checkpoint without (all of) a head's variables; the head keeps its
            initial values. A head present only in part is always an error.

    Returns:
        `LoadResult`.
    """
    reader = prefix if isinstance(prefix, (CheckpointReader, MappedReader)) else CheckpointReader(prefix)
    targets, ignored, missing_heads = _check_tf1(model, reader, allow_missing_heads)
    loaded = []
    for name, target in targets.items():
        if name not in reader.shapes:
            continue
        _assign(target, reader, name)
        loaded.append(name)
    logging.info("Restored %d variables of %s from `%s` (%d optimizer/step entries skipped).",
                 len(loaded), type(model).__name__, reader.prefix, len(reader.skipped))
    if ignored:
        logging.info("Ignored %d head variables the model has no place for: %s", len(ignored), ", ".join(ignored))
    if missing_heads:
        logging.info("Heads not in the checkpoint, left initialised: %s", ", ".join(missing_heads))
    return LoadResult("tf1", loaded, ignored, missing_heads, len(reader.skipped))


def open_reader(source):
    """The reader of a `ResolvedSource`: a `CheckpointReader`, or for a foreign layout a `MappedReader` that shows
    its weights under the original TF1 names."""
    if source.layout not in FOREIGN_KINDS:
        return CheckpointReader(source.checkpoint_prefix)
    if source.layout == "tf2_saved_model":
        return saved_model.open_reader(source.directory)
    if source.config_file is None:
        raise InputError(f"No config for `{source.path}`: {source.config_note}")
    config = AlbertConfig.from_json_file(source.config_file)
    if source.layout == "keras_hub_preset":
        return keras_hub.open_reader(source.directory, config)
    return hf.open_reader(source.directory, config)


def source_num_labels(path, kind=None):
    """Rows of a labelled head (a kind's `labels_variable`, e.g. `output_weights [num_labels, H]`) in any source,
    None when it has none.

    `kind` names the model kind to read; None tries every registered kind that declares a `labels_variable`, by
    `order`, and returns the first the source holds. TF1 checkpoints hold the variable under its TF1 name (the
    sequence classifier's root-scope `output_weights`), ours at the object path of its row
    (`model/classifier_head/output_weights`), Hugging Face directories under its transformers name
    (`classifier.weight`).
    """
    kinds = [registry.get(kind)] if kind is not None else [k for k in registry.kinds() if k.labels_variable]
    with resolve_source(path) as source:
        return reader_num_labels(open_reader(source), kinds)


def reader_num_labels(reader, kinds):
    """Rows of the first of `kinds`' labelled heads that `reader` (any reader of `open_reader`) holds, or None.
    A Hugging Face directory's head is the one of its `architectures` class only (`classifier.weight` is a
    sequence classifier's, a multiple choice or a token classifier's)."""
    architecture = getattr(reader, "architecture", None)
    if architecture is not None:
        kinds = [kind for kind in kinds if kind.hf_architecture == architecture]
    for labelled in kinds:
        if labelled.labels_variable is None:
            return None
        (row,) = [row for head in labelled.heads for row in head.rows if row.name == labelled.labels_variable]
        shape = reader.tf2_shape("model/" + row.path.replace(".", "/")) if reader.is_tf2 else \
            reader.shapes.get(row.name)
        if shape is not None and len(shape) == 2:
            return int(shape[0])
    return None


def _restore_object(prefix, node, description, root_name="model"):
    """Restores `node` from the checkpoint's `root_name` object; every variable of `node` must be there."""
    try:
        status = tf.train.Checkpoint(**{root_name: node}).read(prefix)
        status.assert_existing_objects_matched()
    except _DAMAGE_ERRORS as e:
        raise DamagedCheckpointError(f"Checkpoint `{prefix}` is damaged: {description} cannot be read "
                                     f"({type(e).__name__}).") from None
    except (AssertionError, tf.errors.OpError, ValueError) as e:
        names = list(dict.fromkeys(_VARIABLE_NAME.findall(str(e))))
        first = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise CheckpointMismatchError(f"TF2 checkpoint `{prefix}` does not hold all variables of {description}"
                                      f": {', '.join(names[:5]) or first}", missing=names) from None
    status.expect_partial()


def _restore_tf2_encoder(reader, encoder, children):
    """Restores the encoder from `model/encoder` (a task model's checkpoint) or `model` (a bare encoder's)."""
    prefix = reader.prefix
    if "encoder" in children:
        node, saved = tf.train.Checkpoint(encoder=encoder), children["encoder"]
    elif "embeddings" in children:
        node, saved = encoder, reader.tf2_model_variable_count()
    else:
        raise CheckpointMismatchError(f"TF2 checkpoint `{prefix}` holds no albert_tf model: expected variables "
                                      "under `model/encoder/` or `model/embeddings/`. Found under `model/`: "
                                      f"{sorted(children) or 'nothing'}.", missing=["encoder"])
    base = "model/encoder" if "encoder" in children else "model"
    adapters = reader.tf2_adapters(base)
    model_adapters = table.lora_adapters(encoder)
    if model_adapters and len(adapters) * 2 != len(model_adapters):
        # By layer name (`query`, `ffn`, ...): `enable_lora` with the run's `lora_rank` and `lora_targets` fits.
        saved_names = {path.rsplit("/", 1)[-1] for path in adapters}
        model_names = {variable.path.split("/")[-2] for variable in model_adapters}
        raise CheckpointMismatchError(
            f"TF2 checkpoint `{prefix}` holds LoRA adapters on {len(adapters)} layers; this encoder has them on "
            f"{len(model_adapters) // 2}.",
            missing=[f"{name}/lora_kernel_a" for name in sorted(model_names - saved_names)],
            unexpected=[f"{name}/lora_kernel_a" for name in sorted(saved_names - model_names)])
    # A plain encoder reads a LoRA checkpoint's base kernels, then adds the adapters in (`_merge_adapters`).
    merged = adapters if not model_adapters else []
    # Extra saved variables (a bigger config) would be ignored by tf.train.Checkpoint: compare counts.
    if saved - 2 * len(merged) != len(encoder.weights):
        raise CheckpointMismatchError(
            f"TF2 checkpoint `{prefix}` holds {saved - 2 * len(merged)} encoder variables in its object graph; "
            f"this encoder ({encoder.config.num_hidden_groups} groups x {encoder.config.inner_group_num} inner "
            f"groups) has {len(encoder.weights)}. The checkpoint was written with a different config.")
    _restore_object(prefix, node, "the encoder")
    _merge_adapters(reader, encoder, base, merged)


def _merge_adapters(reader, encoder, base, paths):
    """Adds the LoRA adapters of the checkpoint's `Dense` layers at `paths` (under the object `base`) into the
    kernels of the same layers of the plain `encoder`: `kernel + (alpha / rank) * A @ B`, Keras' `Dense.kernel`
    with LoRA; `alpha` is the checkpoint's `lora/alpha` (`loop.checkpoint_objects`), else the rank (Keras'
    default)."""
    alpha = reader.tf2_value("lora/alpha")
    for path in paths:
        layer = encoder
        for name in path.split("/"):
            layer = tf.train.TrackableView(layer).children(layer).get(name)
            if layer is None:
                raise CheckpointMismatchError(f"TF2 checkpoint `{reader.prefix}` has LoRA adapters at "
                                              f"`{base}/{path}`, which this encoder has no layer for.",
                                              unexpected=[f"{base}/{path}"])
        a = reader.tf2_value(f"{base}/{path}/lora_kernel_a")
        b = reader.tf2_value(f"{base}/{path}/lora_kernel_b")
        scale = (a.shape[1] if alpha is None else float(alpha)) / a.shape[1]
        layer.kernel.assign(layer.kernel + tf.cast(scale * (a @ b), layer.kernel.dtype))
    if paths:
        logging.info("Merged the LoRA adapters of %d layers into their kernels (`%s`).", len(paths), reader.prefix)


def _restore_tf2_head(reader, model, head, children, allow_missing_heads):
    """Restores `head` (a `registry.Head` of `model`); returns its roots, or None when it is absent."""
    roots = head.roots
    have = [root for root in roots if children.get(root)]
    if not have and allow_missing_heads:
        return None
    if len(have) != len(roots):
        lacking = sorted(set(roots) - set(have))
        raise CheckpointMismatchError(f"TF2 checkpoint `{reader.prefix}` lacks {lacking} of the {head.name} head "
                                      f"of {type(model).__name__}.", missing=[f"model/{root}" for root in lacking])
    for root in roots:
        expected = len(getattr(model, root).weights)
        if children[root] != expected:
            raise CheckpointMismatchError(
                f"TF2 checkpoint `{reader.prefix}` holds {children[root]} variables under `model/{root}`; the "
                f"{head.name} head of {type(model).__name__} has {expected} there.", unexpected=[f"model/{root}"])
    _restore_object(reader.prefix, tf.train.Checkpoint(**{r: getattr(model, r) for r in roots}),
                    f"the {head.name} head")
    return roots


def _tf2_ignored(reader, children, used):
    """Checkpoint objects with variables the model does not use: heads of other registered kinds (returned,
    ignored); anything else but the Keras model's own state (`_KERAS_MODEL_STATE`, `_`-prefixed trackers) is an
    error naming it."""
    if "encoder" not in children:
        return []     # A bare encoder's checkpoint: its objects are the encoder's (counted above).
    other_heads = {root for head in registry.heads() for root in head.roots}
    extra = sorted(child for child, count in children.items() if count and child not in used
                   and child not in _KERAS_MODEL_STATE and not child.startswith("_"))
    unknown = [child for child in extra if child not in other_heads]
    if unknown:
        raise CheckpointMismatchError(
            f"TF2 checkpoint `{reader.prefix}` holds variables under "
            f"{', '.join(f'`model/{child}`' for child in unknown)} that no row of a registered model kind maps "
            "(`albert_tf.registry`).", unexpected=[f"model/{child}" for child in unknown])
    return extra


def restore_tf2(model, prefix, allow_missing_heads=True):
    """Restores one of our TF2 checkpoints (`tf.train.Checkpoint(model=..., optimizer=...)`) into `model`.

    The encoder is found under `model/encoder` (any model class with an encoder) or directly under `model`
    (a checkpoint of a bare `AlbertModel`); each head of `model` (its kind's heads) is restored when the
    checkpoint's model has the same attributes. A weight of `model` that no row of its kind names, and a
    checkpoint object with variables that is neither the encoder nor a head of a registered kind, are errors.

    Args:
        model: any of our model classes.
        prefix: str, checkpoint prefix.
        allow_missing_heads: bool, accept a checkpoint without a head of `model`.

    Returns:
        `LoadResult`.
    """
    reader = prefix if isinstance(prefix, CheckpointReader) else CheckpointReader(prefix)
    children = reader.tf2_children()
    table.model_targets(model, adapters=True)   # Every weight has a row or is a LoRA adapter (else: an error).
    if keras.backend.backend() != "tensorflow":
        return _restore_tf2_by_paths(model, reader, children, allow_missing_heads)
    _restore_tf2_encoder(reader, table.get_encoder(model), children)
    loaded, missing_heads, used = ["encoder"], [], {"encoder"}
    for head in table.model_heads(model):
        roots = _restore_tf2_head(reader, model, head, children, allow_missing_heads)
        if roots is None:
            missing_heads.append(head.name)
            continue
        loaded.extend(roots)
        used.update(roots)
    ignored = _tf2_ignored(reader, children, used)
    logging.info("Restored %s of %s from TF2 checkpoint `%s`.", ", ".join(loaded), type(model).__name__,
                 reader.prefix)
    if ignored:
        logging.info("Ignored checkpoint objects the model has no place for: %s", ", ".join(ignored))
    if missing_heads:
        logging.info("Heads not in the checkpoint, left initialised: %s", ", ".join(missing_heads))
    return LoadResult("tf2", loaded, ignored, missing_heads, 0)


def _restore_tf2_by_paths(model, reader, children, allow_missing_heads):
    """`restore_tf2` on a Keras backend other than TensorFlow, whose models are no `tf.train.Checkpoint` objects:
    each variable read at its path in the checkpoint's object graph (`object_graph.restore`, as
    `tf.train.Checkpoint.restore` matches them): a task model's whole checkpoint, or a bare encoder's into a task
    model's encoder. A head the checkpoint lacks is left initialised with `allow_missing_heads`; any other missing
    variable is a `CheckpointMismatchError`."""
    from albert_tf.checkpoints import object_graph   # deferred: the other backends' path only

    encoder = table.get_encoder(model)
    bare = "encoder" not in children and "embeddings" in children and encoder is not model
    root = object_graph.Node(model=encoder) if bare else object_graph.checkpoint_root(model)
    missing = [key for key in object_graph.restore(reader.prefix, root, expect_partial=True)
               if key.startswith("model/")]
    heads = {head.name: [key for key in missing if any(key.startswith(f"model/{root}/") for root in head.roots)]
             for head in table.model_heads(model)}
    missing_heads = sorted(name for name, keys in heads.items() if keys)
    other = [key for key in missing if not any(key in keys for keys in heads.values())]
    if other or (missing_heads and not allow_missing_heads):
        raise CheckpointMismatchError(f"TF2 checkpoint `{reader.prefix}` does not hold every variable of "
                                      f"{type(model).__name__}.", missing=other + [k for n in missing_heads
                                                                                for k in heads[n]])
    if bare:
        missing_heads = [head.name for head in table.model_heads(model)]
    loaded = ["encoder"] + [head.name for head in table.model_heads(model) if head.name not in missing_heads]
    logging.info("Restored %s of %s from TF2 checkpoint `%s`.", ", ".join(loaded), type(model).__name__,
                 reader.prefix)
    return LoadResult("tf2", loaded, [], missing_heads, 0)


def init_groups_from_group0(model, path):
    """`--init_from_group0` of the original `run_pretraining.py`: every group's variables from `group_0`.

    As the original `get_assignment_map_from_checkpoint(..., num_of_group)`: a variable whose own name is in
    the checkpoint takes it; otherwise `/group_N/` is replaced by `/group_0/`; variables matched neither way
    keep their values and are logged. (The original's `/ffn_N/` -> `/ffn_1/` and `/attention_N/` ->
    `/attention_1/` fallbacks never apply: every block's scopes are `ffn_1` and `attention_1`.) Shape
    mismatches are errors (listing every name), raised before any assignment.

    Args:
        model: any of our model classes.
        path: str, a TF1 source (prefix, release dir, archive, TF-Hub module).

    Returns:
        dict, model TF1 name -> checkpoint name it was read from.
    """
    with resolve_source(path) as source:
        reader = open_reader(source)
        if reader.is_tf2:
            raise InputError(f"`init_from_group0` reads TF1 checkpoints with the original names; `{path}` is a "
                             "TF2 object-graph checkpoint.")
        targets = table.model_targets(model)
        assignment, unmatched, mismatched = collections.OrderedDict(), [], []
        for name, target in targets.items():
            source_name = name if name in reader.shapes else table.group0_source_name(name)
            if source_name not in reader.shapes:
                unmatched.append(name)
                continue
            if reader.shapes[source_name] != target.tf1_shape():
                mismatched.append(f"{name} <- {source_name}: checkpoint {list(reader.shapes[source_name])}, "
                                  f"model expects {list(target.tf1_shape())}")
            assignment[name] = source_name
        if mismatched:
            raise InputError(f"Checkpoint `{reader.prefix}` does not fit {type(model).__name__}:\n"
                             + _format_list("shape mismatch", mismatched))
        if not assignment:
            raise InputError(f"No variable of {type(model).__name__} found in checkpoint `{reader.prefix}`, "
                             "neither under its own name nor under `group_0`.")
        for name, source_name in assignment.items():
            if name != source_name:
                logging.info("%s initialised from %s", name, source_name)
            _assign(targets[name], reader, source_name)
        for name in unmatched:
            logging.info("name %s does not get matched", name)
    return dict(assignment)
