"""A plain install works as README promises: `pip install <checkout>` with no extras into a bare virtual
environment, then, from a directory outside the checkout, every runner of the original release as
`python -m albert_tf.<runner> --helpfull`, and README's first Python block against a loopback server that
serves a small release tarball (a tiny pretrainer written with the original TF1 names, `doc_fixtures.tiny_release`).

pip installs with the machine's own configuration (its index, find-links and cache), so the test reads the same
wheels as any other install there. The checkout is copied first (tracked and untracked files, not the ignored
build outputs), so nothing is built inside it. On 2 cores with the wheels cached the whole test takes about
2 minutes, most of it pip.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from doc_blocks import parse_blocks
from loopback_http import files_app, serving

ROOT = Path(__file__).resolve().parents[1]
# Each runner and a flag of its own that `--helpfull` must list (the original's flags).
RUNNERS = {
    "run_classifier": "--task_name",
    "run_squad": "--version_2_with_negative",
    "run_squad_v1": "--doc_stride",
    "run_squad_v2": "--start_n_top",
    "run_race": "--max_qa_length",
    "run_pretraining": "--max_predictions_per_seq",
    "run_ner": "--labels",
    "create_pretraining_data": "--dupe_factor",
}
# Packages an extra brings; a plain install has none of them.
EXTRAS_ONLY = ("filelock", "huggingface_hub", "kagglehub", "keras_hub", "pytest", "apache_beam", "tqdm")
_IGNORED = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", "*.pyc",
                                  "quickstart_output", ".pytest_cache", "tmp")


def _run(command, cwd, env, timeout=300):
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stdout, result.stderr


def _clean_env(tmp):
    """The environment of a user's shell: none of the test suite's paths, a cache of its own, no proxy for
    the loopback server."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME") and not key.startswith(("ALBERT_TF_", "HF_"))}
    env.update(ALBERT_TF_CACHE=str(tmp / "cache"), HF_HOME=str(tmp / "hf_home"), TF_CPP_MIN_LOG_LEVEL="2",
               NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    return env


@pytest.fixture(scope="module")
def plain_venv(tmp_path_factory):
    """(python of a fresh venv holding `pip install <copy of the checkout>` with no extras, seconds taken)."""
    root = tmp_path_factory.mktemp("plain_install")
    source = root / "checkout"
    shutil.copytree(ROOT, source, ignore=_IGNORED)
    venv = root / "venv"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    code, out, err = _run([str(python), "-m", "pip", "install", "--quiet", str(source)], cwd=root,
                          env=_clean_env(root), timeout=900)
    assert code == 0, f"pip install {source} failed:\n{(out + err)[-4000:]}"
    return python, time.monotonic() - started


def _helpfull(python, cwd, env):
    """{runner: (exit code, stdout, stderr)} of `python -m albert_tf.<runner> --helpfull`, two at a time."""
    results, pending = {}, list(RUNNERS)
    while pending:
        batch, pending = pending[:2], pending[2:]
        procs = {runner: subprocess.Popen([str(python), "-m", f"albert_tf.{runner}", "--helpfull"], cwd=cwd, env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for runner in batch}
        for runner, proc in procs.items():
            out, err = proc.communicate(timeout=300)
            results[runner] = (proc.returncode, out, err)
    return results


@pytest.mark.e2e
def test_a_plain_install_runs_every_runner_and_the_readme_block(plain_venv, tmp_path):
    python, install_seconds = plain_venv
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = _clean_env(tmp_path)
    code, out, err = _run([str(python), "-c", "import albert_tf, importlib.util as u; print(albert_tf.__file__); "
                           f"print([m for m in {EXTRAS_ONLY!r} if u.find_spec(m)])"], outside, env)
    assert code == 0, err[-3000:]
    location, extras = out.splitlines()
    assert str(ROOT) not in location and "site-packages" in location, location   # The installed copy, not ours.
    assert extras == "[]", f"a plain install brought extras' packages: {extras}"

    helps = _helpfull(python, outside, env)
    for runner, flag in RUNNERS.items():
        code, out, err = helps[runner]
        assert code in (0, 1), f"{runner}: exit {code}\n{err[-3000:]}"   # absl's --helpfull exits 1.
        assert flag in out and ("--init_checkpoint" in out or runner == "create_pretraining_data"), \
            f"python -m albert_tf.{runner} --helpfull does not list {flag}:\n{(out + err)[-3000:]}"
    for runner, default in (("run_squad_v1", "false"), ("run_squad_v2", "true"), ("run_squad", "false")):
        help_text = helps[runner][1].split("--[no]version_2_with_negative:")[1].split("\n  --")[0]
        assert f"(default: '{default}')" in help_text, (runner, help_text)

    # The console script: `hf:` names need the hub extra, and say so in one line (before any network).
    code, out, err = _run([str(python.parent / "albert-download"), "hf:albert/albert-base-v2"], outside, env)
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("albert-download: error: `hf:albert/albert-base-v2` needs the "
                                         "`huggingface_hub` package"), err[-2000:]
    assert "release names and http(s) URLs need no extra" in last, last

    import doc_fixtures  # Deferred: it loads TensorFlow.

    fixture = tmp_path / "fixture"
    doc_fixtures.tiny_release(str(tmp_path / "fixture_root"), str(fixture))
    tarball = (fixture / "albert_base_v2.tar.gz").read_bytes()
    first = next(block for block in parse_blocks(ROOT / "README.md") if block.kind == "python")
    (outside / "readme_block.py").write_text(first.code, encoding="utf-8")
    started = time.monotonic()
    with serving(files_app({"/albert_models/albert_base_v2.tar.gz": tarball})) as server:
        env["ALBERT_TF_RELEASES_URL"] = server.url + "/albert_models"
        code, out, err = _run([str(python), "readme_block.py"], outside, env)
        gets = server.requests("GET", "/albert_models/albert_base_v2.tar.gz")
    assert code == 0, f"README's first Python block failed on a plain install:\n{first.code}\n{(out + err)[-4000:]}"
    assert len(gets) == 1   # Downloaded once, then read from the cache.
    lines = out.splitlines()
    assert lines[0].startswith("[[{") and "'token'" in lines[0] and "'score'" in lines[0], out
    assert int(lines[-1]) > 0, out
    print(f"plain install: pip {install_seconds:.0f} s; README block {time.monotonic() - started:.0f} s")
