"""`python -m albert_tf.run_squad`: SQuAD 1.1 or, with `--version_2_with_negative`, 2.0, installed with the package.
`--helpfull` lists its flags; the command is declared in its task folder (`albert_tf.commands`)."""

from albert_tf import commands

if __name__ == "__main__":
    commands.run("run_squad")
