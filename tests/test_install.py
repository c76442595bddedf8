"""Tests of what `import albert_tf` does (no TensorFlow import, lazy public names, one TensorFlow distribution) and
of what installs it: the ranges of setup.cfg, the lock files that pin the tested sets, requirements-tpu.txt."""

import configparser
import importlib.metadata
import os
import subprocess
import sys

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, site=None):
    prefix = f"import sys; sys.path.insert(0, {str(site)!r})\n" if site else ""
    return subprocess.run([sys.executable, "-c", prefix + code], capture_output=True, text=True, env=ENV,
                          timeout=300)


def test_import_does_not_load_tensorflow_and_names_resolve_lazily():
    code = ("import sys, albert_tf\n"
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
            "names = dir(albert_tf)\n"
            "for n in ['AlbertConfig', 'PRESETS', 'AlbertModel', 'AlbertPretrainer', 'AlbertClassifier', 'AlbertRace',\n"
            "          'AlbertSquadV1', 'AlbertSquadV2', '__version__', 'models', 'tokenization']:\n"
            "    assert n in names, n\n"
            "assert albert_tf.AlbertConfig(vocab_size=10).vocab_size == 10\n"
            "from albert_tf import AlbertModel\n"
            "from albert_tf.models import AlbertModel as M\n"
            "assert AlbertModel is M and albert_tf.AlbertSquadV2.__name__ == 'AlbertSquadV2'\n"
            "assert 'tensorflow' in sys.modules\n"
            "try:\n"
            "    albert_tf.NoSuchThing\n"
            "except AttributeError as e:\n"
            "    print('ATTR', e)\n")
    result = _run(code)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ATTR module 'albert_tf' has no attribute 'NoSuchThing'" in result.stdout


def _fake_distribution(site, name, version, files):
    """A `<name>-<version>.dist-info` in `site` whose RECORD lists `files`."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files), encoding="utf-8")


@pytest.mark.parametrize("second", ["tensorflow-tpu", "tensorflow-cpu"])
def test_two_tensorflow_distributions_are_refused(tmp_path, second):
    _fake_distribution(tmp_path, "tensorflow", "2.20.0", ["tensorflow/__init__.py", "tensorflow/python/x.py"])
    _fake_distribution(tmp_path, second, "2.20.0", ["tensorflow/__init__.py", "tensorflow/core/y.so"])
    result = _run("import albert_tf", site=tmp_path)
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("albert_tf.install_check.DuplicateTensorFlowError: albert_tf: 2 TensorFlow")
    assert "`tensorflow` 2.20.0 and" in message and f"`{second}` 2.20.0" in message
    assert f"pip uninstall -y tensorflow {second} && pip install --no-deps {second}==2.20.0" in message


def test_a_wrapper_distribution_is_not_a_duplicate(tmp_path):
    # `tensorflow` as a thin wrapper that depends on `tensorflow-intel` installs nothing under tensorflow/.
    _fake_distribution(tmp_path, "tensorflow", "2.15.0", ["tensorflow-2.15.0.dist-info/METADATA"])
    _fake_distribution(tmp_path, "tensorflow-intel", "2.15.0", ["tensorflow/__init__.py"])
    result = _run("from albert_tf import install_check as c; import albert_tf; "
                  "print(c.installed_tensorflow_distributions())", site=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[('tensorflow-intel', '2.15.0')]"


# --- the declared ranges, the locks and the installed versions ------------------------------------------------

def _setup_cfg():
    parser = configparser.ConfigParser()
    parser.read(os.path.join(ROOT, "setup.cfg"))
    requires = [Requirement(line) for line in parser["options"]["install_requires"].split("\n") if line.strip()]
    extras = {name: [Requirement(line) for line in value.split("\n") if line.strip() and not line.startswith("#")]
              for name, value in parser["options.extras_require"].items()}
    return {canonicalize_name(r.name): r for r in requires}, extras


def _lock(name):
    with open(os.path.join(ROOT, "locks", name), encoding="utf-8") as f:
        pins = [line.strip().split("==") for line in f if line.strip() and not line.startswith("#")]
    return {canonicalize_name(n): Version(v) for n, v in pins}


def test_requirements_are_ranges_and_each_lock_pins_them_within():
    requires, extras = _setup_cfg()
    assert not [str(r) for r in requires.values() if any(s.operator == "==" for s in r.specifier)]
    tensorflow_range = SpecifierSet(">=2.20,<2.22")
    assert requires["tensorflow"].specifier == tensorflow_range
    assert requires["tensorflow-text"].specifier == tensorflow_range
    assert [str(r.specifier) for r in extras["and-cuda"]] == [str(tensorflow_range)]
    assert {str(r) for r in extras["serving"]} <= {str(r) for r in extras["test"]}
    locks = {name: _lock(name) for name in ("oldest.txt", "newest.txt")}
    assert {name: str(pins["tensorflow"]) for name, pins in locks.items()} == {
        "oldest.txt": "2.20.0", "newest.txt": "2.21.0"}
    for name, pins in locks.items():
        for requirement in list(requires.values()) + extras["test"] + extras["serving"]:
            key = canonicalize_name(requirement.name)
            assert key in pins, (name, key)
            assert pins[key] in requirement.specifier, (name, key, str(pins[key]), str(requirement.specifier))
        # tensorflow-text's compiled ops are built against one TensorFlow minor version.
        assert pins["tensorflow-text"].release[:2] == pins["tensorflow"].release[:2], name
        assert "tf-models-official" not in pins and "tf-keras" not in pins, name
    # The oldest set's versions are the lower bounds (a range claims no older version than a lock tests).
    for key in ("keras", "sentencepiece"):
        assert str(locks["oldest.txt"][key]) in {str(s.version) for s in requires[key].specifier}, key


def test_the_test_extra_pulls_no_tf_models_and_the_tpu_file_follows_the_ranges():
    requires, extras = _setup_cfg()
    names = {canonicalize_name(r.name) for r in extras["test"]}
    assert not names & {"tf-models-official", "tf-keras"}
    with open(os.path.join(ROOT, "requirements-tpu.txt"), encoding="utf-8") as f:
        tpu = {canonicalize_name(r.name): r for r in (Requirement(line.strip()) for line in f
                                                       if line.strip() and not line.startswith("#"))}
    assert tpu["tensorflow-tpu"].specifier.contains("2.20.0")
    for key, requirement in requires.items():
        if key not in ("tensorflow", "tensorflow-text"):  # --no-deps: tensorflow-tpu is the TensorFlow
            assert tpu[key].specifier == requirement.specifier, key


def test_this_environment_is_inside_the_declared_ranges():
    requires, _ = _setup_cfg()
    outside = []
    for key, requirement in requires.items():
        try:
            installed = importlib.metadata.version(key)
        except importlib.metadata.PackageNotFoundError:
            if key == "tensorflow":  # a specialised build (tensorflow-tpu, -cpu) is the TensorFlow here
                continue
            raise
        if installed not in requirement.specifier:
            outside.append(f"{key} {installed} (albert_tf is tested on {requirement.specifier})")
    assert not outside, outside
