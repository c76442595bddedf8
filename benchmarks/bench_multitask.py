"""N tasks, one encoder: the multi-task export (`albert-export --tasks`) against single-task exports.

Builds `--num_tasks` classifier runs on one random encoder of `--size` (v2 shapes: E=128, vocab 30000) the way the
runners leave them (`albert_run.json` and a checkpoint in each run directory; `albert_tf.training.run_record`):
LoRA runs (rank `--lora_rank` on the query and value projections, adapters drawn at random so that every task
differs) and frozen-encoder runs (random heads). Then:

* `size`: the bytes of the multi-task export of the LoRA runs against one run's own single-task export
  (`export_saved_model`, adapters merged): the issue's target is <= 1.2x;
* `memory`: the resident memory (`VmRSS`, after `malloc_trim`) that loading each export into TF Serving's session loader adds to a
  fresh process that imported TensorFlow and tensorflow-text, and the same after one request (`serve_all` of the
  multi-task export, `serve_text` of the single one): the target is <= 1.3x one single-task model;
* `frozen`: `serve_all` of the multi-task export of the frozen-encoder runs against one single-task export's
  `serve_text`, the same `--batch_size` sentences, interleaved `--rounds` times (medians): the target is <= 1.3x
  (the encoder runs once);
* `lora`: `serve_all` of the LoRA export against the four tasks' own `NAME_text` signatures called one after the
  other (each task's adapted pass).

Every call goes through `SessionModel` (TF Serving's loader path). Prints a markdown table; `--output` also writes
it with the raw numbers beside it (`.json`).

Examples::

    # Smoke run (tiny model, a minute): the numbers mean nothing but the machinery.
    python benchmarks/bench_multitask.py --size=tiny --rounds=3 --output=

    # The issue's measurement (albert-base, 4 tasks; about 10 minutes on 2 quiet cores).
    python benchmarks/bench_multitask.py --size=base --num_tasks=4 --rounds=20 --output=multitask.md
"""

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

from absl import app, flags

SIZES = {
    "tiny": dict(vocab_size=30000, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64),
    "base": dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072),
}
SENTENCES = ("the movie was a joy from start to finish", "a dull plot and wooden acting sank it",
             "i would watch it again with friends", "the ending made no sense at all",
             "great music , weak story", "nothing happens for two hours")

flags.DEFINE_enum("size", "base", list(SIZES), "Encoder shape.")
flags.DEFINE_integer("num_tasks", 4, "Tasks in each multi-task export.")
flags.DEFINE_integer("lora_rank", 8, "Rank of the LoRA runs' adapters.")
flags.DEFINE_integer("max_seq_length", 128, "The runs' max_seq_length.")
flags.DEFINE_integer("batch_size", 8, "Sentences per request.")
flags.DEFINE_integer("rounds", 20, "Interleaved timing rounds.")
flags.DEFINE_string("workdir", None, "Where the runs and exports go (default: a temporary directory).")
flags.DEFINE_string("output", "multitask.md", "Markdown output ('' prints only).")
flags.DEFINE_string("worker", None, "Internal: measure the resident memory of this export in this process.")
FLAGS = flags.FLAGS


def _rss():
    """The process's `VmRSS` in bytes, after `malloc_trim` hands the freed heap back (as `bench_memory.py`)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _memory_worker(export_dir):
    """Prints the RSS added by loading `export_dir` in a session and answering one `serve_all`/`serve_text`."""
    import tensorflow as tf  # noqa: F401  pylint: disable=import-outside-toplevel
    import tensorflow_text  # noqa: F401  pylint: disable=import-outside-toplevel
    from albert_tf.export.session_model import SessionModel  # pylint: disable=import-outside-toplevel
    before = _rss()
    model = SessionModel(export_dir)
    loaded = _rss() - before
    text = list(SENTENCES[:2])
    if "serve_all" in model.signature_defs:
        model.run("serve_all", **{name: text if name == "text" else [""] * 2 for name in model.input_names("serve_all")})
    else:
        model.run("serve_text", text_a=text, text_b=[""] * 2)
    print(json.dumps({"loaded": loaded, "rss": _rss() - before}))


def _memory(export_dir):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, __file__, f"--worker={export_dir}"], capture_output=True, text=True,
                          env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _dir_bytes(path):
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, files in os.walk(path) for name in files)


def _padded(spm, vocab_size):
    """The SentencePiece model `spm` with unused pieces added up to `vocab_size` (the releases' 30000), rewritten in
    place: a vocabulary of the real size without training one on a real corpus."""
    from sentencepiece import sentencepiece_model_pb2  # pylint: disable=import-outside-toplevel
    model = sentencepiece_model_pb2.ModelProto()
    with open(spm, "rb") as f:
        model.ParseFromString(f.read())
    lowest = min(piece.score for piece in model.pieces)
    for index in range(vocab_size - len(model.pieces)):
        model.pieces.add(piece=f"\u2581unused{index}", score=lowest - 1.0 - index * 1e-4)
    with open(spm, "wb") as f:
        f.write(model.SerializeToString())
    return spm


def _make_runs(root):
    """The encoder, the SentencePiece model and the LoRA and frozen-encoder runs under `root`."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from albert_tf import AlbertConfig  # pylint: disable=import-outside-toplevel
    from albert_tf.models.lora import lora_layers  # pylint: disable=import-outside-toplevel
    from albert_tf.registry import get  # pylint: disable=import-outside-toplevel
    from albert_tf.text.vocab import train_sentencepiece  # pylint: disable=import-outside-toplevel
    from albert_tf.training import loop, run_record  # pylint: disable=import-outside-toplevel

    corpus = os.path.join(root, "corpus.txt")
    with open(corpus, "w") as f:
        f.write("\n".join(SENTENCES * 20) + "\n")
    spm = _padded(train_sentencepiece([corpus], os.path.join(root, "spm"), vocab_size=100, hard_vocab_limit=False),
                  SIZES[FLAGS.size]["vocab_size"])
    config = AlbertConfig(max_position_embeddings=512, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                          **SIZES[FLAGS.size])
    classifier = get("classifier").model_class
    tf.keras.utils.set_random_seed(0)
    base = classifier(config, num_labels=2).encoder.get_weights()
    rng = np.random.default_rng(0)
    runs = {"lora": {}, "frozen": {}}
    for mode in runs:
        for index in range(FLAGS.num_tasks):
            model = classifier(config, num_labels=2 + index)
            model.encoder.set_weights(base)
            record = {"format": run_record.FORMAT, "kind": "classifier", "model_config": model.get_config(),
                      "lora_rank": FLAGS.lora_rank if mode == "lora" else 0, "lora_targets": None,
                      "freeze_encoder": mode == "frozen", "labels": [str(i) for i in range(2 + index)],
                      "spm_model_file": spm, "do_lower_case": True, "max_seq_length": FLAGS.max_seq_length,
                      "lengths": {}, "threshold": None, "init_checkpoint": None}
            if mode == "lora":
                model.enable_lora(FLAGS.lora_rank)
                for layer in lora_layers(model):
                    layer.lora_kernel_b.assign(rng.normal(0, 0.02, layer.lora_kernel_b.shape).astype(np.float32))
            run_dir = os.path.join(root, f"{mode}_{index}")
            tf.io.gfile.makedirs(run_dir)
            tf.train.Checkpoint(**loop.checkpoint_objects(model)).write(os.path.join(run_dir, "model.ckpt-best"))
            run_record.write(run_dir, record)
            runs[mode][f"task{index}"] = run_dir
    return runs, spm


def _single_export(run_dir, spm, export_dir):
    from albert_tf.export.saved_model import export_saved_model  # pylint: disable=import-outside-toplevel
    from albert_tf.export.multitask import _load_run  # pylint: disable=import-outside-toplevel,protected-access
    return export_saved_model(_load_run("single", run_dir).model, export_dir, spm_model_file=spm,
                              max_seq_length=FLAGS.max_seq_length, warmup=False)


def _median(values):
    values = sorted(values)
    return values[len(values) // 2]


def _timings(single, multi_frozen, multi_lora, names):
    """Median seconds of the interleaved calls."""
    text = [SENTENCES[i % len(SENTENCES)] for i in range(FLAGS.batch_size)]
    empty = [""] * len(text)
    calls = {
        "single serve_text": lambda: single.run("serve_text", text_a=text, text_b=empty),
        "frozen serve_all": lambda: multi_frozen.run("serve_all", text=text, text_b=empty),
        "lora serve_all": lambda: multi_lora.run("serve_all", text=text, text_b=empty),
        "lora 4 calls": lambda: [multi_lora.run(f"{name}_text", text_a=text, text_b=empty) for name in names],
    }
    for call in calls.values():   # Warm-up.
        call()
    seconds = {name: [] for name in calls}
    for _ in range(FLAGS.rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            seconds[name].append(time.perf_counter() - start)
    return {name: _median(values) for name, values in seconds.items()}


def main(argv):
    del argv
    if FLAGS.worker:
        _memory_worker(FLAGS.worker)
        return
    import tensorflow_text  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    from albert_tf.export.multitask import export_multitask  # pylint: disable=import-outside-toplevel
    from albert_tf.export.session_model import SessionModel  # pylint: disable=import-outside-toplevel

    root = FLAGS.workdir or tempfile.mkdtemp(prefix="bench_multitask_")
    os.makedirs(root, exist_ok=True)
    runs, spm = _make_runs(root)
    single = _single_export(runs["lora"]["task0"], spm, os.path.join(root, "single"))
    single_frozen = _single_export(runs["frozen"]["task0"], spm, os.path.join(root, "single_frozen"))
    lora = export_multitask(runs["lora"], os.path.join(root, "multi_lora"), warmup=False)
    frozen = export_multitask(runs["frozen"], os.path.join(root, "multi_frozen"), warmup=False)
    sizes = {"single": _dir_bytes(single), "lora": _dir_bytes(lora), "frozen": _dir_bytes(frozen)}
    memory = {"single": _memory(single), "lora": _memory(lora), "frozen": _memory(frozen)}
    with SessionModel(single_frozen) as one, SessionModel(frozen) as multi_frozen, SessionModel(lora) as multi_lora:
        seconds = _timings(one, multi_frozen, multi_lora, sorted(runs["lora"]))
    n = FLAGS.num_tasks
    rows = [
        ("export size (MB)", f"{sizes['single'] / 1e6:.1f}", f"{sizes['lora'] / 1e6:.1f}",
         f"{sizes['lora'] / sizes['single']:.2f}x", "<= 1.2x"),
        ("resident memory, loaded (MB)", f"{memory['single']['loaded'] / 1e6:.0f}",
         f"{memory['lora']['loaded'] / 1e6:.0f}", f"{memory['lora']['loaded'] / memory['single']['loaded']:.2f}x",
         "<= 1.3x"),
        ("resident memory, after one request (MB)", f"{memory['single']['rss'] / 1e6:.0f}",
         f"{memory['lora']['rss'] / 1e6:.0f}", f"{memory['lora']['rss'] / memory['single']['rss']:.2f}x",
         "<= 1.3x"),
        (f"serve_all, {n} frozen tasks (ms)", f"{seconds['single serve_text'] * 1e3:.1f}",
         f"{seconds['frozen serve_all'] * 1e3:.1f}",
         f"{seconds['frozen serve_all'] / seconds['single serve_text']:.2f}x", "<= 1.3x"),
        (f"serve_all, {n} LoRA tasks vs {n} calls (ms)", f"{seconds['lora 4 calls'] * 1e3:.1f}",
         f"{seconds['lora serve_all'] * 1e3:.1f}", f"{seconds['lora serve_all'] / seconds['lora 4 calls']:.2f}x",
         "report"),
    ]
    table = [f"{FLAGS.size}, {n} tasks (LoRA rank {FLAGS.lora_rank}), batch {FLAGS.batch_size}, max_seq_length "
             f"{FLAGS.max_seq_length}, {FLAGS.rounds} interleaved rounds (medians), TF Serving's session loader",
             "", "| measure | one task / separate | multi-task | ratio | target |", "|---|---|---|---|---|"]
    table += [f"| {' | '.join(row)} |" for row in rows]
    text = "\n".join(table) + "\n"
    print(text)
    if FLAGS.output:
        with open(FLAGS.output, "w") as f:
            f.write(text)
        with open(os.path.splitext(FLAGS.output)[0] + ".json", "w") as f:
            json.dump({"sizes": sizes, "memory": memory, "seconds": seconds, "flags": {
                name: FLAGS[name].value for name in ("size", "num_tasks", "lora_rank", "max_seq_length",
                                                     "batch_size", "rounds")}}, f, indent=2)


if __name__ == "__main__":
    app.run(main)
