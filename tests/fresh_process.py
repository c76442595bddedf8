"""Runs a test's measurement in a fresh Python process with the TensorFlow settings it needs.

TensorFlow reads its CPU allocator and oneDNN settings once, when it loads. Its default CPU allocator keeps
memory statistics (`tf.config.experimental.get_memory_info("CPU:0")`) only where oneDNN is on, which
TensorFlow decides by CPU model: on by default on some Intel CPUs, off on AMD ones. A test that reads those
statistics therefore runs its measurement here, in a process started with `TF_CPU_ALLOCATOR_USE_BFC=1` (the
BFC allocator, which keeps them on every CPU, with oneDNN on or off), so it measures the same way on every
machine.
"""

import json
import os
import subprocess
import sys

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))

_CHILD = """
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
module = importlib.import_module(sys.argv[2])
result = getattr(module, sys.argv[3])(*json.loads(sys.argv[4]))
print("RESULT " + json.dumps(result))
"""


def run_measurement(module, function, *args, env=None, timeout=600):
    """`module.function(*args)` (JSON-able arguments and result) in a fresh process whose CPU allocator keeps
    memory statistics; `env` adds more environment variables. Returns the function's result."""
    child_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_CPU_ALLOCATOR_USE_BFC="1", **(env or {}))
    proc = subprocess.run([sys.executable, "-c", _CHILD, TESTS_DIR, module, function, json.dumps(list(args))],
                          capture_output=True, text=True, env=child_env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(lines[-1][len("RESULT "):])


def same_cpu_backend():
    """`{"TF_ENABLE_ONEDNN_OPTS": "0" or "1"}`: the oneDNN setting this process's TensorFlow runs with.

    The commands pick oneDNN on x86-64 CPUs with AVX2 when the variable is unset (`albert_tf.commands.app.pick_cpu_backend`)
    while this process keeps TensorFlow's own default (off on AMD CPUs): a test that compares a command's numbers
    with this process's to a tight tolerance gives the command this environment, so both run the same kernels.
    """
    import tensorflow  # noqa: F401  (loads TensorFlow, which has then read the variable)
    from tensorflow.python.util import _pywrap_util_port

    return {"TF_ENABLE_ONEDNN_OPTS": "1" if _pywrap_util_port.IsMklEnabled() else "0"}
