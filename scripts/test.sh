#!/usr/bin/env bash
# The fast tier: every test of the library's calls, without the end-to-end command runs and long trainings
# (markers `e2e` and `slow`, which CI runs: .ci/run). Creates .venv if missing and installs albert_tf with the
# test extra (the live references the tests compare against) and the beam extra (the Apache Beam writer's tests);
# scripts/venv.sh says how to use another environment or a lock file. Runs on up to 4 cores (pytest-xdist, one
# worker per test file; ALBERT_TEST_WORKERS sets the number, 0 runs in this process).
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k checkpoints`, `-m e2e` for the end-to-end tier,
# `-m slow`): a later -m replaces the default one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh "${ALBERT_EXTRAS:-test,beam}"
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
cores=$("$VENV_PYTHON" -c 'import os; print(len(os.sched_getaffinity(0)))')
workers=${ALBERT_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}
parallel=()
if [ "$workers" -gt 1 ]; then
  parallel=(-n "$workers" --dist loadfile)
fi
exec "$VENV_PYTHON" -m pytest -q -m "not slow and not e2e" "${parallel[@]}" "$@"
