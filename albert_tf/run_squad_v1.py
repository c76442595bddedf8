"""`python -m albert_tf.run_squad_v1`: the original's `run_squad_v1.py` (SQuAD 1.1), installed with the package.
`--helpfull` lists its flags; the command is declared in its task folder (`albert_tf.commands`)."""

from albert_tf import commands

if __name__ == "__main__":
    commands.run("run_squad_v1")
