"""The child process of `albert_tf.training.export_process`: the export stage of a run under
`KERAS_BACKEND=tensorflow` (its parent sets it), from the request its parent wrote; the result goes to a JSON file.

    python -m albert_tf.training.export_child REQUEST_JSON RESULT_JSON
"""

import dataclasses
import json
import sys

from albert_tf import options as options_lib
from albert_tf.errors import InputError
from albert_tf.fileio import write_text_atomic
from albert_tf.training import driver
from albert_tf.training.export_process import named, rebuilt


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if len(argv) != 3:
        raise SystemExit("usage: python -m albert_tf.training.export_child REQUEST_JSON RESULT_JSON")
    with open(argv[1]) as f:
        request = json.load(f)
    options = dataclasses.replace(rebuilt(named(request["options_class"]), request["options"]),
                                  do_train=False, do_eval=False, do_predict=False)
    # One device: the strategies of the parent's flags are for its training, not for tracing an export.
    runtime = dataclasses.replace(rebuilt(options_lib.RuntimeOptions, request["runtime"]), strategy="one_device",
                                  use_tpu=False)
    try:
        result = driver.export_stage(named(request["task"]), options, runtime)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    write_text_atomic(argv[2], json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
