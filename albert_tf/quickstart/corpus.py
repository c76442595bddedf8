"""The quickstart's embedded corpus: English prose that ships with every CPython, one sentence per line.

Two sources, both read from the running interpreter's own files (nothing is downloaded):

* `pydoc_data.topics`: the language reference topics shown by `help()` (79 documents, about 465k
  characters); each topic is a document.
* the docstrings of the standard library's `.py` sources (`sysconfig.get_paths()["stdlib"]`, parsed with
  `ast`, never imported; tests, IDLE, lib2to3 and the bundled demos left out): about 1.6M characters on
  CPython 3.11; each module (its module, class and function docstrings in source order) is a document. The
  quickstart's labelled task (`albert_tf.quickstart.task`) holds some docstrings out of it.

Lines are sentences; a blank line separates documents (the input format of the original
`create_pretraining_data.py`). Only prose is kept: sentences of at least four words that are mostly letters
(grammar rules, code examples, doctest lines and parameter tables are dropped).
"""

import ast
import os
import re
import sysconfig

from pydoc_data.topics import topics

from albert_tf import fileio

_HEADING_RULE = re.compile(r"^[*=\-~^]{3,}\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")
# Standard-library folders that are not the library's own prose (test suites, the IDE, demos, vendored code).
_SKIPPED_DIRS = frozenset({"test", "tests", "idlelib", "lib2to3", "turtledemo", "ensurepip", "site-packages",
                           "dist-packages", "__pycache__", "tkinter", "pydoc_data"})
_DOCTEST_OR_CODE = re.compile(r"^(>>>|\.\.\.|\$ |[A-Za-z_][\w.]*\(.*\)\s*$)")


def _prose_sentences(text):
    """Sentences of `text` that read as prose, paragraph by paragraph."""
    sentences = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in paragraph.splitlines()]
        lines = [line for line in lines if line and not _HEADING_RULE.match(line)]
        if not lines or any(_DOCTEST_OR_CODE.match(line) for line in lines):
            continue
        for sentence in _SENTENCE_END.split(" ".join(lines)):
            sentence = sentence.strip()
            # Keep prose: at least four words and mostly letters (skips grammar rules and code).
            letters = sum(c.isalpha() or c.isspace() for c in sentence)
            if len(sentence.split()) >= 4 and letters >= 0.8 * len(sentence):
                sentences.append(sentence)
    return sentences


def topic_documents():
    """The `pydoc_data.topics` documents: `[(topic_name, [sentence, ...]), ...]` in sorted order."""
    documents = []
    for name in sorted(topics):
        sentences = _prose_sentences(topics[name])
        if len(sentences) >= 2:
            documents.append((name, sentences))
    return documents


def _module_docstrings(path):
    """The docstrings of one source file in source order (module, classes, functions); [] if it does not parse."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
        return []
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    nodes = sorted((n for n in ast.walk(tree) if isinstance(n, kinds)), key=lambda n: getattr(n, "lineno", 0))
    return [doc for doc in (ast.get_docstring(n) for n in nodes) if doc]


def module_docstrings(stdlib=None):
    """The standard library's docstrings by module: `[(module_path, [[sentence, ...] per docstring]), ...]` in
    sorted path order, each docstring's prose sentences in source order (docstrings without prose left out)."""
    stdlib = stdlib or sysconfig.get_paths()["stdlib"]
    modules = []
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        for filename in sorted(f for f in filenames if f.endswith(".py")):
            path = os.path.join(dirpath, filename)
            docstrings = [sentences for sentences in map(_prose_sentences, _module_docstrings(path)) if sentences]
            if docstrings:
                modules.append((os.path.relpath(path, stdlib).replace(os.sep, "/"), docstrings))
    return modules


def docstring_documents(stdlib=None, modules=None, exclude=()):
    """The standard library's docstrings: `[(module_path, [sentence, ...]), ...]` in sorted path order.

    Args:
        stdlib: the standard library's directory (default: this interpreter's).
        modules: optional `module_docstrings()` result, to reuse.
        exclude: `(module_path, docstring index)` pairs left out (the quickstart task's dev and test docstrings).
    """
    exclude = set(exclude)
    documents = []
    for name, docstrings in modules if modules is not None else module_docstrings(stdlib):
        sentences = [s for i, doc in enumerate(docstrings) if (name, i) not in exclude for s in doc]
        if len(sentences) >= 2:
            documents.append((name, sentences))
    return documents


def corpus_documents(modules=None, exclude=()):
    """Every document of the embedded corpus: the pydoc topics, then the standard library's docstrings (without
    the `exclude` docstrings, see `docstring_documents`)."""
    return topic_documents() + docstring_documents(modules=modules, exclude=exclude)


def write_corpus(output_dir, heldout_every=10, heldout_offset=3, documents=None):
    """Writes `corpus_train.txt` and `corpus_heldout.txt` (every `heldout_every`-th document held out).

    Args:
        output_dir: str, where the two files go.
        heldout_every, heldout_offset: int, document `i` is held out when `i % heldout_every == heldout_offset`.
        documents: optional `[(name, [sentence, ...]), ...]`; default `corpus_documents()`.

    Returns `(train_path, heldout_path, stats)` where stats holds documents, sentences and characters per
    split.
    """
    documents = documents if documents is not None else corpus_documents()
    splits = {"train": [], "heldout": []}
    for i, doc in enumerate(documents):
        splits["heldout" if i % heldout_every == heldout_offset else "train"].append(doc)
    paths, stats = {}, {}
    for split, docs in splits.items():
        path = os.path.join(output_dir, f"corpus_{split}.txt")
        text = "".join("\n".join(sentences) + "\n\n" for _, sentences in docs)
        fileio.write_text_atomic(path, text)
        paths[split] = path
        stats[split] = {"documents": len(docs), "sentences": sum(len(s) for _, s in docs), "characters": len(text)}
    return paths["train"], paths["heldout"], stats
