#!/usr/bin/env bash
# Creates .venv if missing, installs albert_tf with its test extra, runs the test suite.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh -k checkpoints`, `-m slow`).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
exec .venv/bin/python -m pytest -q -m "not slow" "$@"
