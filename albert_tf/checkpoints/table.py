"""The checkpoint table: original TF1 variable names <-> Keras weights of our models.

The names are those the original `modeling.py`, `run_pretraining.py` and task scripts create. The encoder's
rows are here (`ENCODER_ROWS`); each head's rows are declared with its model kind, next to its model class
(`albert_tf.registry`), and `all_rows()` is the encoder's rows followed by every registered head's.

Every row is `(component, TF1 name pattern, attribute path, transform)`:

* `component` says which part of a model the row belongs to. `encoder` rows are resolved on the model's
  encoder (the model itself for an `AlbertModel`, `model.encoder` otherwise); a head's rows (component: the
  head's name) are resolved on the model.
* `{g}` and `{k}` in a pattern stand for the group and inner-group index (the `group_{g}/inner_group_{k}`
  scopes of the original `transformer_model`): a row with them expands to `num_hidden_groups * inner_group_num`
  variables.
* The attribute path walks attributes and `[i]` indexes from the root to a Keras variable. A path through an
  attribute that is None (e.g. `embedding_projection` when `embedding_size == hidden_size`) drops the row: the
  original creates no variable there either.
* `transform` converts a TF1 value to the Keras value (reading) and back (writing). Our layers keep the TF1
  shapes (`[H, H]` attention kernels, `[num_outputs, H]` `output_weights`), so every row is the identity; the
  reader and writer still apply the declared transform and check shapes after it.

The same rows drive reading (`reader.py`), writing (`writer.py`) and the `--init_from_group0` remapping. A
weight of a model that no row names is an error (`model_targets`), so no path can skip it.
"""

import collections
import dataclasses
import re

from albert_tf import registry
from albert_tf.errors import InputError
from albert_tf.layers.base import sublayers

# The component of the encoder's rows; each head's component is its `registry.Head.name`, declared by its task.
ENCODER = "encoder"


@dataclasses.dataclass(frozen=True)
class Transform:
    """A pair of functions between the TF1 value and the Keras value of one variable.

    Args:
        name: str, shown in logs and errors.
        to_keras: callable, TF1 numpy array -> Keras numpy array.
        to_tf1: callable, Keras numpy array -> TF1 numpy array.
        tf1_shape: callable, Keras shape tuple -> TF1 shape tuple (checked before any value is read).
    """

    name: str
    to_keras: callable
    to_tf1: callable
    tf1_shape: callable


IDENTITY = Transform("identity", lambda value: value, lambda value: value, tuple)


@dataclasses.dataclass(frozen=True)
class Row:
    """One table row: `component`, TF1 `name` pattern, Keras attribute `path` pattern, `transform`."""

    component: str
    name: str
    path: str
    transform: Transform = IDENTITY


_BLOCK = "bert/encoder/transformer/group_{g}/inner_group_{k}"
_BLOCK_PATH = "groups[{g}][{k}]"


def dense_rows(component, tf1_scope, path, bias=True):
    """Rows of a TF1 `tf.layers.dense` scope (`kernel`, `bias`) held by the Keras Dense at `path`."""
    rows = [Row(component, f"{tf1_scope}/kernel", f"{path}.kernel")]
    if bias:
        rows.append(Row(component, f"{tf1_scope}/bias", f"{path}.bias"))
    return rows


def layer_norm_rows(component, tf1_scope, path):
    """Rows of a TF1 `layer_norm` scope (`beta`, `gamma`) held by the Keras LayerNormalization at `path`."""
    return [Row(component, f"{tf1_scope}/beta", f"{path}.beta"),
            Row(component, f"{tf1_scope}/gamma", f"{path}.gamma")]


def output_projection_rows(component, tf1_scope, path):
    """Rows of the original's `output_weights [num_outputs, H]`, `output_bias` (under `tf1_scope`, or at the
    root scope when it is empty) held by the `AlbertOutputProjection` at `path`."""
    prefix = f"{tf1_scope}/" if tf1_scope else ""
    return [Row(component, f"{prefix}output_weights", f"{path}.output_weights"),
            Row(component, f"{prefix}output_bias", f"{path}.output_bias")]


def output_projection_head(component, tf1_scope, path, hf_module=None):
    """The `registry.Head` `component` of the `AlbertOutputProjection` at `path`: the original's `output_weights`,
    `output_bias` under `tf1_scope` (`output_projection_rows`), and transformers' `<hf_module>.weight`, `.bias`
    of the same variables (None: transformers has no such head)."""
    from albert_tf.checkpoints.foreign import Link  # pylint: disable=import-outside-toplevel  (loads TensorFlow)

    rows = tuple(output_projection_rows(component, tf1_scope, path))
    links = () if hf_module is None else tuple(
        Link(row.name, f"{hf_module}.{suffix}") for row, suffix in zip(rows, ("weight", "bias")))
    return registry.Head(component, rows=rows, hf_links=links)


ENCODER_ROWS = tuple(
    # `modeling.AlbertModel`
    [Row(ENCODER, "bert/embeddings/word_embeddings", "embeddings.word_embeddings"),
     Row(ENCODER, "bert/embeddings/token_type_embeddings", "embeddings.token_type_embeddings"),
     Row(ENCODER, "bert/embeddings/position_embeddings", "embeddings.position_embeddings")]
    + layer_norm_rows(ENCODER, "bert/embeddings/LayerNorm", "embeddings.layer_norm")
    + dense_rows(ENCODER, "bert/encoder/embedding_hidden_mapping_in", "embedding_projection")
    + dense_rows(ENCODER, f"{_BLOCK}/attention_1/self/query", f"{_BLOCK_PATH}.attention.query")
    + dense_rows(ENCODER, f"{_BLOCK}/attention_1/self/key", f"{_BLOCK_PATH}.attention.key")
    + dense_rows(ENCODER, f"{_BLOCK}/attention_1/self/value", f"{_BLOCK_PATH}.attention.value")
    + dense_rows(ENCODER, f"{_BLOCK}/attention_1/output/dense", f"{_BLOCK_PATH}.attention.output_dense")
    + layer_norm_rows(ENCODER, f"{_BLOCK}/LayerNorm", f"{_BLOCK_PATH}.attention_layer_norm")
    + dense_rows(ENCODER, f"{_BLOCK}/ffn_1/intermediate/dense", f"{_BLOCK_PATH}.ffn")
    + dense_rows(ENCODER, f"{_BLOCK}/ffn_1/intermediate/output/dense", f"{_BLOCK_PATH}.ffn_output")
    + layer_norm_rows(ENCODER, f"{_BLOCK}/LayerNorm_1", f"{_BLOCK_PATH}.output_layer_norm")
    + dense_rows(ENCODER, "bert/pooler/dense", "pooler")
)


def all_rows():
    """The encoder's rows, then every registered head's (by kind order)."""
    return ENCODER_ROWS + tuple(row for head in registry.heads() for row in head.rows)


# Variables of training checkpoints that are not model weights (slots of `optimization.py`, `lamb_optimizer.py`):
# skipped on reading.
_SKIPPED = re.compile(
    r"(^|/)global_step$"
    r"|/(adam_m|adam_v|lamb_m|lamb_v)$"
    r"|AdamWeightDecayOptimizer"
    r"|/Adam(_\d+)?$|(^|/)beta[12]_power$")   # tf.compat.v1 AdamOptimizer slots, in user fine-tunes.


def is_skipped(name):
    """True for `global_step`, optimizer slots (`*/adam_m`, `*/adam_v`, `*/lamb_m`, `*/lamb_v`, ...)."""
    return bool(_SKIPPED.search(name))


def _pattern_regex(pattern):
    return re.compile("^" + re.escape(pattern).replace(r"\{g\}", r"(?P<g>\d+)").replace(r"\{k\}", r"(?P<k>\d+)")
                      + "$")


_regex_cache = {}


def match_name(name):
    """The rows whose TF1 pattern matches `name` (a head name like `output_weights` matches several rows)."""
    version = registry.version()
    if _regex_cache.get("version") != version:
        _regex_cache.update(version=version, rows=tuple((row, _pattern_regex(row.name)) for row in all_rows()))
    return [row for row, regex in _regex_cache["rows"] if regex.match(name)]


def is_head_name(name):
    """True when `name` is a variable of some head of the original (pretraining or fine-tuning)."""
    return any(row.component != ENCODER for row in match_name(name))


_PATH_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def resolve_path(root, path):
    """Follows `path` (e.g. `groups[1][0].attention.query.kernel`) from `root`; None if it crosses a None."""
    obj = root
    for part in path.split("."):
        for attr, index in _PATH_TOKEN.findall(part):
            if obj is None:
                return None
            if attr:
                if not hasattr(obj, attr):
                    raise AttributeError(f"`{type(obj).__name__}` has no attribute `{attr}` "
                                         f"(checkpoint table path `{path}`).")
                obj = getattr(obj, attr)
            else:
                obj = obj[int(index)]
    return obj


def _is_encoder(obj):
    """An `AlbertModel` by its interface (config, embeddings, groups, pooler): the table's encoder paths."""
    return all(hasattr(obj, attribute) for attribute in ("config", "embeddings", "groups", "pooler"))


def get_encoder(model):
    """The `AlbertModel` inside `model` (`model` itself for an encoder).

    Recognised by the attributes the table reads, so this package does not import the models (which import
    it for `from_pretrained`).
    """
    if _is_encoder(model):
        return model
    encoder = getattr(model, "encoder", None)
    if not _is_encoder(encoder):
        raise TypeError(f"`model` must be an AlbertModel or have an `encoder` attribute that is one. "
                        f"Received: {type(model).__name__}.")
    return encoder


def model_heads(model):
    """The `registry.Head`s of `model`: those of its kind; for a class no kind registers, each registered head
    whose attributes the model has."""
    kind = registry.kind_of(model)
    if kind is not None:
        return kind.heads
    return tuple(head for head in registry.heads()
                 if all(getattr(model, root, None) is not None for root in head.roots))


def model_components(model):
    """Components of `model`: `encoder` plus the name of each of its heads."""
    return [ENCODER] + [head.name for head in model_heads(model)]


@dataclasses.dataclass(frozen=True)
class Target:
    """A concrete TF1 name bound to a Keras variable of a model."""

    name: str
    variable: object
    component: str
    transform: Transform

    def tf1_shape(self):
        """The TF1 shape this variable must have in a checkpoint."""
        return tuple(int(d) for d in self.transform.tf1_shape(tuple(self.variable.shape)))


def lora_adapters(model):
    """The LoRA adapter variables of `model` (`lora_kernel_a`, `lora_kernel_b` of each `Dense` with Keras' LoRA
    enabled), which no TF1 name holds."""
    return [variable for layer in sublayers(model) if getattr(layer, "lora_enabled", False)
            for variable in (layer.lora_kernel_a, layer.lora_kernel_b)]


def _row_variable(root, path):
    """The variable at the row path `path` from `root`, or None; the `kernel` of a `Dense` with LoRA (whose
    `kernel` property is the adapted sum, a tensor) is its base kernel variable."""
    owner_path, _, attribute = path.rpartition(".")
    owner = resolve_path(root, owner_path)
    if owner is None:
        return None
    if attribute == "kernel" and getattr(owner, "lora_enabled", False):
        return next(weight for weight in owner.weights if weight.name == "kernel")
    return resolve_path(owner, attribute)


def model_targets(model, adapters=False):
    """`OrderedDict` TF1 name -> `Target` for every variable of `model` the table knows, in table order.

    Also checks that the table covers every weight of the model: a Keras weight the table does not name would
    be silently skipped by reading and writing, so it is an error here. A model with LoRA adapters
    (`enable_lora`) is refused unless `adapters` (a reader of our TF2 checkpoints, which restores the adapters
    object by object): the TF1 names hold the base kernels only, so a writer would lose the adapters.
    """
    encoder = get_encoder(model)
    config = encoder.config
    targets = collections.OrderedDict()
    rows = ENCODER_ROWS + tuple(row for head in model_heads(model) for row in head.rows)
    for row in rows:
        root = encoder if row.component == ENCODER else model
        groups = range(config.num_hidden_groups) if "{g}" in row.name else [None]
        inner = range(config.inner_group_num) if "{k}" in row.name else [None]
        for g in groups:
            for k in inner:
                name = row.name.format(g=g, k=k)
                variable = _row_variable(root, row.path.format(g=g, k=k))
                if variable is not None:
                    targets[name] = Target(name, variable, row.component, row.transform)
    covered = {id(t.variable) for t in targets.values()}
    lora = lora_adapters(model)
    if lora and not adapters:
        raise InputError(f"{type(model).__name__} has LoRA adapters, which the original variable names do not "
                         "hold: merge them into the kernels first (`albert_tf.models.lora.merged_copy(model)`).")
    covered.update(id(variable) for variable in lora)
    uncovered = [w.path for w in model.weights if id(w) not in covered]
    if uncovered:
        raise InputError(f"The checkpoint table does not cover these weights of {type(model).__name__}: "
                         f"{', '.join(uncovered)}. Every weight needs a row of its model kind's heads "
                         "(`albert_tf.registry`, see docs/adding_a_task.md).")
    return targets


def group0_source_name(name):
    """The name `--init_from_group0` reads for `name`: any `/group_N/` replaced by `/group_0/` (as the original
    `modeling.get_assignment_map_from_checkpoint`)."""
    return re.sub(r"/group_\d+/", "/group_0/", name)
