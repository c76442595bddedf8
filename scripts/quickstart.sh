#!/usr/bin/env bash
# The main job on an embedded default: creates .venv if missing, installs albert_tf, then runs
# `albert-quickstart` (corpus and a labelled task from CPython's pydoc topics and docstrings -> SentencePiece ->
# SOP/n-gram TFRecords -> pretraining on the CPU -> evaluation vs chance -> fine-tuning with the GLUE runner, from
# the pretrained and from random weights -> SavedModel export -> served in a fresh process -> curves PNG).
# Extra arguments go to albert-quickstart (e.g. `--output_dir=/tmp/qs`, `--overwrite`, `--init=albert_base_v2`,
# `--help`).
set -euo pipefail
cd "$(dirname "$0")/.."
# The `quickstart` extra adds matplotlib for the curves PNG (without it the quickstart says so and draws none).
source scripts/venv.sh "quickstart"
exec .venv/bin/albert-quickstart "$@"
