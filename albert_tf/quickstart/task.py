"""The quickstart's labelled task: which part of Python's standard library a docstring passage comes from.

Four classes, each a group of standard-library packages and modules whose docstrings the embedded corpus
(`albert_tf.quickstart.corpus`) holds:

    async    asyncio, concurrent (futures)
    email    email, mailbox, smtplib, imaplib, poplib
    testing  unittest, doctest
    xml      xml, xmlrpc

An example is a passage of up to two consecutive sentences of one docstring (training passages overlap by a
sentence, dev and test passages do not). In the classes' modules, about `HELDOUT_FRACTION` of the docstrings
(module, class and function docstrings, each a document) are set aside for the dev and test sets, and the
quickstart leaves them out of its pretraining corpus: dev and test are text the model never saw (a passage with
a sentence that the corpus repeats elsewhere is dropped). The training examples come from the other docstrings.
Every split has the same number of examples in each class, so always answering one class scores 1/4.

The files are the GLUE TSV layout that `run_classifier(task_name="stdlib")` reads (`glue.StdlibProcessor`,
SST-2's columns): `<data_dir>/STDLIB/train.tsv` and `dev.tsv` (`sentence<TAB>label`, with a header),
`test.tsv` (`index<TAB>sentence`), and `test_labels.tsv` (`index<TAB>label`: the answers, which the runner
never reads, to score its test predictions).
"""

import hashlib
import os
import random

from albert_tf import fileio

TASK_NAME = "stdlib"
TASK_DIR = "STDLIB"
# label -> the top-level standard-library packages and modules of the class (`glue.StdlibProcessor.LABELS`).
CLASSES = {
    "async": ("asyncio", "concurrent"),
    "email": ("email", "mailbox", "smtplib", "imaplib", "poplib"),
    "testing": ("unittest", "doctest"),
    "xml": ("xml", "xmlrpc"),
}
HELDOUT_FRACTION = 0.3
SENTENCES_PER_EXAMPLE = 2

# Sentences written for the served model: none occurs in the corpus (tests/quickstart/test_quickstart.py checks it), each
# with the class it belongs to.
SERVE_QUERIES = (
    ("The event loop runs the coroutine until its future is done.", "async"),
    ("Attach the file to the message and set the content type of its header.", "email"),
    ("The test runner reports every failed assertion at the end of the run.", "testing"),
    ("Parse the document and return the root element with its child nodes.", "xml"),
    ("Cancel the pending task when the timeout expires before it finishes.", "async"),
)


def document_class(name):
    """The class of a corpus document named by its standard-library path (`asyncio/tasks.py`), or None."""
    if not name.endswith(".py"):
        return None                     # A pydoc topic.
    top = name.split("/")[0].removesuffix(".py")
    for label, modules in CLASSES.items():
        if top in modules:
            return label
    return None


def heldout_docstrings(modules, heldout_fraction=HELDOUT_FRACTION):
    """The `(module path, docstring index)` pairs set aside for dev and test: in the classes' modules, each
    docstring with a probability of `heldout_fraction`, drawn from a hash of its name (the same on every run and
    Python version that has the docstring)."""
    heldout = set()
    for name, docstrings in modules:
        if document_class(name) is None:
            continue
        for index in range(len(docstrings)):
            digest = hashlib.sha256(f"{name}:{index}".encode("utf-8")).digest()
            if int.from_bytes(digest[:4], "big") < heldout_fraction * 2 ** 32:
                heldout.add((name, index))
    return heldout


def _groups(sentences, stride=SENTENCES_PER_EXAMPLE):
    """Groups of `SENTENCES_PER_EXAMPLE` consecutive sentences starting every `stride` sentences (training
    passages overlap with `stride=1`; dev and test passages do not); a shorter docstring is one group."""
    k = SENTENCES_PER_EXAMPLE
    return [sentences[i:i + k] for i in range(0, max(1, len(sentences) - k + 1), stride)]


def build_task(modules, heldout, seed=12345, max_train_per_class=400, max_eval_per_class=60, seen=()):
    """The balanced examples of each split: `{"train"|"dev"|"test": [(passage, label), ...]}`.

    Args:
        modules: `quickstart_corpus.module_docstrings()`.
        heldout: the `(module path, docstring index)` pairs of dev and test (`heldout_docstrings`).
        seed: int, of the shuffles that pick and order the examples.
        max_train_per_class, max_eval_per_class: int, caps on the examples per class in train and in each of
            dev and test.
        seen: sentences of the pretraining corpus besides the docstrings (the pydoc topics).
    """
    # Docstrings are sometimes copied between functions and modules: a held-out passage with a sentence that the
    # pretraining corpus also holds is left out, so that dev and test are text the model never saw.
    seen = set(seen) | {s for name, docs in modules for i, doc in enumerate(docs) if (name, i) not in heldout
                        for s in doc}
    pools = {label: {"train": [], "heldout": []} for label in CLASSES}
    for name, docstrings in modules:
        label = document_class(name)
        for index, sentences in enumerate(docstrings if label else ()):
            if (name, index) in heldout:
                pools[label]["heldout"] += [" ".join(g) for g in _groups(sentences) if not set(g) & seen]
            else:
                pools[label]["train"] += [" ".join(g) for g in _groups(sentences, stride=1)]
    rng = random.Random(seed)
    for pool in pools.values():
        for split, passages in pool.items():
            pool[split] = list(dict.fromkeys(passages))     # Each passage once (docstrings repeat).
            rng.shuffle(pool[split])
    n_train = min(max_train_per_class, *(len(p["train"]) for p in pools.values()))
    n_eval = min(max_eval_per_class, *(len(p["heldout"]) // 2 for p in pools.values()))
    splits = {"train": [], "dev": [], "test": []}
    for label, pool in pools.items():
        splits["train"] += [(text, label) for text in pool["train"][:n_train]]
        splits["dev"] += [(text, label) for text in pool["heldout"][:n_eval]]
        splits["test"] += [(text, label) for text in pool["heldout"][n_eval:2 * n_eval]]
    for examples in splits.values():
        rng.shuffle(examples)
    return splits


def _clean(text):
    """A TSV cell: no tabs or line breaks (the GLUE reader splits on tabs and reads no quoting)."""
    return " ".join(text.replace("\t", " ").split())


def write_task(data_dir, splits):
    """Writes `<data_dir>/STDLIB/{train,dev,test,test_labels}.tsv`; returns the task directory."""
    task_dir = os.path.join(data_dir, TASK_DIR)
    os.makedirs(task_dir, exist_ok=True)
    for split in ("train", "dev"):
        rows = ["sentence\tlabel"] + [f"{_clean(text)}\t{label}" for text, label in splits[split]]
        fileio.write_text_atomic(os.path.join(task_dir, f"{split}.tsv"), "\n".join(rows) + "\n")
    test = splits["test"]
    rows = ["index\tsentence"] + [f"{i}\t{_clean(text)}" for i, (text, _) in enumerate(test)]
    fileio.write_text_atomic(os.path.join(task_dir, "test.tsv"), "\n".join(rows) + "\n")
    rows = ["index\tlabel"] + [f"{i}\t{label}" for i, (_, label) in enumerate(test)]
    fileio.write_text_atomic(os.path.join(task_dir, "test_labels.tsv"), "\n".join(rows) + "\n")
    return task_dir


def read_test_labels(task_dir):
    """`{index: label}` of `test_labels.tsv`."""
    with open(os.path.join(task_dir, "test_labels.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return {index: label for index, label in rows}


def majority_baseline(splits, split="dev"):
    """The accuracy of always answering the most frequent training label, on `split`."""
    train_labels = [label for _, label in splits["train"]]
    top = max(sorted(set(train_labels)), key=train_labels.count)
    labels = [label for _, label in splits[split]]
    return sum(label == top for label in labels) / max(len(labels), 1)
