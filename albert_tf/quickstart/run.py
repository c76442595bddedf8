"""`albert-quickstart`: from a fresh machine to a pretrained, fine-tuned, exported and served ALBERT, on the CPU.

Steps (each reuses its output when it is already complete; `--overwrite` starts over):
  1. corpus      CPython's `pydoc_data.topics` and standard-library docstrings -> `corpus_*.txt`, and the
                 labelled task (`quickstart_task`) -> `glue/STDLIB/*.tsv`
  2. vocab       SentencePiece with the original `spm_train` flags -> `spm.model`
  3. data        SOP pairs + n-gram masks -> `train.tfrecord`, `heldout.tfrecord`
  4. pretrain    a small all-shared ALBERT (E < H, no dropout) with LAMB -> `pretrain/model.ckpt-*`
  5. evaluate    MLM / SOP accuracy on the held-out shard, untrained vs trained, next to chance levels, and
                 where the fitting word of six fill-in-the-mask sentences ranks before and after pretraining
  6. fine-tune   `run_classifier(task_name="stdlib")` from the pretrained checkpoint -> `finetune/pretrained/`,
                 exported -> `export/<version>/`; the same from random initialisation -> `finetune/random/`
  7. serve       the export loaded in a fresh process as TF Serving loads it, answering five new sentences
  8. curves      the runs' TensorBoard scalars -> `quickstart_curves.png`
With `--init=<source>` (a release name such as `albert_base_v2`, or any `from_pretrained` source), steps 2-5
are skipped and the fine-tuning starts from that source, with its own config and SentencePiece model.
"""

import contextlib
import dataclasses
import json
import os
import resource
import shutil
import time
from typing import Optional

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import fileio
from albert_tf import options as options_lib
from albert_tf.quickstart import finetune as quickstart_finetune
from albert_tf.quickstart import task as quickstart_task
from albert_tf.text import ops as text_ops
from albert_tf.text import tokenization
from albert_tf.checkpoints import init_from_checkpoint, resolve_source
from albert_tf.config import AlbertConfig
from albert_tf.data import features
from albert_tf.text import vocab as vocab_lib
from albert_tf.text.vocab import TrainVocabOptions
from albert_tf.tasks.pretraining.data import PRETRAINING
from albert_tf.tasks.pretraining.writer.create_data import (CreateDataOptions, PretrainingDataOptions,
                                                              write_pretraining_examples)
from albert_tf.tasks.pretraining.inputs import pretraining_dataset
from albert_tf.errors import InputError
from albert_tf import AlbertPretrainer
from albert_tf.quickstart.corpus import docstring_documents, module_docstrings, topic_documents, write_corpus
from albert_tf.quickstart.plots import CURVES_FILE, plot_curves
from albert_tf.quickstart.report import format_report
from albert_tf.training import loop
from albert_tf.options import MaskedLmOptions, RuntimeOptions, option, shared_option
from albert_tf.tasks.pretraining.task import PretrainingOptions, pretraining_metrics, run_pretraining

CLI_HELP = (
    "Runs ALBERT end to end on this machine's CPU with no download: builds a corpus from the Python "
    "documentation that ships with CPython (`pydoc_data` and the standard library's docstrings), trains a "
    "SentencePiece vocabulary on it with the original spm_train flags, writes SOP pairs with n-gram masks as "
    "masked-LM TFRecords (a training and a held-out file), pretrains a small ALBERT with LAMB, evaluates "
    "masked-LM and SOP accuracy on the held-out file before and after training next to chance levels, then "
    "fine-tunes it with the GLUE runner on a labelled task built from the same corpus (which part of the "
    "standard library a docstring passage comes from: async, email, testing or xml; dev and test passages from "
    "docstrings that pretraining did not see), next to the same fine-tuning from random initialisation and the "
    "majority baseline, exports the fine-tuned classifier as a SavedModel and serves five new sentences from a "
    "fresh process through TF Serving's loader path. `--init=<source>` fine-tunes other weights instead (e.g. "
    "`--init=albert_base_v2` downloads Google's release). Everything goes to --output_dir (default "
    "./quickstart_output): corpus_*.txt, glue/STDLIB/*.tsv, spm.model, *.tfrecord, albert_config.json, "
    "pretrain/ and finetune/ (checkpoints and TensorBoard scalars), export/<version>/ (SavedModel), "
    "quickstart_curves.png and quickstart_summary.json; finished steps are reused unless --overwrite is given.")

# The fill-in-the-mask sentences: each with the answers that fit it (single SentencePiece pieces of the
# quickstart's vocabulary). None of the sentences occurs in the corpus, and the held-out text never holds a
# sentence's words around the answer verbatim (tests/quickstart/test_quickstart.py checks both).
FILL_MASK_QUERIES = (
    ("The [MASK] statement is used to define a function.", ("def",)),
    ("If the key is missing, an [MASK] is raised.", ("exception", "error", "keyerror")),
    ("The file is opened in binary [MASK] for reading.", ("mode",)),
    ("Return the number of [MASK] in the list.", ("items", "elements", "values", "entries", "objects")),
    ("The default [MASK] of the argument is none.", ("value",)),
    ("This method returns a new [MASK] object.", ("list", "string", "file", "dictionary", "set", "tuple", "bytes")),
)


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


class _Timer:
    """Wall-clock and CPU seconds (this process and its children) of each step, and a log line per step."""

    def __init__(self):
        self.wall, self.cpu = {}, {}

    @staticmethod
    def _cpu():
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    @contextlib.contextmanager
    def step(self, name, title):
        logging.info("=" * 20 + " %s " + "=" * 20, title)
        wall, cpu = time.time(), self._cpu()
        yield
        self.wall[name] = round(time.time() - wall, 1)
        self.cpu[name] = round(self._cpu() - cpu, 1)


def run_quickstart(options=None, **kwargs):
    """Runs the steps (module docstring) of `options` (`QuickstartOptions`; `kwargs` are its fields, which update
    it); returns a dict of everything measured and written."""
    o = options_lib.options_from_kwargs((QuickstartOptions,), kwargs, [options])[0]
    # The export is served with raw text: fail now, not after pretraining, if tensorflow-text is missing.
    text_ops.require_tensorflow_text()
    started = time.time()
    output_dir = os.path.abspath(o.output_dir)
    # One run per output directory (`fileio.output_lock`), taken before `overwrite` empties it.
    with fileio.output_lock(output_dir):
        if o.overwrite:
            for name in os.listdir(output_dir):
                path = os.path.join(output_dir, name)
                if name == fileio.LOCK_FILE:
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
        return _run_steps(o, output_dir, started)


def _run_steps(o, output_dir, started):
    """The steps of `run_quickstart` in `output_dir`, which this run holds."""
    summary = {"output_dir": output_dir, "init": o.init or None}
    timer = _Timer()
    with contextlib.ExitStack() as stack:
        # A source to fine-tune from is fetched (or refused) before any work.
        weights = stack.enter_context(_init_weights(o.init)) if o.init else None
        with timer.step("corpus", "1 corpus and the labelled task"):
            corpus = _corpus_step(output_dir, o.random_seed, summary)
        if not o.init:
            config = model_config(o.vocab_size, o.max_seq_length, o.hidden_size, o.num_hidden_layers,
                                  o.num_attention_heads, o.embedding_size, o.intermediate_size)
            weights = _pretrain_steps(output_dir, corpus, config, timer, summary, o)
        finetune_args = dict(max_seq_length=o.finetune_max_seq_length, train_batch_size=o.finetune_batch_size,
                             learning_rate=o.finetune_learning_rate, train_step=o.finetune_steps,
                             warmup_step=max(1, o.finetune_steps // 10),
                             save_checkpoints_steps=max(1, o.finetune_steps // 4),
                             iterations_per_loop=max(1, min(20, o.finetune_steps // 10)), random_seed=o.random_seed)
        _finetune_steps(output_dir, corpus, *weights, o.compare_random_init, timer, summary, finetune_args)
    with timer.step("serve", "7 the export served from a fresh process"):
        answers, signatures = quickstart_finetune.serve(
            summary["finetune"]["export_path"], [s for s, _ in quickstart_task.SERVE_QUERIES])
        for answer, (_, expected) in zip(answers, quickstart_task.SERVE_QUERIES):
            answer.update(expected=expected, right=answer["label"] == expected)
        summary["served"] = {"answers": answers, "signatures": signatures}
    with timer.step("curves", "8 curves"):
        runs = [(name, summary[key]["output_dir"], summary[key]["dev_history"])
                for key, name in (("finetune", "fine-tuned from " + ("--init" if o.init else "pretraining")),
                                  ("finetune_random", "from random initialisation")) if key in summary]
        summary["curves"] = plot_curves(os.path.join(output_dir, CURVES_FILE),
                                        None if o.init else os.path.join(output_dir, "pretrain"), runs,
                                        summary["task"]["majority_dev"]) if o.plots else None
    summary.update(timings_s=timer.wall, cpu_s=timer.cpu, total_s=round(time.time() - started, 1))
    fileio.write_text_atomic(os.path.join(output_dir, "quickstart_summary.json"),
                             json.dumps(summary, indent=2, sort_keys=True))
    return summary


def _corpus_step(output_dir, random_seed, summary):
    """1. The embedded corpus without the task's dev/test docstrings, and the task's TSV files."""
    corpus = os.path.join(output_dir, "corpus")
    if not _done(corpus):
        modules, topics = module_docstrings(), topic_documents()
        heldout = quickstart_task.heldout_docstrings(modules)
        documents = topics + docstring_documents(modules=modules, exclude=heldout)
        train_txt, heldout_txt, stats = write_corpus(output_dir, documents=documents)
        splits = quickstart_task.build_task(modules, heldout, seed=random_seed,
                                            seen=[s for _, sentences in topics for s in sentences])
        data_dir = os.path.join(output_dir, "glue")
        task_dir = quickstart_task.write_task(data_dir, splits)
        task = {"data_dir": data_dir, "task_dir": task_dir, "heldout_docstrings": len(heldout),
                "examples": {split: len(examples) for split, examples in splits.items()},
                "majority_dev": quickstart_task.majority_baseline(splits, "dev"),
                "majority_test": quickstart_task.majority_baseline(splits, "test")}
        _mark_done(corpus, {"train": train_txt, "heldout": heldout_txt, "stats": stats, "task": task})
    info = _read_done(corpus)
    logging.info("Corpus: %s; task: %s", info["stats"], info["task"]["examples"])
    summary.update(corpus=info["stats"], task=info["task"])
    return info


@contextlib.contextmanager
def _init_weights(init):
    """`--init`: `(config file, SentencePiece model, init_checkpoint)` of a `from_pretrained` source or name."""
    with resolve_source(init) as source:
        if not source.config_file or not source.spm_model_file:
            raise InputError(f"`--init={init}` needs a source with an `albert_config.json` and a SentencePiece "
                                 f"model (found config {source.config_file}, model {source.spm_model_file}).")
        logging.info("Fine-tuning from %s (%s)", init, source.kind)
        yield source.config_file, source.spm_model_file, init


def _pretrain_steps(output_dir, corpus, config, timer, summary, o):
    """2-5: vocabulary, records, pretraining, evaluation; returns `(config file, SentencePiece model, checkpoint)`."""
    with timer.step("vocab", "2 SentencePiece vocabulary"):
        spm_model = _vocab_step(output_dir, corpus["train"], config.vocab_size)
    with timer.step("data", "3 SOP + n-gram masked TFRecords"):
        train_rec, heldout_rec = _records_step(output_dir, corpus["train"], corpus["heldout"], spm_model,
                                               o.max_seq_length, o.max_predictions_per_seq, o.random_seed,
                                               o.dupe_factor, o.heldout_dupe_factor, o.num_workers, summary)
    config_file = os.path.join(output_dir, "albert_config.json")
    config.to_json_file(config_file)
    pretrain_dir = os.path.join(output_dir, "pretrain")
    with timer.step("pretrain", "4 pretraining (LAMB, MLM + SOP)"):
        run_pretraining(config_file, train_rec, pretrain_dir, max_seq_length=o.max_seq_length,
                        max_predictions_per_seq=o.max_predictions_per_seq, do_train=True, do_eval=False,
                        train_batch_size=o.train_batch_size, optimizer="lamb", learning_rate=o.learning_rate,
                        num_train_steps=o.num_train_steps, num_warmup_steps=o.num_warmup_steps,
                        save_checkpoints_steps=o.save_checkpoints_steps, keep_checkpoint_max=2,
                        iterations_per_loop=o.iterations_per_loop, jit_compile=o.jit_compile,
                        random_seed=o.random_seed)
    summary["pretrain_steps"] = o.num_train_steps
    with timer.step("evaluate", "5 held-out evaluation and fill-mask ranks"):
        prefix = _evaluate_step(config, pretrain_dir, spm_model, train_rec, heldout_rec, o.max_seq_length,
                                o.max_predictions_per_seq, o.random_seed, summary)
    return config_file, spm_model, prefix


def _finetune_steps(output_dir, corpus, config_file, spm_model, init_checkpoint, compare_random_init, timer, summary,
                    finetune_args):
    """6. The task fine-tuned from `init_checkpoint` (exported) and, to compare, from random initialisation."""
    data_dir = corpus["task"]["data_dir"]
    runs = [("finetune", "pretrained", init_checkpoint)]
    if compare_random_init:
        runs.append(("finetune_random", "random", None))
    for key, name, init in runs:
        run_dir = os.path.join(output_dir, "finetune", name)
        export_dir = os.path.join(output_dir, "export") if key == "finetune" else None
        with timer.step(key, f"6 fine-tuning {'from ' + str(init) if init else 'from random initialisation'}"):
            if _done(run_dir):
                done = _read_done(run_dir)
                if done.get("init") == init and done.get("settings") == finetune_args:
                    summary[key] = done
                    continue
            for stale in (run_dir, export_dir):
                if stale and os.path.exists(stale):
                    shutil.rmtree(stale)
            summary[key] = quickstart_finetune.finetune(data_dir, run_dir, config_file, spm_model,
                                                        init_checkpoint=init, export_dir=export_dir,
                                                        **finetune_args)
            summary[key]["settings"] = finetune_args
            _mark_done(run_dir, summary[key])


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
            options = PretrainingDataOptions(max_seq_length=max_seq_length,
                                         max_predictions_per_seq=max_predictions_per_seq,
                                         random_seed=random_seed, dupe_factor=dupe)
            stats = write_pretraining_examples(src, [dst], spm_model_file=spm_model, options=options,
                                               num_workers=num_workers)
            _mark_done(dst, {"instances": stats.instances, "summary": stats.summary()})
        logging.info("%s: %s", os.path.basename(dst), _read_done(dst)["summary"])
    summary["train_instances"] = _read_done(train_rec)["instances"]
    summary["heldout_instances"] = _read_done(heldout_rec)["instances"]
    return train_rec, heldout_rec


def _chance_levels(train_file, heldout_file, max_seq_length, max_predictions_per_seq):
    """SOP majority-class accuracy and the MLM unigram baseline (always the most frequent training target)."""
    spec = features.parse_spec(PRETRAINING, seq=max_seq_length, pred=max_predictions_per_seq)

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
    top_id = np.bincount(train_ids).argmax()
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


def fill_mask_ranks(model, tokenizer, queries=FILL_MASK_QUERIES):
    """Per sentence, the rank (1 = the model's first choice) of its best-placed fitting answer among all pieces,
    and the model's first choice; answers that are not one piece of the vocabulary are left out."""
    mask_id, vocab = tokenizer.convert_tokens_to_ids(["[MASK]"])[0], tokenizer.vocab
    rows = []
    for sentence, answers in queries:
        before, after = sentence.split("[MASK]")
        pieces = (["[CLS]"] + tokenizer.tokenize(before) + ["[MASK]"] + tokenizer.tokenize(after) + ["[SEP]"])
        ids = np.asarray([tokenizer.convert_tokens_to_ids(pieces)], np.int32)
        position = int(np.argmax(ids[0] == mask_id))
        logits = model({"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
                        "masked_lm_positions": np.asarray([[position]], np.int32)}, training=False)["mlm_logits"]
        logits = np.asarray(logits)[0, 0]
        order = np.argsort(-logits, kind="stable")
        rank_of = np.empty_like(order)
        rank_of[order] = np.arange(1, order.size + 1)
        answer_ids = [vocab[p] for a in answers for p in ("\u2581" + a, a) if p in vocab]
        rows.append({"sentence": sentence, "answers": list(answers),
                     "rank": int(min(rank_of[i] for i in answer_ids)) if answer_ids else None,
                     "top": tokenizer.convert_ids_to_tokens([int(order[0])])[0]})
    return rows


def _evaluate_step(config, pretrain_dir, spm_model, train_rec, heldout_rec, max_seq_length, max_predictions_per_seq,
                   random_seed, summary):
    """5. Held-out metrics and fill-mask ranks, untrained vs trained, beside the chance levels (in `summary`);
    returns the trained checkpoint's prefix."""
    chance = _chance_levels(train_rec, heldout_rec, max_seq_length, max_predictions_per_seq)
    tokenizer = tokenization.FullTokenizer(spm_model_file=spm_model, do_lower_case=True)
    tf.keras.utils.set_random_seed(random_seed)
    untrained = AlbertPretrainer(config)
    before = _evaluate(untrained, heldout_rec, max_seq_length, max_predictions_per_seq)
    ranks_before = fill_mask_ranks(untrained, tokenizer)
    trained = AlbertPretrainer(config)
    last_step, last_prefix = loop.list_checkpoints(pretrain_dir)[-1]
    init_from_checkpoint(trained, last_prefix, allow_missing_heads=False)
    after = _evaluate(trained, heldout_rec, max_seq_length, max_predictions_per_seq)
    ranks_after = fill_mask_ranks(trained, tokenizer)
    fill_mask = [dict(b, rank_before=b.pop("rank"), top_before=b.pop("top"), rank_after=a["rank"], top_after=a["top"])
                 for b, a in zip(ranks_before, ranks_after)]
    summary.update(chance=chance, untrained=before, trained=after, trained_step=last_step, fill_mask=fill_mask,
                   vocab_size=config.vocab_size)
    return last_prefix


@dataclasses.dataclass(frozen=True, kw_only=True)
class QuickstartOptions(MaskedLmOptions):
    """`albert-quickstart`'s options: the keywords of `run_quickstart`, with the small demo's defaults.

    The options it shares with the commands it chains are theirs (`shared_option`: their help texts, the demo's
    defaults): the vocabulary's size (`albert-train-vocab`), the pretraining data's passes and workers
    (`albert-create-pretraining-data`), the pretraining run's batch, steps, learning rate and checkpoints
    (`run_pretraining`) and its runtime; the shape of its pretraining data is `MaskedLmOptions`'
    (`max_seq_length` 128 here). The model's sizes and the fine-tuning run are the demo's own.
    """

    output_dir: str = option("quickstart_output", "Work directory for every artifact.")
    overwrite: bool = option(False, "Start over instead of reusing finished steps.")
    init: Optional[str] = option(None, "Fine-tune from this source instead of pretraining here: a release name "
                                 "(`albert_base_v2`, downloaded once), `hf:`/`kaggle:` names, a URL, or any path "
                                 "`from_pretrained` reads.")
    vocab_size: int = shared_option(TrainVocabOptions, "vocab_size", 3000)
    max_seq_length: int = option(128)
    dupe_factor: int = shared_option(PretrainingDataOptions, "dupe_factor", 5)
    heldout_dupe_factor: int = option(2, "Passes over the held-out corpus with different masks.")
    train_batch_size: int = shared_option(PretrainingOptions, "train_batch_size", 32)
    num_train_steps: int = shared_option(PretrainingOptions, "num_train_steps", 600)
    num_warmup_steps: int = shared_option(PretrainingOptions, "num_warmup_steps", 60)
    learning_rate: float = shared_option(PretrainingOptions, "learning_rate", 0.005)
    hidden_size: int = option(128, "H of the small model.")
    num_hidden_layers: int = option(4, "L of the small model (one shared block).")
    num_attention_heads: int = option(4, "Attention heads.")
    embedding_size: int = option(64, "E of the factorized embeddings.")
    intermediate_size: int = option(512, "FFN width.")
    iterations_per_loop: int = shared_option(RuntimeOptions, "iterations_per_loop", 50)
    save_checkpoints_steps: int = shared_option(PretrainingOptions, "save_checkpoints_steps", 600)
    num_workers: int = shared_option(CreateDataOptions, "num_workers", 2)
    random_seed: int = shared_option(PretrainingDataOptions, "random_seed", 12345)
    jit_compile: bool = shared_option(RuntimeOptions, "jit_compile", True)
    finetune_steps: int = option(800, "Fine-tuning steps (each run).")
    finetune_batch_size: int = option(32, "Fine-tuning batch size.")
    finetune_learning_rate: float = option(5e-4, "Peak AdamW learning rate of fine-tuning.")
    finetune_max_seq_length: int = option(64, "Sequence length of the task's passages.")
    compare_random_init: bool = option(True, "Also fine-tune from random initialisation, for the comparison.")
    plots: bool = option(True, "Draw quickstart_curves.png (needs matplotlib).")


def quickstart(run):
    """`albert-quickstart`: `run_quickstart` with the `QuickstartOptions` `run`, then its report."""
    logging.set_verbosity(logging.INFO)
    print(format_report(run_quickstart(run)), flush=True)


COMMAND = options_lib.Command(name="albert-quickstart", help_text=CLI_HELP, options=(QuickstartOptions,),
                              call=quickstart)
