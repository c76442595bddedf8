"""`python -m albert_tf.checkpoints`: the `albert-convert` command."""

from albert_tf.checkpoints.cli import main

if __name__ == "__main__":
    main()
