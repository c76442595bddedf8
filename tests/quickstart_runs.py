"""The quickstart as a user runs it, with the tiny budget of the quickstart tests (tests/quickstart/)."""

import os
import subprocess
import sys

# The quickstart as `albert-quickstart` runs it (its console script's door, without the installed script).
QUICKSTART = [sys.executable, "-m", "albert_tf.commands", "albert-quickstart"]

TINY_FLAGS = ["--vocab_size=600", "--max_seq_length=64", "--max_predictions_per_seq=10", "--dupe_factor=1",
              "--train_batch_size=16", "--num_train_steps=12", "--num_warmup_steps=2", "--hidden_size=32",
              "--num_hidden_layers=2", "--num_attention_heads=2", "--embedding_size=16",
              "--intermediate_size=64", "--iterations_per_loop=6", "--save_checkpoints_steps=6",
              "--num_workers=1", "--nojit_compile", "--finetune_steps=8", "--finetune_batch_size=16",
              "--finetune_max_seq_length=32"]


def run_cli(output_dir, *extra, env=None, flags=TINY_FLAGS):
    cmd = [*QUICKSTART, f"--output_dir={output_dir}", *flags, *extra]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **(env or {}))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc
