"""A runner started as a user starts it, and a signal sent to it once its training loop runs (the signal tests of
both backends: tests/training/test_interrupts.py, run under each)."""

import os
import re
import signal
import subprocess
import sys

from albert_tf.training import loop
from glue_fixtures import REPO

# The classifier's command line for a run that never ends by itself (100000 steps, no checkpoint before a signal).
def endless_classifier_args(glue_root, model_files, out_dir):
    return ["--task_name=SST-2", f"--data_dir={glue_root}", f"--output_dir={out_dir}",
            f"--albert_config_file={model_files['config_file']}", f"--spm_model_file={model_files['spm']}",
            "--max_seq_length=32", "--train_batch_size=4", "--train_step=100000", "--warmup_step=1",
            "--save_checkpoints_steps=50000", "--iterations_per_loop=20", "--learning_rate=1e-4", "--do_train"]


def start(script, args, cwd, **env):
    """`python <script> <args>` from the repository's root scripts, stdout and stderr together."""
    return subprocess.Popen([sys.executable, os.path.join(REPO, script), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **env), cwd=str(cwd))


def interrupt_when_training(proc, signum, timeout=120):
    """Sends `signum` after the first loop's progress line (within a loop); `(exit code, everything printed)`."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if re.search(r"step \d+/100000 loss", line):
            proc.send_signal(signum)
            break
    out = "".join(lines) + proc.communicate(timeout=timeout)[0]
    return proc.returncode, out


def interrupted_step(out):
    """The step of the last line `interrupted at step N; the same command resumes`; AssertionError otherwise."""
    last = out.strip().splitlines()[-1]
    assert last.startswith("interrupted at step ") and last.endswith("; the same command resumes"), out[-3000:]
    return int(last.split("interrupted at step ")[1].split(";")[0])


def ctrl_c_then_sigterm(glue_root, model_files, tmp_path, **env):
    """`run_classifier.py --do_train` (an endless run) stopped by Ctrl-C, then the same command stopped by SIGTERM:
    each gives one line and exit 130 / 143, no traceback, a checkpoint at its step and nothing temporary left; the
    second resumes from the first. Returns the second run's output."""
    out_dir = tmp_path / "out"
    args = endless_classifier_args(glue_root, model_files, out_dir)
    code, out = interrupt_when_training(start("run_classifier.py", args, tmp_path, **env), signal.SIGINT)
    assert code == 130, out[-3000:]
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    step = interrupted_step(out)
    assert step >= 20
    assert [s for s, _ in loop.list_checkpoints(str(out_dir))] == [step]
    assert not [name for name in os.listdir(out_dir) if "tmp" in name]

    code, out = interrupt_when_training(start("run_classifier.py", args, tmp_path, **env), signal.SIGTERM)
    assert code == 143, out[-3000:]
    assert "Resuming from" in out and "Traceback" not in out
    later = interrupted_step(out)
    assert later > step and [s for s, _ in loop.list_checkpoints(str(out_dir))] == [step, later]
    return out
