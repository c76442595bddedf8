"""A JAX run of two processes whose second process stops answering (SIGSTOP) mid-run: XLA's CPU collectives abort
the first after `ALBERT_HOSTS_TIMEOUT` seconds ("Termination timeout for all reduce", a core dump), and its last
line says what happened and that the same command resumes; the checkpoints written before stay intact.

The processes are JAX's: CI runs this file in the backends tier under KERAS_BACKEND=jax."""

import os
import signal
import socket
import subprocess
import sys
import time

import keras
import pytest

import jax_training_fixtures as fixtures
from albert_tf.checkpoints.restore import check_readable

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(keras.backend.backend() != "jax", reason="JAX's processes")]
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE = ("import sys; sys.path.insert(0, sys.argv[1]); import jax_training_fixtures as f; "
        "f.run_pretraining(sys.argv[2], sys.argv[3], num_train_steps=500, iterations_per_loop=1)")


def test_a_stopped_process_ends_the_other_in_one_line(tmp_path):
    root, output_dir = str(tmp_path), str(tmp_path / "out")
    fixtures.write_pretraining_data(root)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for index in range(2):
        env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2", ALBERT_HOSTS_TIMEOUT="15",
                   XLA_FLAGS="--xla_force_host_platform_device_count=2", KERAS_DISTRIBUTION_NUM_PROCESSES="2",
                   KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}", KERAS_DISTRIBUTION_PROCESS_ID=str(index))
        procs.append(subprocess.Popen([sys.executable, "-c", CODE, TESTS, root, output_dir], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    try:
        deadline = time.time() + 300
        while not os.path.exists(os.path.join(output_dir, "model.ckpt-3.index")):
            assert time.time() < deadline and procs[0].poll() is None, "no checkpoint of step 3"
            time.sleep(0.5)
        procs[1].send_signal(signal.SIGSTOP)
        _, err = procs[0].communicate(timeout=240)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
    assert procs[0].returncode != 0, err[-3000:]
    line = [line for line in err.splitlines() if line.strip()][-1]
    assert line.startswith("XLA aborted process 0 after step") and "the same command resumes" in line, err[-3000:]
    check_readable(os.path.join(output_dir, "model.ckpt-3"))
