"""`albert-quickstart`: from a fresh machine to a pretrained, exported and queried ALBERT, on the CPU.

Steps (each reuses its output when it is already complete; `--overwrite` starts over):
  1. corpus      CPython's `pydoc_data.topics` and standard-library docstrings -> `corpus_*.txt`
  2. vocab       SentencePiece with the original `spm_train` flags -> `spm.model`
  3. data        SOP pairs + n-gram masks -> `train.tfrecord`, `heldout.tfrecord`
  4. pretrain    a small all-shared ALBERT (E < H, no dropout) with LAMB -> `pretrain/model.ckpt-*`
  5. evaluate    MLM / SOP accuracy on the held-out shard, untrained vs trained, next to chance levels
  6. export      SavedModel -> `export/<version>/`, reloaded in a fresh process and queried with raw text
Every step is also a CLI of its own (`albert-train-vocab`, `albert-create-pretraining-data`,
`run_pretraining.py`, `albert-export`); the summary at the end prints those commands.
"""

import collections
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from albert_tf import cli, fileio, text_ops, tokenization
from albert_tf.checkpoints import init_from_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.data import features
from albert_tf.data import vocab as vocab_lib
from albert_tf.data.pretraining import PretrainingOptions, write_pretraining_examples
from albert_tf.data.pretraining_input import pretraining_dataset
from albert_tf.export import export_saved_model
from albert_tf.models import AlbertPretrainer
from albert_tf.quickstart_corpus import write_corpus
from albert_tf.training import loop
from albert_tf.training.pretraining import pretraining_metrics, run_pretraining

CLI_HELP = (
    "Runs ALBERT end to end on this machine's CPU with no download: builds a corpus from the Python "
    "documentation that ships with CPython (`pydoc_data` and the standard library's docstrings), trains a "
    "SentencePiece vocabulary on it with the original spm_train flags, writes SOP pairs with n-gram masks as "
    "masked-LM TFRecords (a training and a held-out file), pretrains a small ALBERT with LAMB, evaluates "
    "masked-LM and SOP accuracy on the held-out file before and after training next to chance levels, exports a "
    "SavedModel with raw-text signatures, and queries it with fill-in-the-mask sentences from a fresh process. "
    "Everything goes to --output_dir (default ./quickstart_output): corpus_*.txt, spm.model, *.tfrecord, "
    "albert_config.json, pretrain/ (checkpoints), export/<version>/ (SavedModel) and quickstart_summary.json; "
    "finished steps are reused unless --overwrite is given.")

# The fill-in-the-mask demo: each sentence with the answers that fit it (as single SentencePiece pieces of the
# quickstart's vocabulary). None of the sentences occurs in the corpus, and the held-out text never holds a
# sentence's words around the answer verbatim (tests/test_quickstart.py checks both).
FILL_MASK_QUERIES = (
    ("The [MASK] statement is used to define a function.", ("def",)),
    ("If the key is missing, an [MASK] is raised.", ("exception", "error", "keyerror")),
    ("The file is opened in binary [MASK] for reading.", ("mode",)),
    ("Return the number of [MASK] in the list.", ("items", "elements", "values", "entries", "objects")),
    ("The default [MASK] of the argument is none.", ("value",)),
    ("This method returns a new [MASK] object.", ("list", "string", "file", "dictionary", "set", "tuple", "bytes")),
)
MASKED_SENTENCES = tuple(sentence for sentence, _ in FILL_MASK_QUERIES)


def fitting_answers(top_tokens):
    """For each demo sentence, whether the top answer is one of its fitting words (pieces compared without `▁`)."""
    fits = []
    for (_, answers), guesses in zip(FILL_MASK_QUERIES, top_tokens):
        top = guesses[0][0].lstrip("\u2581") if guesses and guesses[0] else ""
        fits.append(top in answers)
    return fits


def _done(path):
    return os.path.exists(path + ".done")


def _mark_done(path, info=None):
    fileio.write_text_atomic(path + ".done", json.dumps(info or {}, indent=2, sort_keys=True))


def _read_done(path):
    with open(path + ".done", encoding="utf-8") as f:
        return json.load(f)


def model_config(vocab_size, max_seq_length, hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                 embedding_size=64, intermediate_size=512):
    """A small ALBERT: all-shared (G = K = 1), factorized embeddings (E < H), no dropout (v2 style)."""
    return AlbertConfig(vocab_size=vocab_size, embedding_size=embedding_size, hidden_size=hidden_size,
                        num_hidden_layers=num_hidden_layers, num_hidden_groups=1,
                        num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
                        inner_group_num=1, hidden_act="gelu", hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, max_position_embeddings=max_seq_length,
                        type_vocab_size=2, initializer_range=0.02).validate()


def _chance_levels(train_file, heldout_file, max_seq_length, max_predictions_per_seq):
    """SOP majority-class accuracy and the MLM unigram baseline (always the most frequent training target)."""
    spec = features.parse_spec(features.PRETRAINING, seq=max_seq_length, pred=max_predictions_per_seq)

    def labels(path):
        """One pass over the file: masked target ids (weight > 0) and SOP labels."""
        ids, sop = [], []
        for batch in tf.data.TFRecordDataset(path).batch(1024).map(lambda x: tf.io.parse_example(x, spec)):
            w = batch["masked_lm_weights"].numpy() > 0
            ids.append(batch["masked_lm_ids"].numpy()[w])
            sop.append(batch["next_sentence_labels"].numpy().reshape(-1))
        return np.concatenate(ids), np.concatenate(sop)

    train_ids, train_sop = labels(train_file)
    held_ids, held_sop = labels(heldout_file)
    top_id = collections.Counter(train_ids.tolist()).most_common(1)[0][0]
    majority = int(np.bincount(train_sop, minlength=2).argmax())
    return {
        "mlm_unigram_accuracy": float(np.mean(held_ids == top_id)),
        "mlm_unigram_id": int(top_id),
        "sop_majority_accuracy": float(np.mean(held_sop == majority)),
        "sop_label1_fraction_heldout": float(np.mean(held_sop == 1)),
        "heldout_instances": int(held_sop.size),
        "heldout_masked_tokens": int(held_ids.size),
    }


def _evaluate(model, heldout_file, max_seq_length, max_predictions_per_seq, batch_size=64):
    # The eval dataset repeats (as the original's): evaluate one pass of whole batches.
    num_records = sum(1 for _ in tf.data.TFRecordDataset(heldout_file))
    ds = pretraining_dataset(heldout_file, max_seq_length, max_predictions_per_seq, batch_size, is_training=False)
    return pretraining_metrics(model, ds, max(1, num_records // batch_size))


_QUERY_SCRIPT = r"""
import json, sys
import numpy as np
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops of serve_text)
export_path, sentences = sys.argv[1], json.loads(sys.argv[2])
loaded = tf.saved_model.load(export_path)
info = loaded.signatures["tokenization_info"]()
sp = spm.SentencePieceProcessor(model_file=info["vocab_file"].numpy().decode("utf-8"))
out = loaded.signatures["serve_text"](text_a=tf.constant(sentences), text_b=tf.constant([""] * len(sentences)))
logits, weights = out["mlm_logits"].numpy(), out["mlm_weights"].numpy()
top = []
for row in range(len(sentences)):
    guesses = []
    for p in range(logits.shape[1]):
        if weights[row, p] > 0:
            ids = np.argsort(-logits[row, p])[:5]
            guesses.append([sp.id_to_piece(int(i)) for i in ids])
    top.append(guesses)
print(json.dumps({"top_tokens": top}))
"""


def run_quickstart(output_dir="quickstart_output", overwrite=False, vocab_size=3000, max_seq_length=128,
                   max_predictions_per_seq=20, dupe_factor=10, heldout_dupe_factor=2, train_batch_size=32,
                   num_train_steps=1500, num_warmup_steps=150, learning_rate=0.005, hidden_size=128,
                   num_hidden_layers=4, num_attention_heads=4, embedding_size=64, intermediate_size=512,
                   iterations_per_loop=100, save_checkpoints_steps=500, num_workers=2, random_seed=12345,
                   jit_compile=True):
    """Runs the six steps; returns a dict of everything measured and written."""
    # The last step serves raw text: fail now, not after pretraining, if tensorflow-text is missing.
    text_ops.require_tensorflow_text()
    started = time.time()
    output_dir = os.path.abspath(output_dir)
    if overwrite and os.path.exists(output_dir):
        shutil.rmtree(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    summary = {"output_dir": output_dir}
    timings = {}

    def step(name):
        logging.info("=" * 20 + " %s " + "=" * 20, name)
        return time.time()

    t = step("1/6 corpus from pydoc_data.topics and the standard library's docstrings")
    train_txt, heldout_txt, summary["corpus"] = _corpus_step(output_dir)
    timings["corpus"] = time.time() - t

    t = step("2/6 SentencePiece vocabulary")
    spm_model = _vocab_step(output_dir, train_txt, vocab_size)
    timings["vocab"] = time.time() - t

    t = step("3/6 SOP + n-gram masked TFRecords")
    train_rec, heldout_rec = _records_step(output_dir, train_txt, heldout_txt, spm_model, max_seq_length,
                                           max_predictions_per_seq, random_seed, dupe_factor,
                                           heldout_dupe_factor, num_workers, summary)
    timings["data"] = time.time() - t

    # 4. Pretraining, LAMB, the original's run_pretraining flags.
    t = step("4/6 pretraining (LAMB, MLM + SOP)")
    config = model_config(vocab_size, max_seq_length, hidden_size, num_hidden_layers, num_attention_heads,
                          embedding_size, intermediate_size)
    config_file = os.path.join(output_dir, "albert_config.json")
    config.to_json_file(config_file)
    pretrain_dir = os.path.join(output_dir, "pretrain")
    run_pretraining(config_file, train_rec, pretrain_dir, max_seq_length=max_seq_length,
                    max_predictions_per_seq=max_predictions_per_seq, do_train=True, do_eval=False,
                    train_batch_size=train_batch_size, optimizer="lamb", learning_rate=learning_rate,
                    num_train_steps=num_train_steps, num_warmup_steps=num_warmup_steps,
                    save_checkpoints_steps=save_checkpoints_steps, keep_checkpoint_max=2,
                    iterations_per_loop=iterations_per_loop, jit_compile=jit_compile, seed=random_seed)
    timings["pretrain"] = time.time() - t

    t = step("5/6 held-out evaluation")
    trained = _evaluate_step(config, pretrain_dir, train_rec, heldout_rec, max_seq_length,
                             max_predictions_per_seq, random_seed, summary)
    timings["evaluate"] = time.time() - t

    t = step("6/6 SavedModel export and raw-text queries")
    export_path = _export_step(trained, output_dir, spm_model, max_seq_length, config, summary)
    timings["export"] = time.time() - t
    summary["timings_s"] = {k: round(v, 1) for k, v in timings.items()}
    summary["total_s"] = round(time.time() - started, 1)
    summary["artifacts"] = {
        "corpus": [train_txt, heldout_txt], "spm_model": spm_model, "tfrecords": [train_rec, heldout_rec],
        "albert_config": config_file, "checkpoints": pretrain_dir, "saved_model": export_path}
    path = os.path.join(output_dir, "quickstart_summary.json")
    fileio.write_text_atomic(path, json.dumps(summary, indent=2, sort_keys=True))
    return summary


def _corpus_step(output_dir):
    """1. The embedded corpus (`quickstart_corpus`): `(train .txt, held-out .txt, corpus statistics)`."""
    corpus = os.path.join(output_dir, "corpus")
    if not _done(corpus):
        train_txt, heldout_txt, stats = write_corpus(output_dir)
        _mark_done(corpus, {"train": train_txt, "heldout": heldout_txt, "stats": stats})
    info = _read_done(corpus)
    logging.info("Corpus: %s", info["stats"])
    return info["train"], info["heldout"], info["stats"]


def _vocab_step(output_dir, train_txt, vocab_size):
    """2. The SentencePiece model with the original spm_train flags; returns its `.model` path.

    It trains on the text as the data writer reads it (`preprocess_text(lower=True)`, the writer's
    `do_lower_case`), as the releases' uncased `30k-clean.model` was: a cased vocabulary would spend pieces on
    capitalised words that the lower-cased records never contain.
    """
    spm_prefix = os.path.join(output_dir, "spm")
    if not _done(spm_prefix):
        lowered = os.path.join(output_dir, "corpus_train.lower.txt")
        with open(train_txt, encoding="utf-8") as f:
            text = "".join(tokenization.preprocess_text(line.rstrip("\n"), lower=True) + "\n" for line in f)
        fileio.write_text_atomic(lowered, text)
        vocab_lib.train_sentencepiece([lowered], spm_prefix, vocab_size=vocab_size)
        os.remove(lowered)
        _mark_done(spm_prefix, {"vocab_size": vocab_size})
    return spm_prefix + ".model"


def _records_step(output_dir, train_txt, heldout_txt, spm_model, max_seq_length, max_predictions_per_seq,
                  random_seed, dupe_factor, heldout_dupe_factor, num_workers, summary):
    """3. The pretraining TFRecords of both texts; returns `(train, held-out)` paths, counts in `summary`."""
    train_rec = os.path.join(output_dir, "train.tfrecord")
    heldout_rec = os.path.join(output_dir, "heldout.tfrecord")
    for src, dst, dupe in ((train_txt, train_rec, dupe_factor), (heldout_txt, heldout_rec, heldout_dupe_factor)):
        if not _done(dst):
            options = PretrainingOptions(max_seq_length=max_seq_length,
                                         max_predictions_per_seq=max_predictions_per_seq,
                                         random_seed=random_seed, dupe_factor=dupe)
            stats = write_pretraining_examples(src, [dst], spm_model_file=spm_model, options=options,
                                               num_workers=num_workers)
            _mark_done(dst, {"instances": stats.instances, "summary": stats.summary()})
        logging.info("%s: %s", os.path.basename(dst), _read_done(dst)["summary"])
    summary["train_instances"] = _read_done(train_rec)["instances"]
    summary["heldout_instances"] = _read_done(heldout_rec)["instances"]
    return train_rec, heldout_rec


def _evaluate_step(config, pretrain_dir, train_rec, heldout_rec, max_seq_length, max_predictions_per_seq,
                   random_seed, summary):
    """5. Held-out metrics, untrained vs trained, beside the chance levels (in `summary`); returns the
    trained model."""
    chance = _chance_levels(train_rec, heldout_rec, max_seq_length, max_predictions_per_seq)
    tf.keras.utils.set_random_seed(random_seed)
    untrained = AlbertPretrainer(config)
    before = _evaluate(untrained, heldout_rec, max_seq_length, max_predictions_per_seq)
    trained = AlbertPretrainer(config)
    last_step, last_prefix = loop.list_checkpoints(pretrain_dir)[-1]
    init_from_checkpoint(trained, last_prefix, allow_missing_heads=False)
    after = _evaluate(trained, heldout_rec, max_seq_length, max_predictions_per_seq)
    summary.update(chance=chance, untrained=before, trained=after, trained_step=last_step)
    return trained


def _export_step(trained, output_dir, spm_model, max_seq_length, config, summary):
    """6. The SavedModel export, queried with raw text from a fresh process (answers in `summary`)."""
    export_root = os.path.join(output_dir, "export")
    if os.path.exists(export_root):
        shutil.rmtree(export_root)
    export_path = export_saved_model(trained, export_root, spm_model_file=spm_model, do_lower_case=True,
                                     max_seq_length=max_seq_length, config=config, version=1)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, "-c", _QUERY_SCRIPT, export_path, json.dumps(list(MASKED_SENTENCES))],
                          capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"Querying the exported SavedModel failed:\n{proc.stderr[-3000:]}")
    summary["queries"] = json.loads(proc.stdout.strip().splitlines()[-1])
    summary["queries"]["fitting"] = fitting_answers(summary["queries"]["top_tokens"])
    summary["export_path"] = export_path
    return export_path


def format_report(summary):
    c, b, a = summary["chance"], summary["untrained"], summary["trained"]
    lines = [
        "",
        "albert_tf quickstart: done in %.0f s (%s)" % (summary["total_s"], ", ".join(
            f"{k} {v:.0f}s" for k, v in summary["timings_s"].items())),
        "",
        "Held-out evaluation (%d instances, %d masked tokens):" % (c["heldout_instances"], c["heldout_masked_tokens"]),
        "  %-28s %10s %10s %10s" % ("", "chance", "untrained", "trained"),
        "  %-28s %10.4f %10.4f %10.4f" % ("MLM accuracy (unigram base)", c["mlm_unigram_accuracy"],
                                          b["masked_lm_accuracy"], a["masked_lm_accuracy"]),
        "  %-28s %10.4f %10.4f %10.4f" % ("SOP accuracy (majority)", c["sop_majority_accuracy"],
                                          b["sentence_order_accuracy"], a["sentence_order_accuracy"]),
        "  %-28s %10s %10.4f %10.4f" % ("MLM loss", "", b["masked_lm_loss"], a["masked_lm_loss"]),
        "",
        "Raw-text queries through the SavedModel's serve_text signature (fresh process):",
    ]
    queries = summary.get("queries", {})
    tokens = queries.get("top_tokens") or []
    fits = queries.get("fitting") or []
    for i, (sentence, answers) in enumerate(FILL_MASK_QUERIES):
        for guesses in (tokens[i] if i < len(tokens) else []):
            mark = "fits" if i < len(fits) and fits[i] else "expected " + " / ".join(answers)
            lines.append(f"  {sentence}\n      [MASK] -> {' | '.join(guesses)}   ({mark})")
    if tokens:
        lines.append(f"  Top answer fits: {sum(fits)} of {len(fits)} sentences.")
    art = summary["artifacts"]
    out = summary["output_dir"]
    lines += [
        "",
        "Artifacts:",
        f"  corpus         {art['corpus'][0]}, {art['corpus'][1]}",
        f"  SentencePiece  {art['spm_model']}",
        f"  TFRecords      {art['tfrecords'][0]}, {art['tfrecords'][1]}",
        f"  config         {art['albert_config']}",
        f"  checkpoints    {art['checkpoints']}",
        f"  SavedModel     {art['saved_model']}",
        f"  summary        {os.path.join(out, 'quickstart_summary.json')}",
        "",
        "Go on:",
        "  # pretrain on your own corpus (one sentence per line, blank line between documents)",
        "  albert-train-vocab --input=my_corpus.txt --model_prefix=30k-clean --vocab_size=30000",
        "  albert-create-pretraining-data --input_file=my_corpus.txt --output_file=train.tfrecord \\",
        "      --spm_model_file=30k-clean.model --vocab_file=30k-clean.vocab --max_seq_length=512 --num_workers=8",
        "  python run_pretraining.py --albert_config_file=albert_config.json --input_file=train.tfrecord \\",
        "      --output_dir=pretrain --train_batch_size=4096 --num_train_steps=125000",
        "  # fine-tune Google's weights (see README: GLUE, SQuAD and RACE data layouts and recipes)",
        "  python run_classifier.py --task_name=MNLI --data_dir=glue --output_dir=out_mnli \\",
        "      --init_checkpoint=albert_base_v2.tar.gz --hparams_preset=albert \\",
        "      --do_train --do_eval",
        "  python run_squad.py --version_2_with_negative ... ;  python run_race.py ...",
        "",
    ]
    return "\n".join(lines)


FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_string("output_dir", "quickstart_output", "Work directory for every artifact.")
    flags.DEFINE_bool("overwrite", False, "Start over instead of reusing finished steps.")
    flags.DEFINE_integer("vocab_size", 3000, "SentencePiece vocabulary size (3000: `def` is one piece).")
    flags.DEFINE_integer("max_seq_length", 128, "Sequence length of the pretraining data.")
    flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence.")
    flags.DEFINE_integer("dupe_factor", 10, "Passes over the training corpus with different masks.")
    flags.DEFINE_integer("heldout_dupe_factor", 2, "Passes over the held-out corpus with different masks.")
    flags.DEFINE_integer("train_batch_size", 32, "Training batch size.")
    flags.DEFINE_integer("num_train_steps", 1500, "Pretraining steps.")
    flags.DEFINE_integer("num_warmup_steps", 150, "Linear warm-up steps.")
    flags.DEFINE_float("learning_rate", 0.005, "Peak LAMB learning rate.")
    flags.DEFINE_integer("hidden_size", 128, "H of the small model.")
    flags.DEFINE_integer("num_hidden_layers", 4, "L of the small model (one shared block).")
    flags.DEFINE_integer("num_attention_heads", 4, "Attention heads.")
    flags.DEFINE_integer("embedding_size", 64, "E of the factorized embeddings.")
    flags.DEFINE_integer("intermediate_size", 512, "FFN width.")
    flags.DEFINE_integer("iterations_per_loop", 100, "Steps per tf.function call (one log line each).")
    flags.DEFINE_integer("save_checkpoints_steps", 500, "Checkpoint interval.")
    flags.DEFINE_integer("num_workers", 2, "Processes of the data writer.")
    flags.DEFINE_integer("random_seed", 12345, "Seed of the data writer and of the initialisation.")
    flags.DEFINE_bool("jit_compile", True, "XLA-compile the training step.")


def _main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    names = ("output_dir", "overwrite", "vocab_size", "max_seq_length", "max_predictions_per_seq", "dupe_factor",
             "heldout_dupe_factor",
             "train_batch_size", "num_train_steps", "num_warmup_steps", "learning_rate", "hidden_size",
             "num_hidden_layers", "num_attention_heads", "embedding_size", "intermediate_size",
             "iterations_per_loop", "save_checkpoints_steps", "num_workers", "random_seed", "jit_compile")
    summary = run_quickstart(**{name: FLAGS[name].value for name in names})
    print(format_report(summary), flush=True)


def main():
    define_flags()
    logging.set_verbosity(logging.INFO)
    cli.run_app(_main, CLI_HELP, [__name__])


if __name__ == "__main__":
    main()
