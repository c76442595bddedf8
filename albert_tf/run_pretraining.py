"""`python -m albert_tf.run_pretraining`: the original's `run_pretraining.py` (MLM + SOP), installed with the package.
`--helpfull` lists its flags; the command is declared in its task folder (`albert_tf.commands`)."""

from albert_tf import commands

if __name__ == "__main__":
    commands.run("run_pretraining")
