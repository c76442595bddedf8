#!/usr/bin/env bash
# Creates .venv if missing, installs albert_tf with the test extra (the references the tests compare against)
# and the beam extra (the Apache Beam writer's tests), runs the test suite.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k checkpoints`, `-m slow`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh "test,beam"
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
exec .venv/bin/python -m pytest -q -m "not slow" "$@"
