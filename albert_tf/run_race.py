"""`python -m albert_tf.run_race`: the original's `run_race.py` (RACE), installed with the package.
`--helpfull` lists its flags; the command is declared in its task folder (`albert_tf.commands`)."""

from albert_tf import commands

if __name__ == "__main__":
    commands.run("run_race")
