"""Marks the tests whose results depend on the CPU's kernels, so CI can run them again with oneDNN flipped.

TensorFlow turns its oneDNN kernels on by default only on some Intel CPUs (`TF_ENABLE_ONEDNN_OPTS`); with
them off (AMD CPUs, older Intel ones) it runs Eigen kernels, another CPU allocator and another bfloat16
rounding. The modules below test numerics (against NumPy and the peers), memory and graph shape: `.ci/run`
runs the whole suite as the machine is, then the `cpu_kernels` tests again with `TF_ENABLE_ONEDNN_OPTS`
flipped, so a failure on the other kind of CPU shows up before it lands
(`bash scripts/test.sh -m cpu_kernels` runs them alone).
"""

import pytest

CPU_KERNEL_MODULES = (
    "test_modeling",            # the forward pass against a NumPy transcription of the original
    "test_mixed_precision",     # bfloat16 against float32
    "test_optimization",        # AdamW/LAMB against NumPy; the update's allocator peak
    "test_recompute",           # gradients against autodiff; the backward's allocator peak; op counts
    "test_squad_models",        # SQuAD heads against NumPy
    "test_training_loop",       # replicas and accumulation against one device
    "test_lite",                # LiteRT float and integer kernels against the Keras model
    "test_xla",                 # every task's steps under XLA against the same steps without it
)


def pytest_collection_modifyitems(config, items):
    del config
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in CPU_KERNEL_MODULES:
            item.add_marker(pytest.mark.cpu_kernels)
