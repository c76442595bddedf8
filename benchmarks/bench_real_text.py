"""Classifying real sentences as users meet it: albert_tf's pipeline against keras-hub and transformers, and TF
Serving's session path on an `albert-export`, each library at its defaults and at a tuned length.

The texts are real English sentences from CPython's own documentation (`pydoc_data.topics`, the quickstart's
corpus: no network), 10-60 pieces each, as real text is. One albert-base config (random weights, one seed,
`vocab_size` the pieces of a SentencePiece model trained here on the same corpus) is written once as a release
directory, a keras-hub preset, a Hugging Face directory and an `albert-export`; every way classifies the same
sentences with the same weights.

Ways (`--ways`):

* `albert_tf`: `albert_tf.pipeline("text-classification", release)` at its defaults (`max_seq_length=512`;
  batches grouped by length and cut to their longest member), `albert_tf_128`: `max_seq_length=128`;
* `keras_hub`: `keras_hub.models.AlbertTextClassifier.predict` at its defaults (the preprocessor pads to 512),
  `keras_hub_128`: its preprocessor's `sequence_length=128`;
* `transformers`: transformers' PyTorch `pipeline("text-classification")` (it pads each batch to its longest
  member; `truncation=True`);
* `serving_dynamic`: `SessionModel` (TF Serving's `Session::Run` path) on the export's `serve_text` (cut to the
  batch's longest text); `serving_fixed`: the same session on `serving_default` with ids packed to 512 before
  the clock starts (what `serve_text` ran before it cut its batches). Both send all the sentences of a
  measurement as one request (one `Session::Run`, as a server's batching merges concurrent requests), whatever
  the batch size of the row.

Each measurement is its own process (the library imported, the model loaded, one warm-up call on the first
batch, then the clock around one call on all the sentences); rounds interleave the ways (A B C ... A B C ...)
and the medians are printed as a Markdown table. `--check` also prints the largest difference between the
pipeline's probabilities and the same model's on ids padded to 512.

The measurement of benchmarks/README.md::

    .venv/bin/python benchmarks/bench_real_text.py --num_sentences=96 --batch_sizes=32,1 --rounds=3 --check

A quick run (tiny model)::

    .venv/bin/python benchmarks/bench_real_text.py --size=tiny --num_sentences=32 --rounds=1
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

WAYS = ("albert_tf", "albert_tf_128", "keras_hub", "keras_hub_128", "transformers", "serving_dynamic",
        "serving_fixed")
TINY = dict(embedding_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
            max_position_embeddings=512)
EXPORT_LENGTH = 512


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="base", choices=("tiny", "base"))
    parser.add_argument("--num_sentences", type=int, default=256)
    parser.add_argument("--b1_sentences", type=int, default=32, help="sentences of the batch-1 measurements")
    parser.add_argument("--batch_sizes", default="32,1")
    parser.add_argument("--ways", default=",".join(WAYS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vocab_size", type=int, default=30000, help="SentencePiece pieces (= config vocab_size)")
    parser.add_argument("--work_dir", default=None, help="keeps the model files (default: a temporary directory)")
    parser.add_argument("--check", action="store_true", help="pipeline probabilities against ids padded to 512")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)   # one measurement (a child process)
    parser.add_argument("--batch_size", type=int, default=32, help=argparse.SUPPRESS)
    return parser.parse_args()


def sentences(number):
    """`number` real English sentences of CPython's `pydoc_data.topics` (every 7th prose sentence, in order)."""
    from albert_tf.quickstart.corpus import topic_documents
    found = [s for _, document in topic_documents() for s in document][::7]
    if len(found) < number:
        raise SystemExit(f"Only {len(found)} sentences in the corpus; asked for {number}.")
    return found[:number]


def prepare(work_dir, size, vocab_size):
    """Writes the release directory, keras-hub preset, Hugging Face directory and export of one classifier."""
    import shutil

    import sentencepiece as spm
    import tensorflow as tf

    from albert_tf.checkpoints import save_tf1_checkpoint
    from albert_tf.checkpoints.convert import convert
    from albert_tf.config import AlbertConfig
    from albert_tf.export.saved_model import export_from_checkpoint
    from albert_tf.quickstart.corpus import corpus_documents
    from albert_tf.tasks.glue.model import AlbertClassifier
    from albert_tf.text.vocab import train_sentencepiece

    release = os.path.join(work_dir, "release")
    if os.path.isdir(release):
        return
    os.makedirs(work_dir, exist_ok=True)
    corpus = os.path.join(work_dir, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        for _, document in corpus_documents():
            f.write("\n".join(s.lower() for s in document) + "\n")
    spm_file = train_sentencepiece(corpus, os.path.join(work_dir, "spm"), vocab_size=vocab_size,
                                   hard_vocab_limit=False, minloglevel=2)
    pieces = spm.SentencePieceProcessor(model_file=spm_file).get_piece_size()
    config = AlbertConfig(vocab_size=pieces, **TINY) if size == "tiny" else AlbertConfig.from_preset("base_v2")
    config.vocab_size = pieces
    tmp = release + ".tmp"
    os.makedirs(tmp, exist_ok=True)
    tf.keras.utils.set_random_seed(0)
    model = AlbertClassifier(config, num_labels=2)
    save_tf1_checkpoint(model, os.path.join(tmp, "model.ckpt-best"))
    config.to_json_file(os.path.join(tmp, "albert_config.json"))
    shutil.copy(spm_file, os.path.join(tmp, "30k-clean.model"))
    convert(tmp, os.path.join(work_dir, "keras_hub"), output_format="keras_hub")
    convert(tmp, os.path.join(work_dir, "hf"), output_format="hf")
    export_from_checkpoint(tmp, os.path.join(work_dir, "export"), model="classifier", num_labels=2,
                           max_seq_length=EXPORT_LENGTH, warmup=False)
    os.rename(tmp, release)


def _loader(way, work_dir, batch_size):
    """`way`'s classifier as `predict(texts) -> probabilities [n, 2]` (loaded, not yet called)."""
    import numpy as np

    if way.startswith("albert_tf"):
        import albert_tf
        options = {"max_seq_length": 128} if way == "albert_tf_128" else {}
        pipe = albert_tf.pipeline("text-classification", os.path.join(work_dir, "release"), batch_size=batch_size,
                                  progress=False, **options)
        return lambda texts: np.array([r["scores"] for r in pipe(texts)])
    if way.startswith("keras_hub"):
        import keras_hub
        classifier = keras_hub.models.AlbertTextClassifier.from_preset(os.path.join(work_dir, "keras_hub"),
                                                                       num_classes=2)
        if way == "keras_hub_128":
            classifier.preprocessor.sequence_length = 128
        return lambda texts: classifier.predict(texts, batch_size=batch_size, verbose=0)
    if way == "transformers":
        import torch
        import transformers
        hf_dir = os.path.join(work_dir, "hf")
        tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)   # its spiece.model
        model = transformers.AlbertForSequenceClassification.from_pretrained(hf_dir)
        pipe = transformers.pipeline("text-classification", model=model, tokenizer=tokenizer, device="cpu")
        del torch
        return lambda texts: pipe(texts, batch_size=batch_size, truncation=True, top_k=None)
    return _serving_loader(way, work_dir)


def _serving_loader(way, work_dir):
    import numpy as np
    import tensorflow_text  # noqa: F401  (the ops of `serve_text`)

    from albert_tf.export.session_model import SessionModel
    from albert_tf.pipelines import export_directory

    directory = export_directory(os.path.join(work_dir, "export"))
    model = SessionModel(directory)
    if way == "serving_dynamic":
        return lambda texts: model.run("serve_text", text_a=texts, text_b=[""] * len(texts))["probabilities"]
    import albert_tf
    pipe = albert_tf.pipeline("text-classification", directory, progress=False)
    packed = {}

    def fixed(texts):
        key = len(texts)
        if key not in packed:   # Packed before the clock starts (see the module docstring).
            rows, _ = pipe._encode([pipe._check(t, i) for i, t in enumerate(texts)])
            packed[key] = {name: np.asarray([row[name] for row in rows], np.int32)
                           for name in ("input_ids", "input_mask", "segment_ids")}
        return model.run("serving_default", **packed[key])["probabilities"]

    return fixed


def measure(args):
    """One child process: load `args.measure`, warm up on one batch, time one call on all the sentences."""
    texts = sentences(args.num_sentences)
    start = time.perf_counter()
    predict = _loader(args.measure, args.work_dir, args.batch_size)
    loaded = time.perf_counter() - start
    if args.measure == "serving_fixed":
        predict(texts)   # Packs the ids of `texts` once, outside the clock.
    predict(texts[:args.batch_size])
    start = time.perf_counter()
    predict(texts)
    seconds = time.perf_counter() - start
    print(json.dumps({"way": args.measure, "batch_size": args.batch_size, "seconds": seconds, "load": loaded}))


def check(work_dir, texts):
    """The largest |pipeline probability - the same model's on ids padded to 512|."""
    import numpy as np

    import albert_tf
    pipe = albert_tf.pipeline("text-classification", os.path.join(work_dir, "release"), progress=False)
    got = np.array([r["scores"] for r in pipe(texts)])
    pipe.runner.dynamic_lengths = False   # every batch at max_seq_length (512)
    padded = np.array([r["scores"] for r in pipe(texts)])
    rows, _ = pipe._encode([pipe._check(t, i) for i, t in enumerate(texts)])
    lengths = [int(sum(row["input_mask"])) for row in rows]
    return float(np.max(np.abs(got - padded))), lengths


def _child(args, way, batch_size, number):
    command = [sys.executable, os.path.abspath(__file__), f"--measure={way}", f"--work_dir={args.work_dir}",
               f"--batch_size={batch_size}", f"--num_sentences={number}", f"--size={args.size}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        print(f"{way} batch {batch_size} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1])["seconds"]


def run_all(args):
    ways = args.ways.split(",")
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    prepare(args.work_dir, args.size, args.vocab_size)
    times = {}
    for round_index in range(args.rounds):
        for batch_size in batch_sizes:
            number = args.num_sentences if batch_size > 1 else min(args.b1_sentences, args.num_sentences)
            for way in ways:
                seconds = _child(args, way, batch_size, number)
                if seconds is not None:
                    times.setdefault((way, batch_size, number), []).append(seconds)
                    print(f"round {round_index + 1}: {way:16s} batch {batch_size:3d}: {number / seconds:8.1f} "
                          "sentences/s", flush=True)
    print(f"\n| way | batch | sentences | sentences/s (median of {args.rounds}) | vs keras_hub | vs keras_hub_128 |")
    print("|---|---|---|---|---|---|")
    for (way, batch_size, number), values in times.items():
        median = statistics.median(values)
        ratios = []
        for base in ("keras_hub", "keras_hub_128"):
            other = times.get((base, batch_size, number))
            ratios.append(f"{statistics.median(other) / median:.2f}x" if other else "-")
        print(f"| {way} | {batch_size} | {number} | {number / median:.1f} | {ratios[0]} | {ratios[1]} |")
    if args.check:
        difference, lengths = check(args.work_dir, sentences(args.num_sentences))
        print(f"\npieces per sentence: min {min(lengths)}, median {statistics.median(lengths)}, max {max(lengths)}; "
              f"largest |pipeline - padded to 512| probability difference: {difference:.2e}")


def main():
    args = parse_args()
    if args.measure:
        measure(args)
        return
    if args.work_dir:
        os.makedirs(args.work_dir, exist_ok=True)
        run_all(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench_real_text_") as work_dir:
        args.work_dir = work_dir
        run_all(args)


if __name__ == "__main__":
    main()
