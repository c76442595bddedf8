"""The quickstart's embedded corpus: CPython's `pydoc_data.topics` as documents of one sentence per line.

Every CPython ships `pydoc_data/topics.py` (the language reference topics shown by `help()`): 79 documents of
English prose, about 465k characters. Each topic becomes a document; lines are sentences; a blank line separates
documents (the input format of the original `create_pretraining_data.py`).
"""

import os
import re

from pydoc_data.topics import topics

from albert_tf import fileio

_HEADING_RULE = re.compile(r"^[*=\-~^]{3,}\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")


def topic_documents():
    """Returns `[(topic_name, [sentence, ...]), ...]` in a stable (sorted) order."""
    documents = []
    for name in sorted(topics):
        sentences = []
        for paragraph in re.split(r"\n\s*\n", topics[name]):
            lines = [line.strip() for line in paragraph.splitlines()]
            lines = [line for line in lines if line and not _HEADING_RULE.match(line)]
            if not lines:
                continue
            text = " ".join(lines)
            for sentence in _SENTENCE_END.split(text):
                sentence = sentence.strip()
                # Keep prose: at least four words and mostly letters (skips grammar rules and code).
                letters = sum(c.isalpha() or c.isspace() for c in sentence)
                if len(sentence.split()) >= 4 and letters >= 0.8 * len(sentence):
                    sentences.append(sentence)
        if len(sentences) >= 2:
            documents.append((name, sentences))
    return documents


def write_corpus(output_dir, num_heldout_documents=8):
    """Writes `corpus_train.txt` and `corpus_heldout.txt` (every 10th topic held out, up to the given count).

    Returns `(train_path, heldout_path, stats)` where stats holds documents and sentences per split.
    """
    documents = topic_documents()
    heldout_idx = set(list(range(3, len(documents), 10))[:num_heldout_documents])
    splits = {"train": [], "heldout": []}
    for i, doc in enumerate(documents):
        splits["heldout" if i in heldout_idx else "train"].append(doc)
    paths, stats = {}, {}
    for split, docs in splits.items():
        path = os.path.join(output_dir, f"corpus_{split}.txt")
        fileio.write_text_atomic(path, "".join("\n".join(sentences) + "\n\n" for _, sentences in docs))
        paths[split] = path
        stats[split] = {"documents": len(docs), "sentences": sum(len(s) for _, s in docs)}
    return paths["train"], paths["heldout"], stats
