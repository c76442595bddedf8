"""Google's ALBERT checkpoints (TF1 releases, tarballs, TF-Hub TF1 modules) and ours, in and out of Keras.

Public API:
    load_pretrained(model_cls, path, config=None, allow_missing_heads=True, **model_kwargs) -> model
    init_from_checkpoint(model, path, allow_missing_heads=True) -> LoadResult
    init_groups_from_group0(model, path) -> {name: source name}
    resolve_source(path) -> context manager yielding ResolvedSource
    save_tf1_checkpoint(model, prefix) -> prefix
    convert(input_path, output_dir, output_format="keras", model="auto", config_file=None, **model_kwargs)
"""

from albert_tf.checkpoints.convert import convert
from albert_tf.checkpoints.reader import (
    CheckpointReader,
    LoadResult,
    init_from_checkpoint,
    init_groups_from_group0,
    load_pretrained,
)
from albert_tf.checkpoints.sources import ResolvedSource, resolve_source
from albert_tf.checkpoints.table import TABLE, model_targets
from albert_tf.checkpoints.writer import save_tf1_checkpoint
