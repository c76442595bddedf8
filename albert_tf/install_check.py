"""Refuses a Python environment with two TensorFlow distributions installed.

`tensorflow`, `tensorflow-tpu`, `tensorflow-cpu`, ... are separate pip distributions that all write the same
`tensorflow/` package: with two installed, the one installed last overwrites the other's files (a TPU VM
then runs a build without TPU support, or a mix of both). pip does not prevent it: `tensorflow-text`,
for one, requires `tensorflow` and pulls it next to `tensorflow-tpu`. `check_single_tensorflow` reads only
the installed distributions' metadata, so it runs without importing TensorFlow.
"""

import importlib.metadata

# Distributions that install the `tensorflow` package. Some of them are, on some platforms, only a thin
# wrapper that depends on another one (e.g. `tensorflow` -> `tensorflow-intel` on Windows for TF < 2.16,
# `tensorflow` -> `tensorflow-cpu-aws` on Linux aarch64): those install no file under `tensorflow/` and are
# not counted.
TENSORFLOW_DISTRIBUTIONS = (
    "tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-tpu", "tensorflow-intel", "tensorflow-macos",
    "tensorflow-aarch64", "tensorflow-cpu-aws", "tensorflow-rocm", "intel-tensorflow", "tf-nightly",
    "tf-nightly-cpu", "tf-nightly-gpu", "tf-nightly-tpu",
)


class DuplicateTensorFlowError(ImportError):
    """Two distributions that write the `tensorflow` package are installed in one environment."""


def _writes_tensorflow_package(dist):
    record = dist.read_text("RECORD")
    if record is None:  # No RECORD (e.g. some system packagers): assume it installs what its name says.
        return True
    return any(line.startswith("tensorflow/") for line in record.splitlines())


def installed_tensorflow_distributions():
    """[(name, version)] of the installed distributions of `TENSORFLOW_DISTRIBUTIONS`.

    When more than one is installed, only those that write files under `tensorflow/` are kept (reading
    their file lists is skipped in the common case of one).
    """
    found = []
    for name in TENSORFLOW_DISTRIBUTIONS:
        try:
            found.append((name, importlib.metadata.distribution(name)))
        except importlib.metadata.PackageNotFoundError:
            continue
    if len(found) > 1:
        found = [(name, dist) for name, dist in found if _writes_tensorflow_package(dist)]
    return [(name, dist.version) for name, dist in found]


def check_single_tensorflow():
    """Raises `DuplicateTensorFlowError` naming the distributions and the fix if more than one is installed."""
    found = installed_tensorflow_distributions()
    if len(found) < 2:
        return
    names = [name for name, _ in found]
    # Keep the specialised build (tensorflow-tpu, -cpu, ...) when one is there: the plain `tensorflow` next
    # to it was pulled in by a dependency.
    keep_name, keep_version = next(((n, v) for n, v in found if n != "tensorflow"), found[0])
    listed = " and ".join(f"`{n}` {v}" for n, v in found)
    raise DuplicateTensorFlowError(
        f"albert_tf: {len(found)} TensorFlow distributions are installed in this environment: {listed}. They all "
        "write the `tensorflow` package, so the one installed last silently replaced the other's files. Keep "
        f"one, e.g.: `pip uninstall -y {' '.join(names)} && pip install --no-deps {keep_name}=={keep_version}` "
        "(on a TPU VM, then `pip install --no-deps -r requirements-tpu.txt`; see README's set-up section).")
