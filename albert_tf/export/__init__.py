"""Export: SavedModels for TF Serving, LiteRT flatbuffers, and the `albert-export` command.

- `saved_model`: `export_saved_model` / `export_from_checkpoint` (TF Serving conventions: versioned
  directories, `serving_default`, `serve_examples`, `serve_text`, `tokenization_info`, warm-up requests).
- `warmup`: `assets.extra/tf_serving_warmup_requests`.
- `metadata`: `assets.extra/albert_export.json`, what an export is (its model kind, lengths, signatures).
- `session_model`: `SessionModel`, an export run through TF Serving's loader path (a TF1 session).
- `multitask`: `export_multitask` (`albert-export --tasks`): several LoRA or frozen-encoder runs in one SavedModel,
  the encoder once; `load(...).predict`.
- `lite`: LiteRT conversion and `LiteModel`.

What each model kind's signatures take and give is its `albert_tf.serving_spec.ServingSpec`, declared by the kind.
- `cli`: `albert-export`.

The names of `saved_model` are also names of this package (`albert_tf.export.export_saved_model`); they and
the submodules load on first use, so `import albert_tf.export` loads no TensorFlow.
"""

from albert_tf import lazy

_SAVED_MODEL_NAMES = ("SERVE_EXAMPLES", "SERVE_TEXT", "SERVING_DEFAULT", "TOKENIZATION_INFO", "backing_variables",
                      "example_feature_spec", "export_from_checkpoint", "export_saved_model", "model_kind", "next_version",
                      "serving_spec")
_SUBMODULES = ("cli", "lite", "metadata", "multitask", "saved_model", "session_model", "warmup")

__all__ = list(_SAVED_MODEL_NAMES) + list(_SUBMODULES)


def __getattr__(name):
    return lazy.attribute(globals(), name, dict.fromkeys(_SAVED_MODEL_NAMES, f"{__name__}.saved_model"), _SUBMODULES)


def __dir__():
    return lazy.names(globals())
