"""`<output_dir>/albert_run.json`: what a fine-tuning run is, written by the driver when it trains.

A multi-task export (`albert_tf.export.multitask`) reads it to rebuild each run's model without flags: the model
kind and its Keras config (`get_config`, before any adapter), how the encoder was trained (`lora_rank`,
`lora_targets`, `freeze_encoder`: a full fine-tune has its own encoder weights and cannot share one), the label
names, the SentencePiece model, the casing, `max_seq_length` and the text modes' lengths the run packed text
with, and a classifier's `threshold_to_export`.
"""

import json
import math
import os

import tensorflow as tf

from albert_tf import registry
from albert_tf.errors import InputError
from albert_tf.fileio import write_text_atomic
from albert_tf.text import modes as text_modes

FILE = "albert_run.json"
FORMAT = "albert_tf.run/1"


def path(output_dir):
    """The record of the run in `output_dir`."""
    return os.path.join(output_dir, FILE)


def encoder_mode(record):
    """How the run trained the encoder: `"lora"`, `"frozen"` or `"full"` (every weight fine-tuned)."""
    if record.get("lora_rank"):
        return "lora"
    return "frozen" if record.get("freeze_encoder") else "full"


def describe(model, options, runtime, labels=None):
    """The record of a run of `options` (a task's options) training `model` (before `apply_lora`)."""
    kind = registry.kind_of(model)
    threshold = getattr(options, "threshold_to_export", None)
    spm = runtime.spm_model_file
    return {"format": FORMAT, "kind": kind.name if kind is not None else None,
            "model_config": model.get_config(),
            "lora_rank": int(getattr(options, "lora_rank", 0) or 0),
            "lora_targets": list(getattr(options, "lora_targets", None) or []) or None,
            "freeze_encoder": bool(getattr(options, "freeze_encoder", False)),
            "labels": [str(label) for label in labels] if labels is not None else None,
            "spm_model_file": os.path.abspath(spm) if spm and "://" not in spm else spm,
            "do_lower_case": bool(getattr(options, "do_lower_case", True)),
            "max_seq_length": int(options.max_seq_length),
            "lengths": {name: int(getattr(options, name)) for name in text_modes.lengths() if hasattr(options, name)},
            "threshold": None if threshold is None or math.isnan(threshold) else float(threshold),
            "init_checkpoint": options.checked_init_path}


def write(output_dir, record):
    """Writes `record` (`describe`) into `output_dir` (a temporary name, then a rename)."""
    tf.io.gfile.makedirs(output_dir)
    write_text_atomic(path(output_dir), json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")


def read(output_dir):
    """The record of the run in `output_dir`; an `InputError` naming the file when it is absent or unreadable."""
    target = path(output_dir)
    if not tf.io.gfile.exists(target):
        raise InputError(f"`{output_dir}` has no `{FILE}`: not the output directory of a run that trained with this "
                         "version's runners (run_classifier.py, run_ner.py, ... with --do_train).")
    with tf.io.gfile.GFile(target) as f:
        try:
            record = json.loads(f.read())
        except ValueError as e:
            raise InputError(f"`{target}` is not JSON: {e}.") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise InputError(f"`{target}`: expected format {FORMAT!r}; re-train the run with this version.")
    return record
