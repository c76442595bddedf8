"""Preloaded by the Dask workers of tests/test_dask_writer.py (`dask worker --preload`): absl's INFO lines go to
the worker's log, among them the writer's `Shard K: ...` line, so the test reads which worker made which shard.

A Dask worker never parses absl's flags, so absl logs at its default level (warnings) there.
"""

from absl import logging


def dask_setup(worker):  # noqa: ARG001  (the hook Dask calls with the worker)
    logging.set_verbosity(logging.INFO)
