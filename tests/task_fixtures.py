"""Tiny data of every task in its real layout, one SentencePiece model and one tiny config for all of them.

Used by the XLA tests (`test_xla.py`) and the `albert-reproduce` test (`test_reproduce.py`): GLUE (the eight
tasks of `run_glue.sh`), SQuAD 1.1 and 2.0, RACE, CoNLL-2003 NER and pretraining TFRecords, a few examples each.
"""

import os
import random

import numpy as np
import sentencepiece as spm
import tensorflow as tf

from albert_tf.config import AlbertConfig
from albert_tf.data import features as features_lib
from albert_tf.text.tokenization import preprocess_text
import squad_fixtures
from glue_fixtures import (sentiment_rows, sentiment_sentence, stsb_rows, write_cola, write_mnli, write_small_tasks,
                       write_sst2, write_stsb)
from race_fixtures import make_articles, write_tree

SEQ = 16             # max_seq_length of GLUE, RACE, NER and pretraining
SQUAD_SEQ = 32       # SQuAD: a question and a doc span
PRED = 4             # max_predictions_per_seq
TINY = dict(embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=SQUAD_SEQ, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

PEOPLE, PLACES = ("alice", "bob", "carol"), ("paris", "rome", "oslo")
FILLER = ("the", "met", "in", "saw", "a", "went", "to")


def conll_sentences(seed, n):
    """Sentences whose tags follow from the words (B-PER people, B-LOC places, O the rest)."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(n):
        words, tags = [], []
        for _ in range(rng.randint(3, 6)):
            kind = rng.random()
            if kind < 0.3:
                words.append(rng.choice(PEOPLE).title())
                tags.append("B-PER")
            elif kind < 0.5:
                words.append(rng.choice(PLACES).title())
                tags.append("B-LOC")
            else:
                words.append(rng.choice(FILLER))
                tags.append("O")
        sentences.append((words, tags))
    return sentences


def write_conll(path, sentences):
    with open(path, "w") as f:
        f.write("-DOCSTART- -X- -X- O\n\n")
        for words, tags in sentences:
            f.write("".join(f"{word} NN I-NP {tag}\n" for word, tag in zip(words, tags)) + "\n")


def write_glue(root):
    """The GLUE tasks of `run_glue.sh` (and WNLI, AX) in their TSV layouts under `root`."""
    write_mnli(root)
    write_sst2(root, sentiment_rows(1, 12), sentiment_rows(2, 6), sentiment_rows(3, 3))
    write_cola(root, sentiment_rows(4, 8), sentiment_rows(5, 6), sentiment_rows(6, 3))
    write_stsb(root, stsb_rows(7, 12), stsb_rows(8, 5), stsb_rows(9, 3))
    write_small_tasks(root)
    return root


def _pretraining_example(rng, vocab_size):
    length = rng.randint(SEQ // 2, SEQ + 1)
    ids = [2] + list(rng.randint(5, vocab_size, size=length - 2)) + [3]
    num_masked = rng.randint(1, PRED + 1)
    positions = sorted(rng.choice(np.arange(2, length - 1), size=num_masked, replace=False))
    pad, unused = SEQ - length, PRED - num_masked
    feature = {
        "input_ids": features_lib.int64_feature(ids + [0] * pad),
        "input_mask": features_lib.int64_feature([1] * length + [0] * pad),
        "segment_ids": features_lib.int64_feature([0] * (length // 2) + [1] * (length - length // 2) + [0] * pad),
        "token_boundary": features_lib.int64_feature([1] * SEQ),
        "masked_lm_positions": features_lib.int64_feature(list(positions) + [0] * unused),
        "masked_lm_ids": features_lib.int64_feature([ids[p] for p in positions] + [0] * unused),
        "masked_lm_weights": features_lib.float_feature([1.0] * num_masked + [0.0] * unused),
        "next_sentence_labels": features_lib.int64_feature([int(rng.randint(0, 2))]),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_pretraining(path, vocab_size, count=10, seed=0):
    """`count` records of the original pretraining schema (`SEQ`, `PRED`)."""
    rng = np.random.RandomState(seed)
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(count):
            writer.write(_pretraining_example(rng, vocab_size))
    return path


def _corpus_lines():
    rng = random.Random(0)
    lines = [sentiment_sentence(rng, rng.random() < 0.5) for _ in range(100)]
    lines.append("premise number hypothesis here dev matched mismatched test the cat sat a kitten")
    for context, answerable, impossible in squad_fixtures.PARAGRAPHS:
        lines.append(context)
        lines.extend(question for question, _ in answerable)
        lines.extend(impossible)
    for seed in range(1, 4):
        for article in make_articles(seed, 2):
            lines.append(article["article"])
            lines.extend(q + " " + " ".join(o) for q, o in zip(article["questions"], article["options"]))
    lines.extend(" ".join(words) for words, _ in conll_sentences(9, 40))
    return [preprocess_text(line, lower=True) for line in lines]


def train_spm(directory):
    """A SentencePiece model (the original's special ids and symbols) on the texts of every task."""
    corpus = os.path.join(directory, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(_corpus_lines()) + "\n")
    prefix = os.path.join(directory, "spm")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=120, pad_id=0, unk_id=1, eos_id=-1, bos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], user_defined_symbols=["(", ")", '"', "-", "."],
        character_coverage=1.0, model_type="unigram", hard_vocab_limit=False, num_threads=1, minloglevel=2)
    return prefix + ".model"


def write_all(root):
    """Every task's data, the SentencePiece model and the tiny config under `root`; returns their paths."""
    root = str(root)
    paths = {"glue": write_glue(os.path.join(root, "glue")), "race": os.path.join(root, "race"),
             "conll": os.path.join(root, "conll"), "squad": os.path.join(root, "squad")}
    write_tree(paths["race"], "all")
    os.makedirs(paths["conll"])
    write_conll(os.path.join(paths["conll"], "train.txt"), conll_sentences(1, 12))
    write_conll(os.path.join(paths["conll"], "valid.txt"), conll_sentences(2, 5))
    write_conll(os.path.join(paths["conll"], "test.txt"), conll_sentences(3, 5))
    os.makedirs(paths["squad"])
    for version, negative in (("1.1", False), ("2.0", True)):
        for split in ("train", "dev"):
            path = os.path.join(paths["squad"], f"{split}-v{version}.json")
            squad_fixtures.write_squad(path, negative, max_questions=2)
            paths[f"squad{version}_{split}"] = path
    paths["spm"] = train_spm(root)
    vocab_size = spm.SentencePieceProcessor(model_file=paths["spm"]).get_piece_size()
    paths["config"] = AlbertConfig(vocab_size=vocab_size, **TINY)
    paths["config_file"] = os.path.join(root, "albert_config.json")
    paths["config"].to_json_file(paths["config_file"])
    paths["pretraining"] = write_pretraining(os.path.join(root, "pretraining.tfrecord"), vocab_size)
    return paths
