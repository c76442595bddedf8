"""The one function that restores a checkpoint prefix into one of our models, whichever code wrote it.

Two formats reach it:

* object-based TF2 checkpoints (a `_CHECKPOINTABLE_OBJECT_GRAPH` entry), as `albert_tf.training.loop` writes
  `model.ckpt-<step>` and `model.ckpt-best`;
* TF1 checkpoints under the original variable names (`bert/...`, the task heads, `global_step` and optimizer
  slots such as `*/adam_m`, `*/lamb_v`), as the original `run_pretraining.py`, `run_classifier.py`,
  `run_squad_v1.py`, `run_squad_v2.py` and `run_race.py` write them in `--output_dir`, and as Google's
  releases ship them.

Optimizer slots and `global_step` are never read. Errors are short: a checkpoint that does not fit the model
names the file and the first few missing / unexpected variables (from the reader's `CheckpointMismatchError`);
a damaged one (a truncated `.data-*` file, `DamagedCheckpointError`) says so. Neither ever prints tensor values.
"""

import tensorflow as tf
from absl import logging

from albert_tf import registry
from albert_tf.checkpoints import hf
from albert_tf.checkpoints import reader as reader_lib
from albert_tf.checkpoints.reader import CheckpointMismatchError, DamagedCheckpointError
from albert_tf.checkpoints.sources import FOREIGN_KINDS, resolve_source
from albert_tf.errors import InputError

_SHOWN = 5                    # variable names listed per kind in an error message
_DAMAGE_ERRORS = (tf.errors.OutOfRangeError, tf.errors.DataLossError)


def _damaged(prefix, detail):
    return DamagedCheckpointError(
        f"Checkpoint `{prefix}` is damaged: {detail}; copy or download it again (a run's own checkpoint: train "
        "it again).")


def _dtype_size(dtype):
    try:
        return tf.as_dtype(dtype).size
    except TypeError:     # strings (the object graph) have no fixed size
        return 0


def check_readable(prefix):
    """Raises `ValueError` unless `prefix` is a complete checkpoint: its index reads and its data shards hold at
    least the bytes its tensors need. Reads no tensor values."""
    if not tf.io.gfile.exists(prefix + ".index"):
        raise InputError(f"`{prefix}` is not a checkpoint: {prefix}.index does not exist.")
    try:
        checkpoint = tf.train.load_checkpoint(prefix)
        shapes = checkpoint.get_variable_to_shape_map()
        dtypes = checkpoint.get_variable_to_dtype_map()
    except _DAMAGE_ERRORS as e:
        raise _damaged(prefix, f"its index cannot be read ({type(e).__name__})") from None
    except (tf.errors.OpError, ValueError) as e:
        raise InputError(f"Cannot read checkpoint `{prefix}` ({type(e).__name__}): "
                         f"{str(e).splitlines()[0][:300]}") from None
    needed = 0
    for name, shape in shapes.items():
        count = 1
        for dim in shape:
            count *= int(dim)
        needed += count * _dtype_size(dtypes[name])
    shards = sorted(tf.io.gfile.glob(prefix + ".data-*"))
    if not shards:
        raise _damaged(prefix, f"`{prefix}.data-*` is missing (only the index is there)")
    present = sum(tf.io.gfile.stat(path).length for path in shards)
    if present < needed:
        files = ", ".join(f"`{path}`" for path in shards)
        raise _damaged(prefix, f"{files} {'hold' if len(shards) > 1 else 'holds'} {present} bytes where its index "
                               f"lists {needed} bytes of tensors (a truncated file)")


def _listing(title, names):
    names = list(names)
    if not names:
        return ""
    shown = ", ".join(names[:_SHOWN])
    more = f", ... ({len(names) - _SHOWN} more)" if len(names) > _SHOWN else ""
    return f" {title} ({len(names)}): {shown}{more}."


def _short_error(model, prefix, checkpoint, error):
    """The short form of a restore error: the first names it lists, or its first line; never values."""
    layout = "object-based" if checkpoint.is_tf2 else "TF1 variable names"
    text = f"Checkpoint `{prefix}` ({layout}) does not fit {type(model).__name__}:"
    if isinstance(error, CheckpointMismatchError):
        text += (_listing("missing from the checkpoint", error.missing)
                 + _listing("unexpected in the checkpoint", error.unexpected)
                 + _listing("shape mismatch", error.mismatched))
    if text.endswith(":"):
        text += " " + (str(error).splitlines()[0][:300] if str(error) else type(error).__name__)
    return InputError(text)


def restore_checkpoint(model, prefix, allow_missing_heads=False):
    """Restores the weights of `model` from checkpoint `prefix`, detecting its format.

    Args:
        model: `AlbertModel`, `AlbertPretrainer` or a task model.
        prefix: str, e.g. `output_dir/model.ckpt-best` or `output_dir/model.ckpt-1000`.
        allow_missing_heads: bool, accept a checkpoint that lacks a whole head of `model` (the head keeps its
            values: fine-tuning from a pretraining checkpoint). False for a task's own checkpoints.

    Returns:
        `albert_tf.checkpoints.LoadResult`.

    Raises:
        DamagedCheckpointError: the files of `prefix` cannot be read completely.
        ValueError: `prefix` is not a checkpoint, or does not fit `model` (the message names the file and the
            first few missing / unexpected variables).
    """
    prefix = str(prefix)
    check_readable(prefix)
    try:
        checkpoint = reader_lib.CheckpointReader(prefix)
    except _DAMAGE_ERRORS as e:
        raise _damaged(prefix, type(e).__name__) from None
    try:
        if checkpoint.is_tf2:
            return reader_lib.restore_tf2(model, checkpoint, allow_missing_heads)
        return reader_lib.restore_tf1(model, checkpoint, allow_missing_heads)
    except DamagedCheckpointError:
        raise _damaged(prefix, "a tensor cannot be read") from None
    except _DAMAGE_ERRORS as e:
        raise _damaged(prefix, f"a tensor cannot be read ({type(e).__name__})") from None
    except ValueError as e:
        raise _short_error(model, prefix, checkpoint, e) from None


def restore_source(model, source, allow_missing_heads=True):
    """Restores `model` from a `ResolvedSource` of any kind.

    A checkpoint prefix (TF1 names or our object graph) goes through `restore_checkpoint`; a foreign layout
    (TF2 SavedModel, keras-hub preset, Hugging Face directory) through its reader, which shows the weights
    under the original TF1 names.

    Returns:
        `LoadResult`.
    """
    if source.layout not in FOREIGN_KINDS:
        return restore_checkpoint(model, source.checkpoint_prefix, allow_missing_heads)
    return reader_lib.restore_tf1(model, _own_heads(model, reader_lib.open_reader(source)), allow_missing_heads)


def _own_heads(model, reader):
    """`reader` without the head variables of `model`'s kind when a Hugging Face directory's `architectures`
    class is another kind's (`AlbertForMultipleChoice` read by `AlbertClassifier`: both heads are
    `output_weights`): that head is then missing, not read as the model's (a 1-label regression)."""
    kind = registry.kind_of(model)
    own = hf.architecture_kind(reader.architecture) if getattr(reader, "architecture", None) else None
    if kind is None or own is None or own.name == kind.name:
        return reader
    names = [name for name in kind.tf1_names if name in reader.shapes]
    if not names:
        return reader
    logging.warning("`%s` holds transformers' %s (a %s head), not %s's head: %s not read into %s.", reader.prefix,
                    reader.architecture, own.name, kind.name, ", ".join(names), type(model).__name__)
    return reader.without(names)


def init_from_checkpoint(model, path, allow_missing_heads=True):
    """Restores `model` from any source: TF1 prefix, release dir, `.tar.gz`, TF-Hub TF1 module, our TF2 ckpt,
    a TF2 SavedModel of tf-models' AlbertEncoder, a keras-hub preset or a Hugging Face directory.

    Args:
        model: `AlbertModel`, `AlbertPretrainer` or a task model (anything with an `encoder`).
        path: str, see `resolve_source`.
        allow_missing_heads: bool, a head of `model` absent from the source keeps its initial values (e.g.
            fine-tuning from a pretraining checkpoint). Heads in the source that `model` lacks are ignored
            (logged).

    Returns:
        `LoadResult`.
    """
    with resolve_source(path) as source:
        return restore_source(model, source, allow_missing_heads)


def load_pretrained(model_cls, path, config=None, allow_missing_heads=True, **model_kwargs):
    """Builds `model_cls(config, **model_kwargs)` and restores it from `path`.

    Args:
        model_cls: `AlbertModel`, `AlbertPretrainer` or a task model class (taking the config first).
        path: str, any source `resolve_source` accepts.
        config: `AlbertConfig`, dict or JSON path; default: the `albert_config.json` found with the source.
        allow_missing_heads: bool, see `init_from_checkpoint`.
        **model_kwargs: more constructor arguments (e.g. `num_labels`).

    Returns:
        The model, with weights.
    """
    with resolve_source(path) as source:
        if config is None:
            if source.config_file is None:
                reason = source.config_note or (f"no `albert_config.json` found with checkpoint source `{path}` "
                                                f"(checkpoint `{source.checkpoint_prefix}`).")
                raise InputError(f"No config for `{path}`: {reason} Pass `config=`.")
            config = source.config_file
        model_kwargs = _source_labels(model_cls, source, model_kwargs)
        model = model_cls(config, **model_kwargs)   # Every model class accepts a config, dict or JSON path.
        restore_source(model, source, allow_missing_heads)
    return model


def _source_labels(model_cls, source, model_kwargs):
    """`model_kwargs` with `num_labels` (when not given) taken from the rows of the source's head of this class's
    kind, and `labels` (for a class that takes them) from a Hugging Face `config.json`'s `id2label`; a fine-tuned
    3-label head then loads as one without `num_labels=3`."""
    kind = registry.kind_of(model_cls)
    if kind is None or kind.labels_variable is None:
        return model_kwargs
    kwargs = dict(model_kwargs)
    if kwargs.get("num_labels") is None:
        try:
            num_labels = reader_lib.reader_num_labels(reader_lib.open_reader(source), [kind])
        except InputError:
            num_labels = None   # The restore that follows names what is wrong with the source.
        if num_labels is not None:
            kwargs["num_labels"] = num_labels
    if "labels" in getattr(model_cls, "_CONFIG_ARGUMENTS", ()) and kwargs.get("labels") is None:
        labels = hf.labels_of(source.directory, kwargs.get("num_labels")) if source.layout == "hf_model" else None
        if labels is not None:
            kwargs.update(labels=labels, num_labels=len(labels))
    return kwargs
