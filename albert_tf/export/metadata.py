"""`assets.extra/albert_export.json`: what an `albert-export` SavedModel is, written into the export itself.

`albert_tf.export.saved_model.export_saved_model` writes it into every export (beside TF Serving's warm-up
file, which TF Serving reads from the same folder; it ignores the other files there): the format, the model
kind (its `albert_tf.registry` name), the lengths and the casing it was exported with, its signatures and the
facts its serving spec adds (`ServingSpec.export_facts`). The pipelines read the kind from it
(`albert_tf.pipelines.ExportRunner`), never from the signature's output names.
"""

import json
import os

import tensorflow as tf

from albert_tf.errors import InputError

DIRECTORY = "assets.extra"
FILE = "albert_export.json"
FORMAT = "albert_tf.export/1"


def path(export_dir):
    """The metadata file of the SavedModel (version) directory `export_dir`."""
    return os.path.join(export_dir, DIRECTORY, FILE)


def write(export_dir, metadata):
    """Writes `metadata` (a dict, with `format` set here) into `export_dir`; returns the path."""
    target = path(export_dir)
    tf.io.gfile.makedirs(os.path.dirname(target))
    with tf.io.gfile.GFile(target, "w") as f:
        f.write(json.dumps(dict(metadata, format=FORMAT), indent=2, sort_keys=True))
    return target


def read(export_dir):
    """The metadata dict of the export `export_dir`; an `InputError` when it has none or another format."""
    target = path(export_dir)
    if not tf.io.gfile.exists(target):
        raise InputError(f"The export `{export_dir}` has no `{DIRECTORY}/{FILE}` (it was written by an earlier "
                         "version of albert_tf): re-export it with this version (`albert-export`).")
    with tf.io.gfile.GFile(target, "r") as f:
        try:
            metadata = json.loads(f.read())
        except ValueError as e:
            raise InputError(f"`{target}` is not JSON: {e}.") from e
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        found = metadata.get("format") if isinstance(metadata, dict) else None
        raise InputError(f"`{target}`: expected format {FORMAT!r}, found {found!r}; re-export it with this version.")
    return metadata
