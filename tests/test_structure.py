"""Structure rules of the package: no function over 80 lines (scripts/long_functions.py, with the allow-list
`scripts/long_functions_allow.txt`), no private Keras optimizer methods overridden or read, no import circle
(every import statement counts, those inside functions too), and the public names listed statically."""

import ast
import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "long_functions.py")
ALLOW = os.path.join(ROOT, "scripts", "long_functions_allow.txt")


def run_script(*args, cwd=ROOT):
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_no_function_over_80_lines_beyond_the_allow_list():
    proc = run_script("albert_tf", "--allow", ALLOW)
    assert proc.returncode == 0, "functions over 80 lines (or allow-list entries no longer long):\n" + proc.stdout


def test_script_reports_long_functions_and_stale_allow_entries(tmp_path):
    # A module written here, with lengths counted by hand: `long_one` spans 83 lines (its `def`, the two of
    # its nested `inner`, 80 statements), the method `Holder.method` 83 (its `def`, 82 statements) from
    # line 87, `short` 3.
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    source = (f"def long_one():\n    def inner():\n        return 1\n{body}\n\n\n"
              "class Holder:\n    def method(self):\n" + textwrap.indent(body, "    ") + "\n        y = 1\n"
              "        return y\n\n\ndef short():\n    a = 1\n    return a\n")
    module = tmp_path / "pkg" / "mod.py"
    module.parent.mkdir()
    module.write_text(source)
    proc = run_script("pkg", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"{os.path.join('pkg', 'mod.py')}:1: long_one 83",
        f"{os.path.join('pkg', 'mod.py')}:87: Holder.method 83"]
    allow = tmp_path / "allow.txt"
    allow.write_text("# comment\npkg/mod.py::long_one\npkg/mod.py::Holder.method\n")
    assert run_script("pkg", "--allow", str(allow), cwd=tmp_path).returncode == 0
    allow.write_text("pkg/mod.py::long_one\npkg/mod.py::Holder.method\npkg/mod.py::short\n")
    proc = run_script("pkg", "--allow", str(allow), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.strip() == f"pkg/mod.py::short: listed in {allow} but not over the limit"
    assert run_script("pkg", "--limit", "90", cwd=tmp_path).returncode == 0


def test_no_private_keras_optimizer_methods():
    pattern = re.compile(r"\._(backend_update_step|all_reduce_sum_gradients|get_variable_index|learning_rate)\b")
    found = []
    for root, dirs, names in os.walk(os.path.join(ROOT, "albert_tf")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if pattern.search(line):
                            found.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, ".git")), reason="not a git checkout")
def test_git_grep_finds_no_private_keras_optimizer_methods():
    proc = subprocess.run(["git", "grep", "-nE", r"\._(backend_update_step|all_reduce_sum_gradients|"
                           r"get_variable_index|learning_rate)\b", "--", "albert_tf"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and not proc.stdout, proc.stdout


# --- The package's import graph and public names ------------------------------------------------------------------


def _package_modules(root=ROOT):
    """{dotted module name: path} of every module of albert_tf (a package is its `__init__`)."""
    found = {}
    for folder, dirs, names in os.walk(os.path.join(root, "albert_tf")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                found[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return found


def import_graph(modules):
    """{module: the albert_tf modules it imports}, from every import statement (at the top and in functions):
    `from pkg import name` counts as importing `pkg.name` when that is a module, else `pkg`."""
    def owner(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(owner(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.update(owner(f"{node.module}.{alias.name}") if f"{node.module}.{alias.name}" in modules
                               else owner(node.module) for alias in node.names)
        graph[module] = targets - {None, module}
    return graph


def import_circles(graph):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_import_circles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_circles(graph) == [["a", "b", "c"]]


def test_graph_reads_imports_in_functions_and_from_packages(tmp_path):
    package = tmp_path / "albert_tf"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "one.py").write_text("def f():\n    from albert_tf.sub import two\n")
    (package / "sub" / "two.py").write_text("import albert_tf.sub.one\nfrom albert_tf import sub\n")
    graph = import_graph(_package_modules(str(tmp_path)))
    assert graph["albert_tf.sub.one"] == {"albert_tf.sub.two"}
    assert graph["albert_tf.sub.two"] == {"albert_tf.sub.one", "albert_tf.sub"}
    assert import_circles(graph) == [["albert_tf.sub.one", "albert_tf.sub.two"]]


def test_no_import_circle_in_the_package():
    circles = import_circles(import_graph(_package_modules()))
    assert not circles, "import circles: " + "; ".join(" <-> ".join(circle) for circle in circles)


def test_public_names_are_listed_statically():
    """`albert_tf.__all__` is a literal list in `albert_tf/__init__.py` (no registry or TensorFlow needed to read
    it), and every name in it, the documented modules among them, is an attribute after `import albert_tf`."""
    with open(os.path.join(ROOT, "albert_tf", "__init__.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    assigned = [node for node in tree.body if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)]
    assert len(assigned) == 1
    calls = {node.func.id for node in ast.walk(assigned[0].value) if isinstance(node, ast.Call)}
    assert calls <= {"sorted", "list"}, calls
    code = ("import sys, albert_tf\n"
            "assert 'tensorflow' not in sys.modules\n"
            "names = albert_tf.__all__\n"
            "albert_tf.lite, albert_tf.pipeline, albert_tf.export\n"
            "missing = [n for n in names if getattr(albert_tf, n, None) is None]\n"
            "assert not missing, missing\n"
            "from albert_tf import registry\n"
            "classes = {kind.model_class.__name__ for kind in registry.kinds()}\n"
            "assert {n for n in names if n.startswith('Albert') and n not in ('AlbertConfig', 'AlbertPreprocessor')}"
            " <= classes\n"
            "print(len(names))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.split()[-1]) > 20


def _test_modules():
    """`{path: module name}` of every Python file under tests/."""
    found = {}
    for folder, _, names in os.walk(os.path.join(ROOT, "tests")):
        for name in names:
            if name.endswith(".py"):
                found[os.path.join(folder, name)] = name[:-3]
    return found


def test_the_tests_mirror_the_tasks_and_no_test_module_imports_another():
    tasks = {name for name in os.listdir(os.path.join(ROOT, "albert_tf", "tasks"))
             if os.path.isfile(os.path.join(ROOT, "albert_tf", "tasks", name, "__init__.py"))}
    folders = {name for name in os.listdir(os.path.join(ROOT, "tests", "tasks"))
               if any(n.startswith("test_") for n in os.listdir(os.path.join(ROOT, "tests", "tasks", name)))}
    assert tasks <= folders, f"tests/tasks/ lacks {sorted(tasks - folders)}"
    modules = _test_modules()
    test_names = {name for name in modules.values() if name.startswith("test_")}
    assert len(test_names) == sum(name.startswith("test_") for name in modules.values()), "two test files share a name"
    found = []
    for path in modules:
        if os.path.relpath(path, ROOT).startswith(os.path.join("tests", "references")):
            continue   # The reference-making scripts run by hand in another environment, on the tests' fixtures.
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            found += [f"{os.path.relpath(path, ROOT)} imports {name}" for name in names if name in test_names]
    assert not found, found


# The folders of tests/ that hold tests of something other than a folder of albert_tf/: benchmarks/ (the scripts
# of the checkout's benchmarks/), tasks/ (one folder per task, checked above).
_TEST_FOLDERS_BESIDE = {"benchmarks", "tasks"}


def test_the_tests_mirror_the_package():
    """A test module lives in tests/<folder>/ beside albert_tf/<folder>/ (tests/ itself for the package's
    top-level modules), so each folder's tests are found where its code is."""
    package_folders = {name for name in os.listdir(os.path.join(ROOT, "albert_tf"))
                       if os.path.isfile(os.path.join(ROOT, "albert_tf", name, "__init__.py"))}
    tests_root = os.path.join(ROOT, "tests")
    strays = []
    for name in sorted(os.listdir(tests_root)):
        folder = os.path.join(tests_root, name)
        if not os.path.isdir(folder) or not any(n.startswith("test_") for n in os.listdir(folder)):
            continue
        if name not in package_folders | _TEST_FOLDERS_BESIDE:
            strays.append(f"tests/{name}/ is beside no albert_tf/{name}/")
    assert not strays, strays
