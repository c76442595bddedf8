#!/usr/bin/env bash
# The main job on an embedded default: creates .venv if missing, installs albert_tf, then runs
# `albert-quickstart` (corpus from CPython's pydoc topics -> SentencePiece -> SOP/n-gram TFRecords ->
# pretraining on the CPU -> evaluation vs chance -> SavedModel export -> raw-text queries in a fresh process).
# Extra arguments go to albert-quickstart (e.g. `--output_dir=/tmp/qs`, `--overwrite`, `--help`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh ""
exec .venv/bin/albert-quickstart "$@"
