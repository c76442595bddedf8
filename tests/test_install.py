"""Tests of what `import albert_tf` does: no TensorFlow import, lazy public names, one TensorFlow distribution."""

import os
import subprocess
import sys

import pytest

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


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
