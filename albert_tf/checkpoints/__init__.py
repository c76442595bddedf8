"""ALBERT weights in every published form (TF1 releases, tarballs, TF-Hub TF1 modules, TF2 SavedModels of
tf-models' AlbertEncoder, keras-hub presets, Hugging Face directories) and ours, in and out of Keras.

Public API:
    load_pretrained(model_cls, path, config=None, allow_missing_heads=True, **model_kwargs) -> model
    init_from_checkpoint(model, path, allow_missing_heads=True) -> LoadResult
    restore_checkpoint(model, prefix, allow_missing_heads=False) -> LoadResult (either checkpoint format)
    init_groups_from_group0(model, path) -> {name: source name}
    resolve_source(path) -> context manager yielding ResolvedSource
    open_reader(source) -> reader with TF1 names (`shapes`, `read`) for any resolved source
    source_num_labels(path, kind=None) -> rows of a labelled head (`labels_variable`) in any source, or None
    save_tf1_checkpoint(model, prefix) -> prefix
    convert(input_path, output_dir, output_format="keras", model="auto", config_file=None, **model_kwargs)
"""

from albert_tf.checkpoints.convert import convert
from albert_tf.checkpoints.reader import (
    CheckpointReader,
    LoadResult,
    init_groups_from_group0,
    open_reader,
    source_num_labels,
)
from albert_tf.checkpoints.restore import (
    DamagedCheckpointError,
    init_from_checkpoint,
    load_pretrained,
    restore_checkpoint,
    restore_source,
)
from albert_tf.checkpoints.sources import ResolvedSource, resolve_source
from albert_tf.checkpoints.table import all_rows, model_targets
from albert_tf.checkpoints.writer import save_tf1_checkpoint
