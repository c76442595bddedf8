#!/usr/bin/env bash
# Checks README's install commands with pip's resolver, installing nothing: for each platform (CPU, GPU,
# TPU VM) it runs `pip install --dry-run --ignore-installed --report` on the documented commands and checks
# that exactly one TensorFlow distribution (tensorflow, tensorflow-tpu, tensorflow-cpu, ...) would be
# installed, and that the plain install pulls no tf-models-official, opencv, pycocotools or kaggle.
# Needs the package registry, so it is run by hand (the test suite stays offline). Reports go to a
# temporary directory, removed at the end; the exit status is non-zero if a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

resolve() {  # resolve <report name> <pip install arguments...>
  local name=$1
  shift
  # (pip's warnings about unreadable local index locations of some machines' configuration are dropped.)
  "$PYTHON" -m pip install -q --dry-run --ignore-installed --report "$work/$name.json" "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2) >/dev/null
}

echo "pip: $("$PYTHON" -m pip --version)"
resolve cpu .
resolve gpu '.[and-cuda]'
resolve tpu-1 -r requirements-tpu.txt
resolve tpu-2 --no-deps tensorflow-text==2.20.1 .

"$PYTHON" - "$work" <<'PY'
import json, os, sys

work = sys.argv[1]
TENSORFLOW = {"tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-tpu", "tensorflow-intel",
              "tensorflow-macos", "tensorflow-aarch64", "tensorflow-cpu-aws", "tensorflow-rocm", "intel-tensorflow",
              "tf-nightly", "tf-nightly-cpu", "tf-nightly-gpu", "tf-nightly-tpu"}
HEAVY = ("tf-models-official", "opencv", "pycocotools", "kaggle")


def installs(*names):
    packages = {}
    for name in names:
        with open(os.path.join(work, name + ".json")) as f:
            for item in json.load(f)["install"]:
                meta = item["metadata"]
                packages[meta["name"].lower().replace("_", "-")] = meta["version"]
    return packages


platforms = [
    ("CPU  `pip install .`", ("cpu",), "tensorflow", True),
    ("GPU  `pip install '.[and-cuda]'`", ("gpu",), "tensorflow", False),
    ("TPU  `pip install -r requirements-tpu.txt` + `pip install --no-deps tensorflow-text==2.20.1 .`",
     ("tpu-1", "tpu-2"), "tensorflow-tpu", False),
]
failed = False
for title, reports, expected, plain in platforms:
    packages = installs(*reports)
    tf = sorted(f"{n}=={v}" for n, v in packages.items() if n in TENSORFLOW)
    heavy = sorted(f"{n}=={v}" for n, v in packages.items() if n.startswith(HEAVY))
    problems = []
    if [t.split("==")[0] for t in tf] != [expected]:
        problems.append(f"expected exactly {expected}, got {tf}")
    if plain and heavy:
        problems.append(f"heavy packages: {heavy}")
    failed |= bool(problems)
    print(f"{title}\n  {len(packages)} packages; TensorFlow: {', '.join(tf) or 'none'}; "
          f"{'libtpu: ' + packages['libtpu'] + '; ' if 'libtpu' in packages else ''}"
          f"tf-models-official/opencv/pycocotools/kaggle: {', '.join(heavy) or 'none'}\n"
          f"  {'FAIL: ' + '; '.join(problems) if problems else 'ok'}")
    print("  " + " ".join(sorted(packages)))
sys.exit(1 if failed else 0)
PY
