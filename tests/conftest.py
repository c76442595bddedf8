"""Marks the tests whose results depend on the CPU's kernels, so CI can run them again with oneDNN flipped.

TensorFlow turns its oneDNN kernels on by default only on some Intel CPUs (`TF_ENABLE_ONEDNN_OPTS`); with
them off (AMD CPUs, older Intel ones) it runs Eigen kernels, another CPU allocator and another bfloat16
rounding. The modules below test numerics (against NumPy and the peers), memory and graph shape: `.ci/run`
runs the whole suite as the machine is, then the `cpu_kernels` tests again with `TF_ENABLE_ONEDNN_OPTS`
flipped, so a failure on the other kind of CPU shows up before it lands
(`bash scripts/test.sh -m cpu_kernels` runs them alone).

It also marks the modules that belong to the end-to-end tier (`e2e`) as a whole, and names the fast-tier tests
that take too long (docs/testing.md).
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
    "test_pipeline_length_buckets",   # batches at their own length against the same rows at the maximum
    "test_predict_text_lengths",      # `predict` on text at its own length against the ids at the maximum
    "test_serve_text_lengths",        # `serve_text` at the batch's length against `serving_default` at the maximum
)


# Modules whose every test runs a command in a subprocess or a whole training: the `e2e` tier (the tests elsewhere
# carry `@pytest.mark.e2e` themselves).
E2E_MODULES = (
    "test_quickstart",          # `albert-quickstart` runs and a 300-step training
    "test_ablations",           # benchmarks/ablations.py in a subprocess
    "test_cli",                 # every command's `--help` and start-up output, each in its own process
    "test_errors",              # every command's error lines and exit status, each in its own process
)


def pytest_collection_modifyitems(config, items):
    del config
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""
        if module in CPU_KERNEL_MODULES:
            item.add_marker(pytest.mark.cpu_kernels)
        if module in E2E_MODULES:
            item.add_marker(pytest.mark.e2e)


# --- the fast tier stays fast -----------------------------------------------------------------------------------
# `bash scripts/test.sh` runs `-m "not slow and not e2e"`; a test that starts a command in a subprocess or trains
# for more than a few seconds belongs to the `e2e` tier (docs/testing.md). The summary names the fast-tier tests
# over FAST_TEST_SECONDS (setup, call and teardown together: a module fixture counts in its first test).

FAST_TEST_SECONDS = 20.0
_durations = {}


def pytest_runtest_logreport(report):
    if "e2e" not in report.keywords and "slow" not in report.keywords:
        _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    del exitstatus
    markexpr = config.getoption("markexpr", "") or ""
    if "not e2e" not in markexpr:
        return
    slow = sorted(((t, n) for n, t in _durations.items() if t > FAST_TEST_SECONDS), reverse=True)
    if slow:
        terminalreporter.write_sep("-", f"fast-tier tests over {FAST_TEST_SECONDS:.0f} s: mark them e2e, or "
                                        "share their fixtures (docs/testing.md)")
        for seconds, nodeid in slow:
            terminalreporter.write_line(f"{seconds:7.1f} s  {nodeid}")
