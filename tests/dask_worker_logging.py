"""Preloaded by the Dask workers of tests/tasks/pretraining/test_dask_writer.py (`dask worker --preload`, or the
`DASK_DISTRIBUTED__WORKER__PRELOAD` setting): absl's INFO lines go to the worker's standard error as
`[worker ADDRESS] MESSAGE`, among them the writer's `Shard K: ...` line, so the test reads which worker made
which shard. A Dask worker never parses absl's flags, so absl logs only warnings there otherwise.

The worker imports the writer here, at its start, rather than on its first task (TensorFlow loads in seconds).
"""

import importlib
import logging
import sys


class _WorkerAddress(logging.Filter):
    def __init__(self, worker):
        super().__init__()
        self.worker = worker

    def filter(self, record):
        record.worker = self.worker.address
        return True


def dask_setup(worker):
    importlib.import_module("albert_tf.tasks.pretraining.writer.beam")  # TensorFlow and Beam, at the start
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[worker %(worker)s] %(message)s"))
    handler.addFilter(_WorkerAddress(worker))
    absl_logger = logging.getLogger("absl")
    absl_logger.addHandler(handler)
    absl_logger.setLevel(logging.INFO)
    absl_logger.propagate = False
