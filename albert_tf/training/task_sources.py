"""The sources and runtime of a fine-tuning task, shared by `classifier_task` and `squad_task`.

`resolve_task_sources`: config, SentencePiece model and TF-Hub init path; what is not given explicitly is taken
from the assets of the TF-Hub module (`albert_hub_module_handle`), as the original `run_classifier.py` /
`run_squad_v*.py` do. `task_strategy`: the dtype policy and `tf.distribute` strategy of the run.
"""

import tensorflow as tf

from albert_tf.config import AlbertConfig


def resolve_task_sources(stack, albert_config_file, hub_handle, spm_model_file, spm_missing_message=None):
    """Config, spm model file and hub init path, taking what is missing from the TF-Hub module's assets.

    Args:
        stack: `contextlib.ExitStack` that keeps the resolved hub module (possibly extracted) alive.
        albert_config_file: str or None, `albert_config.json`; None takes the hub module's asset.
        hub_handle: str or None, local TF-Hub TF1 module dir (or any `resolve_source` path).
        spm_model_file: str or None; None or "from_tf_hub" takes the hub module's asset when there is one.
        spm_missing_message: str or None; when set, a missing spm model is an error with this message
            (without it the spm model is optional, e.g. for a WordPiece vocab).

    Returns:
        `(AlbertConfig, spm_model_file or None, hub_init)` where `hub_init` is `hub_handle` or None.
    """
    hub_init = None
    if hub_handle:
        from albert_tf.checkpoints import resolve_source

        source = stack.enter_context(resolve_source(hub_handle))
        hub_init = hub_handle
        if not albert_config_file:
            if not source.config_file:
                raise ValueError(f"`albert_hub_module_handle` {hub_handle!r} has no `albert_config.json` asset: "
                                 "pass `albert_config_file`.")
            albert_config_file = source.config_file
        if not spm_model_file or spm_model_file == "from_tf_hub":
            if not source.spm_model_file:
                raise ValueError(f"`albert_hub_module_handle` {hub_handle!r} has no SentencePiece model asset: "
                                 "pass `spm_model_file`.")
            spm_model_file = source.spm_model_file
    if not albert_config_file:
        raise ValueError("`albert_config_file` must be set (or `albert_hub_module_handle` with a config asset).")
    if not tf.io.gfile.exists(albert_config_file):
        raise ValueError(f"`albert_config_file` {albert_config_file!r} not found.")
    if not spm_model_file and spm_missing_message:
        raise ValueError(spm_missing_message)
    if spm_model_file and not tf.io.gfile.exists(spm_model_file):
        raise ValueError(f"`spm_model_file` {spm_model_file!r} not found.")
    return AlbertConfig.from_json_file(albert_config_file), spm_model_file, hub_init


def task_strategy(strategy="one_device", use_tpu=False, tpu_name=None, tpu_zone=None, gcp_project=None,
                  master=None, num_tpu_cores=8, mixed_precision=None):
    """Sets the dtype policy (left as it is when `mixed_precision` is None) and returns the strategy.

    `num_tpu_cores` is checked against the TPU only with `use_tpu` (the original's flag pairing).
    """
    from albert_tf.training import distribution

    if mixed_precision:
        distribution.set_mixed_precision(mixed_precision)
    return distribution.get_strategy(strategy=strategy, use_tpu=use_tpu, tpu_name=tpu_name, tpu_zone=tpu_zone,
                                     gcp_project=gcp_project, master=master,
                                     num_tpu_cores=num_tpu_cores if use_tpu else None)
