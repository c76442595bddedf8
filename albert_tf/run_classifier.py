"""`python -m albert_tf.run_classifier`: the original's `run_classifier.py` (GLUE), installed with the package.
`--helpfull` lists its flags; the command is declared in its task folder (`albert_tf.commands`)."""

from albert_tf import commands

if __name__ == "__main__":
    commands.run("run_classifier")
