#!/usr/bin/env bash
# Checks the install commands with pip's resolver (`pip install --dry-run --report`: nothing is installed into the
# environments checked; the dry runs only read the registry):
#   1. an empty environment: `pip install .` (CPU), `pip install '.[and-cuda]'` (GPU), and the TPU VM's two
#      commands each resolve to exactly one TensorFlow distribution, without tf-models-official, opencv,
#      pycocotools or kaggle;
#   2. each lock (locks/oldest.txt on Python 3.11, locks/newest.txt on Python 3.12) resolves with its extras to
#      exactly one TensorFlow, the one it pins;
#   3. a user's environment that already has TensorFlow 2.21 and tensorflow-text 2.21.1 (a scratch virtual
#      environment with those two installed, or USER_PYTHON=<its interpreter>): `pip install .` keeps both, and
#      so does `pip install '.[test,serving]'`. pip's own lines of that resolution are printed.
# Needs the package registry, so it is run by hand (the test suite stays offline). Work files go to a temporary
# directory, removed at the end; the exit status is non-zero if a check fails.
#   PYTHON=python3.11 PYTHON_NEWEST=python3.12 USER_PYTHON= bash scripts/check_install.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
quiet_index() { grep -v "is ignored: it is neither a file nor a directory" >&2 || true; }

find_python() {  # find_python <major.minor>: an interpreter of that version on PATH or among pyenv's
  local version=$1 v
  if "python$version" -c "" 2>/dev/null; then command -v "python$version"; return; fi
  if command -v pyenv >/dev/null; then
    v=$(pyenv versions --bare | grep -E "^${version//./\\.}(\.[0-9]+)?$" | sort -V | tail -1)
    if [ -n "$v" ]; then echo "$(pyenv root)/versions/$v/bin/python"; return; fi
  fi
  echo "no Python $version found" >&2
  return 1
}

resolve() {  # resolve <python> <report name> <pip install arguments...>: a dry run from an empty environment
  local python=$1 name=$2
  shift 2
  "$python" -m pip install -q --dry-run --ignore-installed --report "$work/$name.json" "$@" \
    2> >(quiet_index) >/dev/null
}

echo "pip: $("$PYTHON" -m pip --version)"
resolve "$PYTHON" cpu .
resolve "$PYTHON" gpu '.[and-cuda]'
resolve "$PYTHON" tpu-1 -r requirements-tpu.txt
resolve "$PYTHON" tpu-2 --no-deps "tensorflow-text~=2.20.0" .
PYTHON_OLDEST=${PYTHON_OLDEST:-$(find_python 3.11)}
PYTHON_NEWEST=${PYTHON_NEWEST:-$(find_python 3.12)}
resolve "$PYTHON_OLDEST" lock-oldest -c locks/oldest.txt '.[test,serving,beam,hub,lite]'
resolve "$PYTHON_NEWEST" lock-newest -c locks/newest.txt '.[test,serving,hub,lite]'

# 3. The user's environment with TensorFlow 2.21 (made here unless USER_PYTHON names one).
if [ -z "${USER_PYTHON:-}" ]; then
  "$PYTHON_NEWEST" -m venv "$work/user"
  USER_PYTHON=$work/user/bin/python
  "$USER_PYTHON" -m pip install -q --upgrade pip 2> >(quiet_index)
  echo "installing tensorflow==2.21.0 tensorflow-text==2.21.1 into a scratch environment (a few minutes)"
  "$USER_PYTHON" -m pip install -q tensorflow==2.21.0 tensorflow-text==2.21.1 2> >(quiet_index)
fi
echo "user environment: $("$USER_PYTHON" -m pip list 2>/dev/null | grep -iE '^(tensorflow|tensorflow-text|keras|numpy) ' | tr -s ' ' | paste -sd ';')"
for extras in "" "[test,serving]"; do
  echo "\$ pip install --dry-run '.$extras'   (in the user environment)"
  "$USER_PYTHON" -m pip install --dry-run --report "$work/user$extras.json" ".$extras" 2> >(quiet_index) \
    | grep -E "^(Would install|Requirement already satisfied: (tensorflow|tensorflow-text|keras|numpy)[ =<>~])" \
    | sed 's/^/    /'
done

"$PYTHON" - "$work" <<'PY'
import json, os, sys

work = sys.argv[1]
TENSORFLOW = {"tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-tpu", "tensorflow-intel",
              "tensorflow-macos", "tensorflow-aarch64", "tensorflow-cpu-aws", "tensorflow-rocm", "intel-tensorflow",
              "tf-nightly", "tf-nightly-cpu", "tf-nightly-gpu", "tf-nightly-tpu"}
HEAVY = ("tf-models-official", "tf-keras", "opencv", "pycocotools", "kaggle")
TF_MODELS = ("tf-models-official", "tf-keras")  # what no lock may hold (the tests' references are stored)


def installs(*names):
    packages = {}
    for name in names:
        with open(os.path.join(work, name + ".json")) as f:
            for item in json.load(f)["install"]:
                meta = item["metadata"]
                packages[meta["name"].lower().replace("_", "-")] = meta["version"]
    return packages


def lock_pin(path, name):
    with open(path) as f:
        pins = dict(line.strip().split("==") for line in f if "==" in line and not line.startswith("#"))
    return {k.lower().replace("_", "-"): v for k, v in pins.items()}[name]


platforms = [
    ("CPU  `pip install .`", ("cpu",), "tensorflow", None, HEAVY),
    ("GPU  `pip install '.[and-cuda]'`", ("gpu",), "tensorflow", None, ()),
    ("TPU  `pip install -r requirements-tpu.txt` + `pip install --no-deps 'tensorflow-text~=2.20.0' .`",
     ("tpu-1", "tpu-2"), "tensorflow-tpu", None, ()),
    ("lock `pip install -c locks/oldest.txt '.[test,serving,beam,hub,lite]'`", ("lock-oldest",), "tensorflow",
     lock_pin("locks/oldest.txt", "tensorflow"), TF_MODELS),
    ("lock `pip install -c locks/newest.txt '.[test,serving,hub,lite]'`", ("lock-newest",), "tensorflow",
     lock_pin("locks/newest.txt", "tensorflow"), TF_MODELS),
]
failed = False
for title, reports, expected, version, refused in platforms:
    packages = installs(*reports)
    tf = sorted(f"{n}=={v}" for n, v in packages.items() if n in TENSORFLOW)
    heavy = sorted(f"{n}=={v}" for n, v in packages.items() if n.startswith(HEAVY))
    problems = []
    if [t.split("==")[0] for t in tf] != [expected]:
        problems.append(f"expected exactly {expected}, got {tf}")
    elif version and tf != [f"{expected}=={version}"]:
        problems.append(f"expected {expected}=={version}, got {tf}")
    if refused and [h for h in heavy if h.startswith(refused)]:
        problems.append(f"heavy packages: {[h for h in heavy if h.startswith(refused)]}")
    failed |= bool(problems)
    print(f"{title}\n  {len(packages)} packages; TensorFlow: {', '.join(tf) or 'none'}; "
          f"{'libtpu: ' + packages['libtpu'] + '; ' if 'libtpu' in packages else ''}"
          f"tf-models-official/tf-keras/opencv/pycocotools/kaggle: {', '.join(heavy) or 'none'}\n"
          f"  {'FAIL: ' + '; '.join(problems) if problems else 'ok'}")
    print("  " + " ".join(sorted(packages)))
for extras in ("", "[test,serving]"):
    packages = installs("user" + extras)
    changed = sorted(f"{n}=={v}" for n, v in packages.items() if n in TENSORFLOW | {"tensorflow-text"})
    print(f"user environment with TensorFlow 2.21 `pip install .{extras}`\n  would install {len(packages)} packages: "
          f"{' '.join(sorted(packages))}\n  {'FAIL: it replaces ' + ', '.join(changed) if changed else 'ok: keeps tensorflow and tensorflow-text'}")
    failed |= bool(changed)
sys.exit(1 if failed else 0)
PY
