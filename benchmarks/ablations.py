"""The ALBERT paper's ablation tables in miniature, on the quickstart's embedded corpus (or `--corpus`).

Every configuration is pretrained by the library call `albert_tf.tasks.pretraining.task.run_pretraining(...)`
for the same `--steps` on the same TFRecords with the same seed (Table 5: each of `--seeds`), then scored on
held-out records with `pretraining_metrics` (as `albert_tf/quickstart/run.py` evaluates):

* Table 3, factorized embeddings: E in `--embedding_sizes` and E = H, all-shared (`num_hidden_groups=1`)
  and not-shared (`num_hidden_groups = num_hidden_layers`).
* Table 4, cross-layer sharing: all-shared against not-shared at E = `--embedding_size`. The paper's
  shared-attention-only and shared-FFN-only rows are not run: the layers share whole blocks only
  (`num_hidden_groups`, `inner_group_num` of `albert_config.json`), see `docs/ablations.md`.
* Table 5, sentence-level loss: none (`run_pretraining(sentence_loss_weight=0.0)`: MLM loss only), NSP
  (records written with the writer's `random_next_sentence=True`) and SOP (the default records), each scored
  on held-out MLM accuracy, held-out NSP accuracy (NSP-style held-out records) and held-out SOP accuracy
  (SOP-style held-out records), as mean and standard deviation over `--seeds`.

A configuration that two tables share (same E, sharing, sentence loss and seed) runs once. The data (one
SentencePiece vocabulary, one set of records per sentence-loss style) is written once under
`--output_dir/data` and reused by every configuration, and by a later run with the same corpus and data flags.
Writes `--output_dir/ablations.md` (the three tables), `results.json` (every number, the flags) and
`table3.png`, `table4.png`, `table5.png`; `docs/ablations.md` explains the flags and embeds these files.

    .venv/bin/python benchmarks/ablations.py --output_dir=/tmp/ablations
    .venv/bin/python benchmarks/ablations.py --tables=5 --seeds=1,2 --steps=100 --output_dir=/tmp/abl5
"""

import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import sys
import time

from absl import flags, logging

from albert_tf.commands import app as cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from albert_tf import fileio  # noqa: E402
from albert_tf.checkpoints import init_from_checkpoint  # noqa: E402
from albert_tf.config import AlbertConfig  # noqa: E402
from albert_tf.text import vocab as vocab_lib  # noqa: E402
from albert_tf.tasks.pretraining.writer.create_data import PretrainingDataOptions, write_pretraining_examples  # noqa: E402
from albert_tf.tasks.pretraining.inputs import pretraining_dataset  # noqa: E402
from albert_tf.errors import InputError  # noqa: E402
from albert_tf import AlbertPretrainer  # noqa: E402
from albert_tf.quickstart.corpus import write_corpus  # noqa: E402
from albert_tf.training import loop  # noqa: E402
from albert_tf.tasks.pretraining.task import pretraining_metrics, run_pretraining  # noqa: E402

CLI_HELP = __doc__.split("\n\n")[0] + (
    " Trains each configuration of the paper's Tables 3 (factorized embeddings), 4 (cross-layer sharing) and "
    "5 (sentence-level loss) with run_pretraining for the same steps on the same data and writes "
    "--output_dir/ablations.md, results.json and table3.png, table4.png, table5.png.")

flags.DEFINE_integer("steps", 400, "Training steps of every configuration.")
flags.DEFINE_integer("hidden_size", 128, "H of every configuration.")
flags.DEFINE_integer("layers", 4, "L (num_hidden_layers) of every configuration.")
flags.DEFINE_integer("num_attention_heads", 4, "Attention heads (must divide H).")
flags.DEFINE_integer("embedding_size", 64, "E of Tables 4 and 5.")
flags.DEFINE_list("embedding_sizes", ["32", "64", "128"], "E values of Table 3 (E = H is always added).")
flags.DEFINE_string("corpus", None, "Text file, one sentence a line, a blank line between documents (every 10th "
                    "document is held out). Default: the quickstart's embedded corpus.")
flags.DEFINE_string("output_dir", "ablations_output", "Where the data, the runs and the reports go.")
flags.DEFINE_list("seeds", ["1", "2", "3"], "Seeds of Table 5 (initialisation and input order); Tables 3 and 4 "
                  "use the first.")
flags.DEFINE_list("tables", ["3", "4", "5"], "Tables to run, a subset of 3,4,5.")
flags.DEFINE_list("configs", [], "Only these configuration names (see the error for an unknown name for all).")
flags.DEFINE_string("strategy", "one_device", "Distribution strategy, passed to run_pretraining.")
flags.DEFINE_integer("batch_size", 32, "Training batch size.")
flags.DEFINE_integer("max_seq_length", 64, "Sequence length of the records.")
flags.DEFINE_integer("max_predictions_per_seq", 10, "Masked positions per sequence.")
flags.DEFINE_integer("vocab_size", 2000, "SentencePiece vocabulary size.")
flags.DEFINE_integer("dupe_factor", 5, "Passes over each text with different masks (training and held-out).")
flags.DEFINE_float("learning_rate", 0.005, "Peak LAMB learning rate (warm-up: the first 10% of the steps).")
flags.DEFINE_bool("jit_compile", True, "XLA-compile the training step.")
flags.DEFINE_integer("num_workers", 2, "Processes of the data writer.")
flags.DEFINE_integer("data_seed", 12345, "Seed of the data writer (the same records for every configuration).")
FLAGS = flags.FLAGS

LOSSES = ("none", "nsp", "sop")
LOSS_LABELS = {"none": "None", "nsp": "NSP", "sop": "SOP"}


@dataclasses.dataclass
class Configuration:
    """One training run; `tables` says where its row appears (one run may fill rows of several tables)."""

    embedding_size: int
    shared: bool
    loss: str
    seed: int
    tables: list = dataclasses.field(default_factory=list)

    @property
    def name(self):
        return f"E{self.embedding_size}_{'shared' if self.shared else 'notshared'}_{self.loss}_s{self.seed}"


# === Flags ===


def _int_list(name):
    try:
        return [int(v) for v in FLAGS[name].value]
    except ValueError:
        raise InputError(f"--{name} must be a comma-separated list of integers. "
                         f"Received: {','.join(FLAGS[name].value)}.") from None


def check_flags():
    """Raises `InputError` (one line) for flags that cannot run; returns `(tables, seeds, Table 3 E values)`."""
    tables = _int_list("tables")
    if not tables or set(tables) - {3, 4, 5}:
        raise InputError(f"--tables must be a subset of 3,4,5. Received: {','.join(FLAGS.tables)}.")
    seeds = _int_list("seeds")
    if not seeds:
        raise InputError("--seeds needs at least one seed.")
    sizes = _int_list("embedding_sizes")
    positive = dict(steps=FLAGS.steps, hidden_size=FLAGS.hidden_size, layers=FLAGS.layers,
                    embedding_size=FLAGS.embedding_size, batch_size=FLAGS.batch_size)
    for name, value in positive.items():
        if value < 1:
            raise InputError(f"--{name} must be >= 1. Received: {value}.")
    if min(sizes, default=1) < 1:
        raise InputError(f"--embedding_sizes must be >= 1. Received: {','.join(FLAGS.embedding_sizes)}.")
    if FLAGS.num_attention_heads < 1 or FLAGS.hidden_size % FLAGS.num_attention_heads:
        raise InputError(f"--num_attention_heads ({FLAGS.num_attention_heads}) must divide --hidden_size "
                         f"({FLAGS.hidden_size}).")
    if FLAGS.corpus and not os.path.isfile(FLAGS.corpus):
        raise InputError(f"--corpus is not a file: {FLAGS.corpus}.")
    return sorted(tables), seeds, sorted(set(sizes) | {FLAGS.hidden_size})


# === Configurations ===


def configurations(tables, seeds, embedding_sizes, embedding_size):
    """The runs of `tables`, deduplicated: `[Configuration, ...]` in run order (tables 3, 4, 5)."""
    found = {}

    def add(table, e, shared, loss, seed):
        config = Configuration(e, shared, loss, seed)
        config = found.setdefault(config.name, config)
        if table not in config.tables:
            config.tables.append(table)

    first = seeds[0]
    if 3 in tables:
        for shared in (True, False):
            for e in embedding_sizes:
                add(3, e, shared, "sop", first)
    if 4 in tables:
        for shared in (True, False):
            add(4, embedding_size, shared, "sop", first)
    if 5 in tables:
        for loss in LOSSES:
            for seed in seeds:
                add(5, embedding_size, True, loss, seed)
    return list(found.values())


def select(configs, names):
    """The configurations named in `names` (all when empty); an unknown name is an `InputError`."""
    if not names:
        return configs
    known = [c.name for c in configs]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"Unknown --configs {','.join(unknown)}; these tables run: {','.join(known)}.")
    return [c for c in configs if c.name in names]


def albert_config(vocab_size, embedding_size, shared):
    """A small ALBERT of the flags' H and L, no dropout, with the given E and sharing."""
    return AlbertConfig(vocab_size=vocab_size, embedding_size=embedding_size, hidden_size=FLAGS.hidden_size,
                        num_hidden_layers=FLAGS.layers, num_hidden_groups=1 if shared else FLAGS.layers,
                        num_attention_heads=FLAGS.num_attention_heads, intermediate_size=4 * FLAGS.hidden_size,
                        inner_group_num=1, hidden_act="gelu", hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, max_position_embeddings=FLAGS.max_seq_length,
                        type_vocab_size=2, initializer_range=0.02).validate()


# === Data ===


def _split_corpus(path, data_dir):
    """`--corpus` as `(train .txt, held-out .txt, stats)`: every 10th document (from the 4th) held out."""
    with open(path, encoding="utf-8") as f:
        documents = [d.strip("\n") for d in re.split(r"\n\s*\n", f.read()) if d.strip()]
    heldout = set(range(3, len(documents), 10))
    if not heldout:
        raise InputError(f"--corpus needs at least 4 documents (blank-line separated): {path} has "
                         f"{len(documents)}.")
    splits = {"train": [d for i, d in enumerate(documents) if i not in heldout],
              "heldout": [d for i, d in enumerate(documents) if i in heldout]}
    paths, stats = {}, {}
    for split, docs in splits.items():
        paths[split] = os.path.join(data_dir, f"corpus_{split}.txt")
        fileio.write_text_atomic(paths[split], "".join(d + "\n\n" for d in docs))
        stats[split] = {"documents": len(docs), "sentences": sum(len(d.splitlines()) for d in docs)}
    return paths["train"], paths["heldout"], stats


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _reused(path, info):
    """Whether `path` was written by an earlier run with the same `info` (its `.done` marker)."""
    try:
        with open(path + ".done", encoding="utf-8") as f:
            return json.load(f)["info"] == info
    except (OSError, ValueError, KeyError):
        return False


def _write_records(src, dst, spm_model, random_next_sentence):
    info = dict(src=_digest(src), spm_model=_digest(spm_model), random_next_sentence=random_next_sentence,
                max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                dupe_factor=FLAGS.dupe_factor, random_seed=FLAGS.data_seed)
    if not _reused(dst, info):
        options = PretrainingDataOptions(max_seq_length=FLAGS.max_seq_length,
                                     max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                                     random_seed=FLAGS.data_seed, dupe_factor=FLAGS.dupe_factor,
                                     random_next_sentence=random_next_sentence)
        stats = write_pretraining_examples(src, [dst], spm_model_file=spm_model, options=options,
                                           num_workers=FLAGS.num_workers)
        fileio.write_text_atomic(dst + ".done", json.dumps({"info": info, "instances": stats.instances}))
    with open(dst + ".done", encoding="utf-8") as f:
        return json.load(f)["instances"]


def label1_fraction(path):
    """The fraction of `next_sentence_labels == 1` in `path` (1: swapped for SOP, random for NSP; the writer
    also makes a random B, label 1, for a chunk of one sentence): the chance level of the sentence task."""
    spec = {"next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64)}
    labels = [batch["next_sentence_labels"].numpy().reshape(-1)
              for batch in tf.data.TFRecordDataset(path).batch(1024).map(lambda x: tf.io.parse_example(x, spec))]
    return float(np.concatenate(labels).mean())


def prepare_data(output_dir, losses):
    """Corpus, vocabulary and records, each written once: a dict of their paths and sizes.

    `records[(split, style)]`: split `train` or `heldout`, style `sop` or `nsp` (the held-out records of both
    styles always, the NSP training records only when an NSP configuration runs).
    """
    data_dir = os.path.join(output_dir, "data")
    os.makedirs(data_dir, exist_ok=True)
    if FLAGS.corpus:
        train_txt, heldout_txt, stats = _split_corpus(FLAGS.corpus, data_dir)
    else:
        train_txt, heldout_txt, stats = write_corpus(data_dir)
    spm_prefix = os.path.join(data_dir, "spm")
    info = dict(corpus=_digest(train_txt), vocab_size=FLAGS.vocab_size)
    if not _reused(spm_prefix, info):
        vocab_lib.train_sentencepiece([train_txt], spm_prefix, vocab_size=FLAGS.vocab_size)
        fileio.write_text_atomic(spm_prefix + ".done", json.dumps({"info": info, "instances": 0}))
    spm_model = spm_prefix + ".model"
    styles = {("heldout", "sop"), ("heldout", "nsp"), ("train", "sop")}
    if "nsp" in losses:
        styles.add(("train", "nsp"))
    records, instances, label1 = {}, {}, {}
    for split, style in sorted(styles):
        path = os.path.join(data_dir, f"{split}_{style}.tfrecord")
        src = train_txt if split == "train" else heldout_txt
        instances[f"{split}_{style}"] = _write_records(src, path, spm_model, style == "nsp")
        label1[f"{split}_{style}"] = round(label1_fraction(path), 4)
        records[(split, style)] = path
    return {"corpus": stats, "spm_model": spm_model, "records": records, "instances": instances,
            "label1_fraction": label1}


# === One configuration ===


def train(config, data, run_dir, vocab_size):
    """Pretrains `config` from scratch with `run_pretraining`; returns its timings."""
    if os.path.exists(run_dir):
        shutil.rmtree(run_dir)
    os.makedirs(run_dir)
    config_file = os.path.join(run_dir, "albert_config.json")
    albert_config(vocab_size, config.embedding_size, config.shared).to_json_file(config_file)
    records = data["records"][("train", "nsp" if config.loss == "nsp" else "sop")]
    started = time.time()
    result = run_pretraining(
        config_file, records, run_dir, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, do_train=True, do_eval=False,
        train_batch_size=FLAGS.batch_size, optimizer="lamb", learning_rate=FLAGS.learning_rate,
        num_train_steps=FLAGS.steps, num_warmup_steps=FLAGS.steps // 10, save_checkpoints_steps=FLAGS.steps,
        keep_checkpoint_max=1, iterations_per_loop=min(FLAGS.steps, 100), strategy=FLAGS.strategy,
        jit_compile=FLAGS.jit_compile, seed=config.seed,
        sentence_loss_weight=0.0 if config.loss == "none" else 1.0)
    wall = time.time() - started
    last = result["train"] or {}
    return {"train_wall_s": wall, "step_s": wall / FLAGS.steps, "train_loss": last.get("loss"),
            "train_masked_lm_loss": last.get("masked_lm_loss"),
            "train_sentence_order_loss": last.get("sentence_order_loss")}


def _heldout_metrics(model, path, num_records):
    """`pretraining_metrics` over one pass of whole batches of the held-out `path` (as quickstart.py)."""
    batch_size = max(1, min(64, num_records))
    ds = pretraining_dataset(path, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, batch_size,
                             is_training=False)
    return pretraining_metrics(model, ds, max(1, num_records // batch_size))


def evaluate(config, data, run_dir, vocab_size):
    """The trained checkpoint of `run_dir` on both held-out record styles; returns the row's numbers."""
    model = AlbertPretrainer(albert_config(vocab_size, config.embedding_size, config.shared))
    _, prefix = loop.list_checkpoints(run_dir)[-1]
    init_from_checkpoint(model, prefix, allow_missing_heads=False)
    sop = _heldout_metrics(model, data["records"][("heldout", "sop")], data["instances"]["heldout_sop"])
    nsp = _heldout_metrics(model, data["records"][("heldout", "nsp")], data["instances"]["heldout_nsp"])
    return {"parameters": int(model.encoder.count_params()), "mlm_accuracy": sop["masked_lm_accuracy"],
            "mlm_loss": sop["masked_lm_loss"], "sop_accuracy": sop["sentence_order_accuracy"],
            "nsp_accuracy": nsp["sentence_order_accuracy"], "mlm_accuracy_nsp_records": nsp["masked_lm_accuracy"]}


def _format_seconds(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def run_all(configs, data, output_dir, vocab_size):
    """Trains and scores every configuration with a progress line each; returns `{name: row}`."""
    rows, started = {}, time.time()
    for i, config in enumerate(configs, 1):
        print(f"[ablations] config {i}/{len(configs)} {config.name} (tables {','.join(map(str, config.tables))})",
              flush=True)
        run_dir = os.path.join(output_dir, "runs", config.name)
        tf.keras.backend.clear_session()
        row = dict(dataclasses.asdict(config), name=config.name, hidden_size=FLAGS.hidden_size,
                   layers=FLAGS.layers, groups=1 if config.shared else FLAGS.layers)
        row.update(train(config, data, run_dir, vocab_size))
        row.update(evaluate(config, data, run_dir, vocab_size))
        rows[config.name] = row
        elapsed = time.time() - started
        eta = elapsed / i * (len(configs) - i)
        print(f"[ablations] config {i}/{len(configs)} {config.name}: MLM {row['mlm_accuracy']:.4f} "
              f"SOP {row['sop_accuracy']:.4f} NSP {row['nsp_accuracy']:.4f}, {row['step_s'] * 1000:.0f} ms/step; "
              f"elapsed {_format_seconds(elapsed)}, ETA {_format_seconds(eta)}", flush=True)
    return rows


# === Reports ===


def _mean_std(values):
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0


def table_rows(rows, table):
    """The rows of one table: Tables 3 and 4 one per configuration; Table 5 one per sentence loss, the
    seeds' mean and standard deviation."""
    members = [r for r in rows.values() if table in r["tables"]]
    if table != 5:
        return sorted(members, key=lambda r: (not r["shared"], r["embedding_size"]))
    summary = []
    for loss in LOSSES:
        runs = [r for r in members if r["loss"] == loss]
        if runs:
            entry = {"loss": loss, "seeds": [r["seed"] for r in runs], "parameters": runs[0]["parameters"],
                     "step_s": _mean_std([r["step_s"] for r in runs])[0]}
            for key in ("mlm_accuracy", "nsp_accuracy", "sop_accuracy"):
                entry[key], entry[key + "_std"] = _mean_std([r[key] for r in runs])
            summary.append(entry)
    return summary


def _sharing(row):
    return "all-shared" if row["shared"] else "not-shared"


def markdown_table(rows, table):
    """One table as markdown lines (empty when none of its configurations ran)."""
    entries = table_rows(rows, table)
    if not entries:
        return []
    if table == 5:
        lines = ["| Sentence loss | Seeds | Parameters | MLM acc. | NSP acc. | SOP acc. | Step (ms) |",
                 "|---|---|---:|---:|---:|---:|---:|"]
        for e in entries:
            cells = [f"{100 * e[k]:.1f} ± {100 * e[k + '_std']:.1f}" for k in ("mlm_accuracy", "nsp_accuracy",
                                                                             "sop_accuracy")]
            lines.append(f"| {LOSS_LABELS[e['loss']]} | {','.join(map(str, e['seeds']))} | {e['parameters']:,} | "
                         + " | ".join(cells) + f" | {1000 * e['step_s']:.0f} |")
        return lines
    lines = ["| Sharing | E | Parameters | MLM acc. | SOP acc. | NSP acc. | Step (ms) | Configuration |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in entries:
        lines.append(f"| {_sharing(r)} | {r['embedding_size']} | {r['parameters']:,} | {100 * r['mlm_accuracy']:.1f} "
                     f"| {100 * r['sop_accuracy']:.1f} | {100 * r['nsp_accuracy']:.1f} | {1000 * r['step_s']:.0f} "
                     f"| `{r['name']}` |")
    return lines


TITLES = {3: "Table 3: factorized embeddings (E)", 4: "Table 4: cross-layer sharing",
          5: "Table 5: sentence-level loss"}
NOTES = {
    3: "All-shared: `num_hidden_groups=1`; not-shared: `num_hidden_groups=num_hidden_layers`; SOP loss.",
    4: "At E = {e}, SOP loss. The paper's shared-attention-only and shared-FFN-only rows are not run: the layers "
       "share whole transformer blocks only (see docs/ablations.md).",
    5: "All-shared, E = {e}. Mean ± standard deviation over the seeds. MLM accuracy on the SOP-style held-out "
       "records; NSP accuracy on NSP-style held-out records, SOP accuracy on SOP-style ones (the same 2-way "
       "head scores both; for \"None\" it is untrained).",
}


def markdown_report(rows, meta, tables):
    """`ablations.md`: the settings, then each table with its plot."""
    lines = ["# ALBERT ablations in miniature", "",
             f"`{meta['command']}`", "",
             f"H = {FLAGS.hidden_size}, L = {FLAGS.layers}, {FLAGS.num_attention_heads} heads, FFN "
             f"{4 * FLAGS.hidden_size}, no dropout; {FLAGS.steps} LAMB steps (peak {FLAGS.learning_rate}), "
             f"batch {FLAGS.batch_size}, sequence {FLAGS.max_seq_length}, {FLAGS.max_predictions_per_seq} "
             f"predictions; vocabulary {FLAGS.vocab_size}; corpus {meta['corpus_name']} "
             f"({json.dumps(meta['corpus'])}); records {json.dumps(meta['instances'])}, their fraction of "
             f"sentence label 1 (the chance level is the larger of it and 1 minus it) "
             f"{json.dumps(meta['label1_fraction'])}.", "",
             "Parameters: the encoder (embeddings, projection, transformer, pooler), not the MLM/SOP heads. "
             "Accuracies in %, held out. Step: training wall time / steps (tracing and XLA compilation "
             f"included). Whole run: {_format_seconds(meta['total_s'])}.", ""]
    for table in tables:
        body = markdown_table(rows, table)
        if not body:
            continue
        lines += [f"## {TITLES[table]}", "", NOTES[table].format(e=FLAGS.embedding_size), ""] + body + [""]
        if table in meta["plots"]:
            lines += [f"![{TITLES[table]}]({meta['plots'][table]})", ""]
    return "\n".join(lines)


def _plot_embeddings(ax, entries):
    for shared in (True, False):
        points = sorted((r["embedding_size"], 100 * r["mlm_accuracy"]) for r in entries if r["shared"] == shared)
        if points:
            ax.plot(*zip(*points), marker="o", label="all-shared" if shared else "not-shared")
    sizes = sorted({r["embedding_size"] for r in entries})
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(e) for e in sizes])
    ax.minorticks_off()
    ax.set_xlabel("embedding size E")
    ax.set_ylabel("held-out MLM accuracy (%)")
    ax.legend()


def _plot_sharing(ax, entries):
    labels = [_sharing(r) for r in entries]
    ax.bar(labels, [100 * r["mlm_accuracy"] for r in entries])
    for i, r in enumerate(entries):
        ax.annotate(f"{r['parameters']:,} parameters", (i, 100 * r["mlm_accuracy"]), ha="center", va="bottom")
    ax.set_ylabel("held-out MLM accuracy (%)")


def _plot_losses(ax, entries):
    keys = (("mlm_accuracy", "MLM"), ("nsp_accuracy", "NSP"), ("sop_accuracy", "SOP"))
    x = np.arange(len(entries))
    for j, (key, label) in enumerate(keys):
        ax.bar(x + (j - 1) * 0.27, [100 * e[key] for e in entries], 0.27, yerr=[100 * e[key + "_std"] for e in entries],
               capsize=3, label=f"{label} acc.")
    ax.set_xticks(x, [LOSS_LABELS[e["loss"]] for e in entries])
    ax.set_xlabel("sentence-level loss in training")
    ax.set_ylabel("held-out accuracy (%), mean ± std over seeds")
    ax.set_ylim(0, 100)
    ax.legend(loc="upper left", fontsize="small")


def write_plots(rows, tables, output_dir):
    """`table<N>.png` for each table with rows; returns `{table: file name}`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    draw = {3: _plot_embeddings, 4: _plot_sharing, 5: _plot_losses}
    written = {}
    for table in tables:
        entries = table_rows(rows, table)
        if not entries:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        draw[table](ax, entries)
        ax.set_title(TITLES[table])
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100)
        plt.close(fig)
        written[table] = f"table{table}.png"
        fileio.write_bytes_atomic(os.path.join(output_dir, written[table]), buffer.getvalue())
    return written


# === Main ===


def _main(argv):
    if len(argv) > 1:
        raise InputError(f"Unexpected arguments: {' '.join(argv[1:])}.")
    started = time.time()
    tables, seeds, sizes = check_flags()
    configs = select(configurations(tables, seeds, sizes, FLAGS.embedding_size), FLAGS.configs)
    output_dir = os.path.abspath(FLAGS.output_dir)
    os.makedirs(output_dir, exist_ok=True)
    data = prepare_data(output_dir, {c.loss for c in configs})
    vocab_size = sum(1 for _ in open(os.path.splitext(data["spm_model"])[0] + ".vocab", encoding="utf-8"))
    rows = run_all(configs, data, output_dir, vocab_size)
    plots = write_plots(rows, tables, output_dir)
    meta = {"command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]), "corpus_name":
            FLAGS.corpus or "embedded (albert_tf.quickstart.corpus)", "corpus": data["corpus"],
            "instances": data["instances"], "label1_fraction": data["label1_fraction"], "plots": plots, "total_s": time.time() - started}
    fileio.write_text_atomic(os.path.join(output_dir, "ablations.md"), markdown_report(rows, meta, tables))
    results = {"flags": {f.name: f.value for f in FLAGS.get_key_flags_for_module(sys.argv[0])}, "meta": meta,
               "configurations": rows, "tables": {str(t): table_rows(rows, t) for t in tables}}
    fileio.write_text_atomic(os.path.join(output_dir, "results.json"), json.dumps(results, indent=2, default=str))
    print(f"[ablations] {len(rows)} configurations in {_format_seconds(meta['total_s'])}: "
          f"{os.path.join(output_dir, 'ablations.md')}", flush=True)


def main():
    # The progress lines are prints; the library's INFO lines and TensorFlow's retracing warnings stay out.
    logging.set_verbosity(logging.ERROR)
    cli.run_app(_main, CLI_HELP)


if __name__ == "__main__":
    main()
