"""albert_tf: ALBERT for TensorFlow 2 / Keras 3, faithful to Google's original release.

`import albert_tf` does not import TensorFlow: the public names below are loaded on first use (PEP 562), so
a command can configure TensorFlow's logging before it starts. It does check that the environment holds a
single TensorFlow distribution (`albert_tf.install_check`).
"""

import importlib

from albert_tf import install_check

install_check.check_single_tensorflow()

__version__ = "0.1.0"

# Public name -> module that defines it.
_EXPORTS = {
    "PRESETS": "albert_tf.config",
    "AlbertConfig": "albert_tf.config",
    "AlbertModel": "albert_tf.models",
    "AlbertPretrainer": "albert_tf.models",
    "AlbertClassifier": "albert_tf.models",
    "AlbertRace": "albert_tf.models",
    "AlbertSquadV1": "albert_tf.models",
    "AlbertSquadV2": "albert_tf.models",
    "AlbertPreprocessor": "albert_tf.preprocessing",
    "pipeline": "albert_tf.pipelines",
}
_SUBMODULES = ("checkpoints", "config", "data", "export", "fileio", "layers", "models", "quickstart",
               "text_ops", "tokenization", "training")

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))
