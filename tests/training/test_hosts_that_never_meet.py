"""Processes of a JAX run that never meet (`KERAS_DISTRIBUTION_NUM_PROCESSES=2` with the second process never
started, or both given id 0): one line naming the variables and `ALBERT_HOSTS_TIMEOUT` within that time, and
SIGTERM ends the wait at once (exit 143, one line). Each process is a fresh `python` that only initialises.

The hosts are JAX's (`keras.distribution.initialize`): CI runs this file in the backends tier under
KERAS_BACKEND=jax."""

import os
import signal
import socket
import subprocess
import sys
import time

import keras
import pytest

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="JAX's processes")]

CODE = ("from absl import logging; logging.set_verbosity('info'); from albert_tf.training import jax_distribution; "
        "print(jax_distribution.initialize_processes())")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(port, process_id, timeout=8):
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2", ALBERT_HOSTS_TIMEOUT=str(timeout),
               KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}", KERAS_DISTRIBUTION_NUM_PROCESSES="2",
               KERAS_DISTRIBUTION_PROCESS_ID=str(process_id))
    return subprocess.Popen([sys.executable, "-c", CODE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _last_line(err):
    return [line for line in err.splitlines() if line.strip()][-1]


def test_a_missing_process_ends_in_one_line_within_the_timeout():
    start = time.time()
    proc = _start(_free_port(), 0)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-3000:]
    line = _last_line(err)
    assert "did not all meet" in line and "ALBERT_HOSTS_TIMEOUT" in line and "within 8 s" in line, err[-3000:]
    assert time.time() - start < 90


def test_two_processes_with_one_id_end_in_one_line():
    port = _free_port()
    procs = [_start(port, 0), _start(port, 0)]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert any(proc.returncode != 0 for proc in procs), outputs
    for proc, (_, err) in zip(procs, outputs):
        if proc.returncode != 0:
            line = _last_line(err)
            assert "did not all meet" in line or "could not meet" in line, err[-3000:]
            assert "KERAS_DISTRIBUTION_PROCESS_ID" in line, err[-3000:]


def test_sigterm_ends_the_wait():
    proc = _start(_free_port(), 0, timeout=300)
    seen = []
    for line in proc.stderr:            # until the process waits for process 1, its signal handlers installed
        seen.append(line)
        if "Waiting up to 300 s" in line:
            break
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    err = "".join(seen) + err
    assert proc.returncode == 143, err[-3000:]
    assert "interrupted while waiting for the other processes" in _last_line(err), err[-3000:]
