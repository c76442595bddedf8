"""What the Python side of `albert_tf.pipeline` costs: text-classification texts/s against the same model on ids.

Two ways of classifying the same texts with the same `AlbertClassifier` (random weights, a v2 preset):

* `pipeline`: `albert_tf.pipeline("text-classification", release_dir)(texts)`: preprocessing, SentencePiece
  tokenization, GLUE packing, batching, the model, softmax results as Python dicts;
* `ids`: the pipeline's own compiled model called on the already packed int32 ids, batch by batch, probabilities
  fetched as NumPy (what a caller who packs ids once pays).

The overhead is `(pipeline time - ids time) / ids time` (target: <= 15% at batch 32, seq 128). The texts are
sentences of CPython's `pydoc_data.topics` (the quickstart's corpus), joined until each one fills
`max_seq_length`, so every row is as long as the ids rows. The SentencePiece model is trained here on the same
corpus (`--vocab_size` pieces, the config's `vocab_size`); the vocabulary size changes only the embedding table.
Rounds alternate the two ways; medians are printed.

Quick check that it runs (tiny model, a few seconds)::

    .venv/bin/python benchmarks/bench_pipeline.py --size=tiny --num_texts=64 --rounds=1

The measurement (albert-base, batch 32, seq 128)::

    .venv/bin/python benchmarks/bench_pipeline.py --size=base --seq_len=128 --batch_size=32 --num_texts=256
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import albert_tf  # noqa: E402
from albert_tf.checkpoints import save_tf1_checkpoint  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.text.vocab import train_sentencepiece  # noqa: E402
from albert_tf.tasks.glue.model import AlbertClassifier  # noqa: E402
from albert_tf.quickstart.corpus import topic_documents  # noqa: E402

TINY = dict(embedding_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
            max_position_embeddings=512)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="base", choices=("tiny", "base", "large", "xlarge", "xxlarge"),
                        help="v2 preset (tiny: a 2-layer H=64 model for a smoke run)")
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_texts", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vocab_size", type=int, default=8000, help="SentencePiece pieces (= config vocab_size)")
    return parser.parse_args()


def make_release(directory, size, vocab_size):
    """A release directory (TF1 `model.ckpt-best`, `albert_config.json`, `30k-clean.model`) of a random classifier."""
    corpus = os.path.join(directory, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for _, sentences in topic_documents():
            f.write("\n".join(s.lower() for s in sentences) + "\n")
    spm_file = train_sentencepiece(corpus, os.path.join(directory, "spm"), vocab_size=vocab_size,
                                   hard_vocab_limit=False, minloglevel=2)
    import sentencepiece as spm
    pieces = spm.SentencePieceProcessor(model_file=spm_file).get_piece_size()
    if size == "tiny":
        config = AlbertConfig(vocab_size=pieces, **TINY)
    else:
        config = AlbertConfig.from_preset(f"{size}_v2")
        config.vocab_size = pieces
    release = os.path.join(directory, "release")
    os.makedirs(release)
    tf.keras.utils.set_random_seed(0)
    model = AlbertClassifier(config, num_labels=2)
    save_tf1_checkpoint(model, os.path.join(release, "model.ckpt-best"))
    config.to_json_file(os.path.join(release, "albert_config.json"))
    shutil.copy(spm_file, os.path.join(release, "30k-clean.model"))
    return release


def make_texts(num_texts, seq_len):
    """Texts of about `seq_len` words from the corpus sentences (each longer than `seq_len` pieces)."""
    words = " ".join(s for _, sentences in topic_documents() for s in sentences).split()
    texts, start = [], 0
    for _ in range(num_texts):
        if start + seq_len > len(words):
            start = 0
        texts.append(" ".join(words[start:start + seq_len]))
        start += seq_len
    return texts


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_pipeline_") as tmp:
        build_start = time.perf_counter()
        release = make_release(tmp, args.size, args.vocab_size)
        pipe = albert_tf.pipeline("text-classification", release, max_seq_length=args.seq_len,
                                  batch_size=args.batch_size, progress=False)
        print(f"model {args.size} (vocab {pipe.runner.config.vocab_size}), built in "
              f"{time.perf_counter() - build_start:.1f} s")
        texts = make_texts(args.num_texts, args.seq_len)

        # The ids the pipeline packs, packed once up front for the `ids` way.
        rows, _ = pipe._encode([pipe._check(text, i) for i, text in enumerate(texts)])
        lengths = [sum(row["input_mask"]) for row in rows]
        print(f"{len(texts)} texts, real tokens per row: min {min(lengths)}, median {int(np.median(lengths))}")
        batches = [{name: tf.constant([row[name] for row in rows[i:i + args.batch_size]], tf.int32)
                    for name in ("input_ids", "input_mask", "segment_ids")}
                   for i in range(0, len(rows), args.batch_size)]
        forward = pipe.runner._forward

        def run_ids():
            for batch in batches:
                forward(batch)["probabilities"].numpy()

        def run_pipeline():
            pipe(texts)

        def run_preprocessing():
            pipe._encode([pipe._check(text, i) for i, text in enumerate(texts)])

        run_ids()
        run_pipeline()   # Traces (both ways share the compiled model), warms the caches.
        times = {"ids": [], "pipeline": [], "preprocessing": []}
        for _ in range(args.rounds):
            for name, fn in (("ids", run_ids), ("pipeline", run_pipeline), ("preprocessing", run_preprocessing)):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
        median = {name: statistics.median(values) for name, values in times.items()}
        overhead = (median["pipeline"] - median["ids"]) / median["ids"]
        print(f"batch {args.batch_size}, seq {args.seq_len}, {args.rounds} rounds (medians):")
        print(f"  model on ids   {len(texts) / median['ids']:9.1f} texts/s  ({median['ids']:.3f} s)")
        print(f"  pipeline       {len(texts) / median['pipeline']:9.1f} texts/s  ({median['pipeline']:.3f} s)")
        print(f"  preprocessing  {len(texts) / median['preprocessing']:9.1f} texts/s  "
              f"({median['preprocessing']:.3f} s: tokenization and packing alone)")
        print(f"  overhead of the pipeline: {100 * overhead:+.1f}% (target <= 15%)")


if __name__ == "__main__":
    main()
