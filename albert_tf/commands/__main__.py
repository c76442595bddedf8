"""`python -m albert_tf.commands NAME [--flags]`: the command NAME (`albert-export`, `run_classifier`, ...), as
its console script or door runs it."""

import sys

from albert_tf import commands

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: python -m albert_tf.commands NAME [--flags]; NAME is one of "
                 f"{', '.join(sorted(commands.declarations()))}")
    sys.argv[0] = sys.argv.pop(1)
    commands.run(sys.argv[0])
