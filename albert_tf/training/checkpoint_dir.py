"""A run's checkpoint directory, on every backend: its `model.ckpt-<step>` checkpoints, the newest intact one to
resume from, damaged copies and orphaned data moved aside, the `checkpoint` state file.

* A checkpoint is damaged when its files cannot be read (a truncated `.data-*` file, a checksum that does not
  match, a missing shard): it is moved aside to `model.ckpt-<step>-damaged.*` (never deleted, never replaced)
  and the one before it is restored. A checkpoint whose files read but whose weights have other shapes than
  the model's (another `--albert_config_file`) or other LoRA adapters is no damage: the run stops with one line
  naming the variable and both shapes, and nothing is renamed.
* `.data-*` files whose `.index` is gone are orphans: moved aside, or the run would write that step over them.
* The `checkpoint` state file is found again from the files on disk when a cut write damaged it or it names a
  checkpoint moved aside.

The backends' trainers (`tf_trainer`, `jax_trainer`) only assign the values; the choice of checkpoint is here.
"""

import os
import re

import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.reader import CheckpointReader
from albert_tf.checkpoints.restore import check_readable
from albert_tf.checkpoints.sources import list_checkpoints, state_file_target
from albert_tf.checkpoints.table import lora_adapters
from albert_tf.errors import InputError, tf_error_text
from albert_tf.fileio import copy_atomic, write_text_atomic

CHECKPOINT_NAME = "model.ckpt"
DAMAGED_SUFFIX = "-damaged"
_ORPHAN_DATA = re.compile(r"^(model\.ckpt-\d+)\.data-\d{5}-of-\d{5}$")

__all__ = ["CHECKPOINT_NAME", "DAMAGED_SUFFIX", "adapter_mismatch", "copy_checkpoint", "list_checkpoints", "move_aside",
           "move_orphans_aside", "remove_checkpoint", "restore_newest_intact", "state_file_latest",
           "write_state_file"]


def restore_newest_intact(restore, model, model_dir, is_chief, shape_mismatch=None):
    """Restores the newest intact `model.ckpt-<step>` of `model_dir` through `restore(prefix)`; returns its prefix,
    or None when `model_dir` has no checkpoint.

    Checkpoints are found from their own files (`list_checkpoints`), not from the `checkpoint` state file, which
    a cut write can damage; a damaged state file is written again from what is on disk. A damaged checkpoint is
    moved aside by the chief, with a warning naming both, and the one before it is restored: a job preempted while
    writing its last checkpoint goes on from the one before. When every checkpoint is damaged the run stops
    (`InputError`). `shape_mismatch(prefix)` (optional) returns the line for a checkpoint whose weights do not fit
    the model, checked, as the LoRA adapters (`adapter_mismatch`), before anything is assigned.
    """
    moved = move_orphans_aside(model_dir) if is_chief else []
    checkpoints = list_checkpoints(model_dir)
    for step, prefix in reversed(checkpoints):
        try:
            check_readable(prefix)
            mismatch = adapter_mismatch(model, prefix) or (shape_mismatch(prefix) if shape_mismatch else None)
            if mismatch is None:
                restore(prefix)
        except (InputError, tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:
            reason = str(e).splitlines()[0] if isinstance(e, InputError) else tf_error_text(e)
            aside = move_aside(prefix) if is_chief else prefix
            moved.append(prefix)
            logging.warning("Checkpoint %s is damaged (%s): moved aside to %s; trying the one before it.",
                            prefix, reason, aside)
            continue
        if mismatch is not None:
            raise InputError(mismatch)
        logging.info("Resuming from %s.", prefix)
        named = state_file_latest(model_dir) if is_chief else prefix
        if named != prefix:
            if named not in moved:   # a state file naming a checkpoint moved aside just now is not to blame
                logging.warning("The `checkpoint` state file of %s does not name %s (damaged or stale): writing it "
                                "again from the checkpoints on disk.", model_dir, prefix)
            write_state_file(model_dir, [p for s_, p in checkpoints if s_ <= step])
        return prefix
    if checkpoints:
        raise InputError(f"Every checkpoint in {model_dir} is damaged (moved aside to model.ckpt-<step>"
                         f"{DAMAGED_SUFFIX}.*): the same command now starts again from the initial weights; or "
                         "copy intact checkpoints back.")
    return None


def shape_mismatch_line(prefix, key, saved_shape, model_shape):
    """The line for a checkpoint weight whose shape is not the model's: names the weight, both shapes and the
    config flag, and says that the checkpoints are left as they are."""
    return (f"Checkpoint {prefix} holds {key} of shape {tuple(saved_shape)}, the model's is {tuple(model_shape)}: "
            "the model is built from another --albert_config_file than the run that wrote it. Resume with that "
            "run's config, or train in another output directory (the checkpoints are left as they are).")


def move_orphans_aside(model_dir):
    """Moves aside (`move_aside`) the `model.ckpt-<step>.data-*` files whose `.index` is gone (a deleted index,
    a copy that left it out), with a warning: the run would otherwise write that step again over them. Returns
    their prefixes."""
    if not tf.io.gfile.isdir(model_dir):
        return []
    names = tf.io.gfile.listdir(model_dir)
    prefixes = sorted({os.path.join(model_dir, match.group(1)) for match in map(_ORPHAN_DATA.match, names)
                       if match and match.group(1) + ".index" not in names})
    for prefix in prefixes:
        aside = move_aside(prefix)
        logging.warning("Checkpoint %s has no index (%s.index is missing): its data moved aside to %s.*; resuming "
                        "from the newest checkpoint before it.", prefix, os.path.basename(prefix), aside)
    return prefixes


def adapter_mismatch(model, prefix):
    """The error text when checkpoint `prefix` and `model` have LoRA adapters on a different number of layers or
    of another rank (resuming would leave the adapters out, start them again, or fail on their shapes), else
    None."""
    reader = CheckpointReader(prefix)
    saved = reader.tf2_adapters("model") if reader.is_tf2 else []   # TF1 names hold no adapters
    held = lora_adapters(model)
    if len(saved) != len(held) // 2:
        return (f"Checkpoint {prefix} holds LoRA adapters on {len(saved)} layers, the model on {len(held) // 2}: "
                "resume with the `lora_rank` and `lora_targets` of the run that wrote it, or train in another "
                "output directory.")
    if not saved:
        return None
    shape = reader.tf2_shape(f"model/{saved[0]}/lora_kernel_a")
    saved_rank, held_rank = (int(shape[-1]) if shape else None), int(held[0].shape[-1])
    if saved_rank == held_rank:
        return None
    return (f"Checkpoint {prefix} holds LoRA adapters of rank {saved_rank}, the model of rank {held_rank} "
            f"(--lora_rank={held_rank}): resume with --lora_rank={saved_rank}, or train in another output "
            "directory.")


def write_state_file(model_dir, prefixes):
    """Writes the `checkpoint` state file naming `prefixes` (the last one the latest) that still have their index:
    the `CheckpointState` text proto `tf.train.CheckpointManager` writes, with relative paths."""
    names = [os.path.basename(p) for p in prefixes if tf.io.gfile.exists(p + ".index")]
    write_text_atomic(os.path.join(model_dir, "checkpoint"), f'model_checkpoint_path: "{names[-1]}"\n'
                      + "".join(f'all_model_checkpoint_paths: "{name}"\n' for name in names))


def state_file_latest(model_dir):
    """The checkpoint the `checkpoint` state file names, or None (no file, or one that does not parse)."""
    return state_file_target(model_dir)


def move_aside(prefix):
    """Renames every file of checkpoint `prefix` to `<prefix>-damaged<suffix>` (the index first, so that the
    checkpoint is no longer listed), or to `<prefix>-damaged-2<suffix>`, `-3`, ... when an earlier damage of the
    same step was moved aside there (nothing moved aside is ever replaced); returns the new prefix."""
    directory, base = os.path.split(prefix)
    names = tf.io.gfile.listdir(directory)
    target, number = prefix + DAMAGED_SUFFIX, 1
    while any(name.startswith(os.path.basename(target) + ".") for name in names):
        number += 1
        target = f"{prefix}{DAMAGED_SUFFIX}-{number}"
    suffixes = sorted((name[len(base):] for name in names if name.startswith(base + ".")),
                      key=lambda suffix: suffix != ".index")
    for suffix in suffixes:
        tf.io.gfile.rename(prefix + suffix, target + suffix, overwrite=False)
    return target


def copy_checkpoint(prefix, target_prefix):
    """Copies every file of checkpoint `prefix` to `target_prefix`, each atomically, the index last."""
    directory = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    suffixes = sorted((filename[len(base):] for filename in tf.io.gfile.listdir(directory)
                       if filename.startswith(base + ".")), key=lambda suffix: suffix == ".index")
    for suffix in suffixes:
        copy_atomic(prefix + suffix, target_prefix + suffix)
    return [target_prefix + suffix for suffix in suffixes]


def remove_checkpoint(prefix):
    """Removes every file of checkpoint `prefix`."""
    directory = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    for filename in tf.io.gfile.listdir(directory):
        if filename.startswith(base + "."):
            tf.io.gfile.remove(os.path.join(directory, filename))
