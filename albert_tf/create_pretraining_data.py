"""`python -m albert_tf.create_pretraining_data`: the original's `create_pretraining_data.py` (`albert-create-pretraining-data`), installed with the package.
`--helpfull` lists its flags; the command is declared in its task folder (`albert_tf.commands`)."""

from albert_tf import commands

if __name__ == "__main__":
    commands.run("create_pretraining_data")
