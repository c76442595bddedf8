"""Lists the functions longer than a limit in Python sources, from their syntax tree.

    python scripts/long_functions.py [--limit 80] [--allow FILE] PATH...

Prints `path:line: name length` for each function (or method, or nested function) whose `def` line to last
line spans more than `--limit` lines (decorators not counted), and exits 1 if any. A function's length
includes the functions nested in it. `--allow FILE` names functions (`path::qualified.name`, one a line,
`#` comments) that may be long: those are not reported, and one that is no longer long (or no longer exists)
is reported as `path::name: listed in FILE but not over the limit` and also makes the exit status 1.
"""

import argparse
import ast
import os
import sys

DEFAULT_LIMIT = 80


def function_lengths(path):
    """`[(qualified name, first line, length in lines), ...]` of every function in the file `path`."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found.append((name, child.lineno, child.end_lineno - child.lineno + 1))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def python_files(paths):
    """The `.py` files under `paths` (files or directories), sorted, as given (relative stays relative)."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
                files.extend(os.path.join(root, name) for name in sorted(names) if name.endswith(".py"))
        else:
            files.append(path)
    return sorted(files)


def read_allow_list(path):
    """The `path::name` entries of an allow-list file (blank lines and `#` comments skipped)."""
    entries = set()
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if "::" not in line:
                raise SystemExit(f"{path}:{number}: expected `path::qualified.name`, got {line!r}")
            entries.add(line)
    return entries


def long_functions(paths, limit=DEFAULT_LIMIT):
    """`[(path, line, name, length), ...]` of the functions over `limit` lines in the files under `paths`."""
    return [(path, line, name, length)
            for path in python_files(paths)
            for name, line, length in function_lengths(path) if length > limit]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="files or directories")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="the most lines a function may span")
    parser.add_argument("--allow", help="file of `path::qualified.name` entries that may be long")
    args = parser.parse_args(argv)
    allowed = read_allow_list(args.allow) if args.allow else set()
    failed = False
    seen = set()
    for path, line, name, length in long_functions(args.paths, args.limit):
        key = f"{os.path.normpath(path)}::{name}"
        seen.add(key)
        if key not in allowed:
            print(f"{path}:{line}: {name} {length}")
            failed = True
    for key in sorted(allowed - seen):
        print(f"{key}: listed in {args.allow} but not over the limit")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
