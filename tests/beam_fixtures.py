"""The corpus, options and local writer's run that the Beam and Dask writer tests compare against."""

import collections
import os
import random
import tensorflow as tf
from albert_tf.quickstart import corpus as quickstart_corpus
from albert_tf.tasks.pretraining.writer import local as pretraining_writer
from albert_tf.tasks.pretraining.writer.instances import PretrainingDataOptions
from albert_tf.text.vocab import train_sentencepiece


OPTIONS = PretrainingDataOptions(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1, random_seed=17)
SHARD_MB = 0.2


def make_corpus(root):
    """About 1.7 MB of text in four files under `root` (the pydoc topics, each file with its own document
    order) and a SentencePiece model trained on the first."""
    documents = quickstart_corpus.topic_documents()
    files = []
    for i in range(4):
        order = list(documents)
        random.Random(i).shuffle(order)
        path = root / f"part-{i}.txt"
        text = "\n\n".join("\n".join(sentences) for _, sentences in order)
        path.write_text(text + ("\n" if i % 2 else ""), encoding="utf-8")  # some files end without "\n"
        files.append(str(path))
    model = train_sentencepiece(files[:1], str(root / "spm"), vocab_size=2000, minloglevel=2)
    return dict(root=root, files=files, pattern=str(root / "part-*.txt"), model=model,
                vocab=str(root / "spm.vocab"))


def _records(paths):
    return collections.Counter(r.numpy() for r in tf.data.TFRecordDataset(sorted(paths)))


def _outputs(directory, prefix):
    return sorted(str(directory / f) for f in os.listdir(directory) if f.startswith(prefix + "-0"))


def run_local(corpus):
    """The local writer's (stats, multiset of records) on `corpus`, with `OPTIONS` and `SHARD_MB`."""
    out = corpus["root"] / "local"
    out.mkdir()
    paths = [str(out / f"local-{i}.tfrecord") for i in range(2)]
    stats = pretraining_writer.write_pretraining_examples(
        corpus["pattern"], paths, spm_model_file=corpus["model"], options=OPTIONS, shard_size_mb=SHARD_MB)
    assert stats.instances > 1000
    return stats, _records(paths)
