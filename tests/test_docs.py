"""Every `python` and shell code block of README.md and docs/*.md runs as written, or is marked as not tested.

The convention (docs/testing.md): HTML comment lines directly above a block's opening fence say
`<!-- not tested: <reason> -->` (the block is not run) or `<!-- test fixture: <name>, ... -->` (the block runs
after the named files of `tests/doc_fixtures.py` are written into its directory). The fast tier parses the
files only; the `e2e` tier runs each block in a fresh process in a directory of its own.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import KNOWN_FIXTURES, parse_blocks

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 230
FIRST_BLOCK = "bash scripts/quickstart.sh\nbash scripts/test.sh"


def doc_files():
    """README.md and every docs/**/*.md (pages other helpers add are picked up here, docs/migrating/ too)."""
    return [ROOT / "README.md"] + sorted(page for page in (ROOT / "docs").rglob("*.md")
                                         if "node_modules" not in page.parts)   # docs/web's npm packages


def all_blocks():
    return [block for path in doc_files() for block in parse_blocks(path)]


def runnable_blocks():
    return [block for block in all_blocks() if block.kind and block.not_tested is None]


# --- fast tier: parse only -------------------------------------------------------------------------------------

def test_every_block_is_run_or_marked():
    """Markers are well formed, and every block that is run at least compiles (`compile`, `bash -n`)."""
    failures = []
    for block in all_blocks():
        failures += [f"{block.name}: {problem}" for problem in block.problems]
        if not block.kind or block.not_tested is not None:
            continue
        if block.kind == "python":
            try:
                compile(block.code, block.name, "exec")
            except SyntaxError as e:
                failures.append(f"{block.name}: not valid Python ({e.msg}, line {e.lineno}); fix it or mark it "
                                "`<!-- not tested: <reason> -->`")
        else:
            result = subprocess.run(["bash", "-n"], input=block.code, text=True, capture_output=True)
            if result.returncode:
                failures.append(f"{block.name}: not valid bash: {result.stderr.strip()}")
    assert not failures, "\n".join(failures)
    assert runnable_blocks(), "no block is run"


def test_parser_reads_fences_and_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n<!-- not tested: needs a TPU -->\n```bash\nrun --tpu\n```\n\n"
                    "<!-- test fixture: tiny_release, tiny_hf -->\n```python\nprint(1)\n```\n"
                    "- item\n\n  ```sh\n  echo indented\n  ```\n```json\n{}\n```\n"
                    "<!-- not tested: -->\n```py\nx\n```\n<!-- test fixture: nothing_such -->\n```bash\nls\n```\n",
                    encoding="utf-8")
    blocks = parse_blocks(page)
    assert [(b.line, b.kind, b.not_tested, b.fixtures) for b in blocks] == [
        (3, "bash", "needs a TPU", ()), (8, "python", None, ("tiny_release", "tiny_hf")),
        (13, "bash", None, ()), (16, None, None, ()), (20, "python", "?", ()),
        (24, "bash", None, ("nothing_such",))]
    assert blocks[2].code == "echo indented\n"
    assert [bool(b.problems) for b in blocks] == [False, False, False, False, True, True]


def test_readme_is_a_front_door():
    readme = ROOT / "README.md"
    lines = readme.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the limit is {README_MAX_LINES}"
    first = next(block for block in parse_blocks(readme) if block.kind)
    assert first.code.strip() == FIRST_BLOCK   # .ci/run and the README's promise: the two commands, first
    assert (ROOT / "docs" / "index.md").exists()


def test_index_lists_every_page():
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    pages = [page.relative_to(ROOT / "docs").as_posix() for page in sorted((ROOT / "docs").rglob("*.md"))
             if "node_modules" not in page.parts]   # docs/web's npm packages (`npm ci`)
    unlisted = [page for page in pages if page != "index.md" and f"]({page})" not in index]
    assert not unlisted, f"docs/index.md does not link {unlisted}"


def test_relative_links_resolve():
    """Every relative link of README.md and docs/*.md names a file that exists (anchors are not checked)."""
    missing = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            if not (path.parent / target.split("#")[0]).exists():
                missing.append(f"{path.relative_to(ROOT)}: {target}")
    assert not missing, "\n".join(missing)


# --- e2e tier: run every block ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fixture_store(tmp_path_factory):
    """Builds each fixture once, on first use: {name: directory holding its files}."""
    import doc_fixtures  # Deferred: it loads TensorFlow, which the fast tier does not need.

    assert sorted(doc_fixtures.FIXTURES) == sorted(KNOWN_FIXTURES)
    root = tmp_path_factory.mktemp("doc_fixtures")
    built = {}

    def get(name):
        if name not in built:
            out = root / name
            out.mkdir()
            doc_fixtures.FIXTURES[name](str(root), str(out))
            built[name] = out
        return built[name]

    return get


def _environment(tmp_path):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(ALBERT_TF_OFFLINE="1", HF_HUB_OFFLINE="1", ALBERT_TF_CACHE=str(tmp_path / "cache"),
               HF_HOME=str(tmp_path / "hf_home"), KAGGLEHUB_CACHE=str(tmp_path / "kaggle"),
               TF_CPP_MIN_LOG_LEVEL="2", MPLBACKEND="Agg")
    return env


@pytest.mark.e2e
@pytest.mark.parametrize("block", runnable_blocks(), ids=lambda block: block.name)
def test_block_runs_as_written(block, fixture_store, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for name in block.fixtures:
        shutil.copytree(fixture_store(name), work, dirs_exist_ok=True)
    if block.kind == "python":
        (work / "block.py").write_text(block.code, encoding="utf-8")
        command = [sys.executable, "block.py"]
    else:
        (work / "block.sh").write_text(block.code, encoding="utf-8")
        command = ["bash", "-euo", "pipefail", "block.sh"]
    result = subprocess.run(command, cwd=work, env=_environment(tmp_path), capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, (f"{block.name} exited {result.returncode}:\n{block.code}\n--- output ---\n"
                                    + (result.stdout + result.stderr)[-4000:])
