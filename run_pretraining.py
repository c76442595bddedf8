"""The checkout's door to `python -m albert_tf.run_pretraining` (the same command, installed with the package)."""

from albert_tf import commands

if __name__ == "__main__":
    commands.run("run_pretraining")
