# Sourced by quickstart.sh and test.sh: creates the virtual environment if missing and installs albert_tf
# (editable) with the extras given as the first argument (e.g. `test,beam`; none for the plain install).
#   ALBERT_VENV   the environment's folder (default .venv); ALBERT_PYTHON=$(which python) uses an existing
#                 environment's interpreter as it is (the user's own TensorFlow) and installs into it
#   PYTHON        the interpreter that creates the environment (default python3)
#   ALBERT_LOCK   a pip constraints file that pins every version (locks/oldest.txt, locks/newest.txt)
# The install is skipped when the environment already has it for this setup.cfg, extras and lock (a stamp file).
# Sets VENV_PYTHON to the environment's interpreter.
PYTHON=${PYTHON:-python3}
if [ -n "${ALBERT_PYTHON:-}" ]; then
  VENV_PYTHON=$ALBERT_PYTHON
else
  ALBERT_VENV=${ALBERT_VENV:-.venv}
  if [ ! -x "$ALBERT_VENV/bin/python" ]; then
    "$PYTHON" -m venv "$ALBERT_VENV"
    "$ALBERT_VENV/bin/python" -m pip install -q --upgrade pip
  fi
  VENV_PYTHON=$ALBERT_VENV/bin/python
fi
_albert_stamp="$("$VENV_PYTHON" -c 'import sys; print(sys.prefix)')/.albert_tf-install"
_albert_key="$(cat setup.cfg pyproject.toml ${ALBERT_LOCK:+"$ALBERT_LOCK"} | cksum) ${1:-} ${ALBERT_LOCK:-} $PWD"
if [ ! -f "$_albert_stamp" ] || [ "$(cat "$_albert_stamp")" != "$_albert_key" ]; then
  "$VENV_PYTHON" -m pip install -q ${ALBERT_LOCK:+-c "$ALBERT_LOCK"} -e ".${1:+[$1]}"
  echo "$_albert_key" > "$_albert_stamp"
fi
unset _albert_stamp _albert_key
