# Sourced by quickstart.sh and test.sh: creates .venv if missing and installs albert_tf (editable) with the
# extras given as the first argument (e.g. `test,beam`; none for the plain install).
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".${1:+[$1]}"
