"""`python -m albert_tf.run_squad_v2`: the original's `run_squad_v2.py` (SQuAD 2.0), installed with the package.
`--helpfull` lists its flags; the command is declared in its task folder (`albert_tf.commands`)."""

from albert_tf import commands

if __name__ == "__main__":
    commands.run("run_squad_v2")
