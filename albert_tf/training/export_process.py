"""The export stage of a run under another Keras backend (JAX), in a TensorFlow process.

A SavedModel is a TensorFlow graph traced from the model's TensorFlow variables, so Keras' JAX backend cannot
write one. A runner under `KERAS_BACKEND=jax` given `export_dir` therefore runs its other stages in its own process
and the export stage in a child process under `KERAS_BACKEND=tensorflow`: the same task, options and runtime,
reading the checkpoint the run wrote (`model.ckpt-best`, else the latest; the TensorFlow runners' format,
`albert_tf.checkpoints.object_graph`), while the parent keeps the output directory's lock. The child's log goes to
the parent's stderr; its result (the export's entries, `export_path`, ...) comes back as JSON.

`python -m albert_tf.training.export_child REQUEST_JSON RESULT_JSON` is that child.
"""

import dataclasses
import importlib
import json
import os
import subprocess
import sys
import tempfile

from absl import logging

from albert_tf.errors import InputError


def _name(cls):
    return f"{cls.__module__}:{cls.__qualname__}"


def named(name):
    module, qualname = name.split(":")
    value = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def rebuilt(cls, fields):
    """A dataclass `cls` from the `dataclasses.asdict` of one of its instances (JSON's lists kept as given)."""
    return cls(**{f.name: fields[f.name] for f in dataclasses.fields(cls) if f.init and f.name in fields})


def export_in_tensorflow(task_class, options, runtime_options):
    """Runs the export stage of `task_class` with `options` and `runtime_options` in a child process under
    `KERAS_BACKEND=tensorflow`; returns the export's entries. `InputError` (one line) when the child fails; its own
    messages are above it on stderr."""
    request = {"task": _name(task_class), "options_class": _name(type(options)),
               "options": dataclasses.asdict(options), "runtime": dataclasses.asdict(runtime_options)}
    with tempfile.TemporaryDirectory(prefix="albert-export-") as scratch:
        request_path, result_path = os.path.join(scratch, "request.json"), os.path.join(scratch, "result.json")
        with open(request_path, "w") as f:
            json.dump(request, f)
        logging.info("Exporting %s from %s in a TensorFlow process (a SavedModel is a TensorFlow graph).",
                     options.export_dir, options.output_dir)
        code = subprocess.call([sys.executable, "-m", "albert_tf.training.export_child", request_path,
                                result_path], env=dict(os.environ, KERAS_BACKEND="tensorflow"))
        if code != 0 or not os.path.exists(result_path):
            raise InputError(f"The export stage (a child process under KERAS_BACKEND=tensorflow) failed with exit "
                             f"code {code}; its messages are above. The run's checkpoints in {options.output_dir} "
                             "are kept: `KERAS_BACKEND=tensorflow albert-export` exports them.")
        with open(result_path) as f:
            return json.load(f)
