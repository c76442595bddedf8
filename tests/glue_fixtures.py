"""GLUE task files in the original layouts, a tiny SentencePiece model and config: fixtures shared
by the GLUE tests and the tests of the commands, pipelines and Python API."""

import os
import random
import pytest
import sentencepiece as spm
from albert_tf.config import AlbertConfig
from albert_tf.text.vocab import train_sentencepiece
from albert_tf.text.tokenization import FullTokenizer


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_SEQ = 32

POSITIVE = ("good", "great", "fine", "nice", "happy")
NEGATIVE = ("bad", "awful", "poor", "sad", "ugly")
FILLER = ("the", "movie", "was", "very", "a", "plot", "and", "really", "story", "film", "it", "this")


def sentiment_sentence(rng, positive):
    words = [rng.choice(FILLER) for _ in range(rng.randint(3, 7))]
    words.insert(rng.randrange(len(words) + 1), rng.choice(POSITIVE if positive else NEGATIVE))
    return " ".join(words).capitalize() + " ."


def sentiment_rows(seed, n):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        positive = rng.random() < 0.5
        rows.append((sentiment_sentence(rng, positive), "1" if positive else "0"))
    return rows


def _write(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        for row in rows:
            f.write("\t".join(str(c) for c in row) + "\n")


MNLI_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
               "sentence1_parse", "sentence2_parse", "sentence1", "sentence2"]


def write_mnli(root, n_train=6, n_dev=4, n_test=3):
    labels = ("entailment", "neutral", "contradiction")
    rows = [MNLI_HEADER + ["label1", "gold_label"]]
    for i in range(n_train):
        rows.append([i, 100 + i, f"{100 + i}e", "fiction", "( a b )", "( c d )", "(ROOT a b)", "(ROOT c d)",
                     f"Premise number {i} .", f"Hypothesis {i} here .", labels[i % 3], labels[i % 3]])
    _write(os.path.join(root, "MNLI", "train.tsv"), rows)
    for name in ("dev_matched", "dev_mismatched"):
        rows = [MNLI_HEADER + ["label1", "label2", "label3", "label4", "label5", "gold_label"]]
        for i in range(n_dev):
            rows.append([i, 200 + i, f"{200 + i}n", "slate", "( a )", "( b )", "(ROOT a)", "(ROOT b)",
                         f"{name} premise {i} .", f"{name} hypothesis {i} ."] + [labels[i % 3]] * 6)
        _write(os.path.join(root, "MNLI", f"{name}.tsv"), rows)
    for name in ("test_matched", "test_mismatched"):
        rows = [MNLI_HEADER]
        for i in range(n_test):
            rows.append([i, 300 + i, f"{300 + i}c", "travel", "( a )", "( b )", "(ROOT a)", "(ROOT b)",
                         f"{name} premise {i} .", f"{name} hypothesis {i} ."])
        _write(os.path.join(root, "MNLI", f"{name}.tsv"), rows)


def write_sst2(root, train, dev, test):
    _write(os.path.join(root, "SST-2", "train.tsv"), [["sentence", "label"]] + [list(r) for r in train])
    _write(os.path.join(root, "SST-2", "dev.tsv"), [["sentence", "label"]] + [list(r) for r in dev])
    _write(os.path.join(root, "SST-2", "test.tsv"), [["index", "sentence"]] + [[i, r[0]] for i, r in enumerate(test)])


def write_cola(root, train, dev, test):
    # train/dev are headerless: source, label, original judgement, sentence.
    _write(os.path.join(root, "CoLA", "train.tsv"), [["gj04", r[1], "" if r[1] == "1" else "*", r[0]] for r in train])
    _write(os.path.join(root, "CoLA", "dev.tsv"), [["gj04", r[1], "" if r[1] == "1" else "*", r[0]] for r in dev])
    _write(os.path.join(root, "CoLA", "test.tsv"), [["index", "sentence"]] + [[i, r[0]] for i, r in enumerate(test)])


def stsb_rows(seed, n):
    """Pairs whose score is the number of shared sentiment words scaled to [0, 5]: learnable regression."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a_pos, b_pos = rng.random() < 0.5, rng.random() < 0.5
        rows.append((sentiment_sentence(rng, a_pos), sentiment_sentence(rng, b_pos),
                     round(4.2 if a_pos == b_pos else 0.8, 3)))
    return rows


def write_stsb(root, train, dev, test):
    header = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2"]
    def body(rows, with_score):
        return [[i, "main-news", "2012", "2012", i, "none", "none", a, b] + ([s] if with_score else [])
                for i, (a, b, s) in enumerate(rows)]
    _write(os.path.join(root, "STS-B", "train.tsv"), [header + ["score"]] + body(train, True))
    _write(os.path.join(root, "STS-B", "dev.tsv"), [header + ["score"]] + body(dev, True))
    _write(os.path.join(root, "STS-B", "test.tsv"), [header] + body(test, False))


def write_small_tasks(root):
    """MRPC, QQP (with short rows), QNLI, RTE, WNLI and the diagnostic set, a few rows each."""
    _write(os.path.join(root, "MRPC", "train.tsv"), [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                                                     ["1", "11", "12", "He left .", "He went away ."],
                                                     ["0", "13", "14", "It rains .", "It is sunny ."]])
    _write(os.path.join(root, "MRPC", "dev.tsv"), [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                                                   ["1", "21", "22", "A cat .", "A kitten ."]])
    _write(os.path.join(root, "MRPC", "test.tsv"), [["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                                                    ["0", "31", "32", "X y .", "Y x ."],
                                                    ["1", "33", "34", "P q .", "Q p ."]])
    _write(os.path.join(root, "QQP", "train.tsv"), [["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                                                    ["5", "1", "2", "How old ?", "What age ?", "1"],
                                                    ["6", "3", "4", "Why ?"],  # missing columns: skipped
                                                    ["7", "5", "6", "Where ?", "When ?", "0"]])
    _write(os.path.join(root, "QQP", "dev.tsv"), [["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                                                  ["8", "7", "8", "Who ?", "Whom ?", "1"]])
    _write(os.path.join(root, "QQP", "test.tsv"), [["id", "question1", "question2"], ["0", "Is it ?", "Was it ?"]])
    _write(os.path.join(root, "QNLI", "train.tsv"), [["index", "question", "sentence", "label"],
                                                     ["0", "Who ?", "Bob did .", "entailment"],
                                                     ["1", "Why ?", "Nothing .", "not_entailment"]])
    _write(os.path.join(root, "QNLI", "dev.tsv"), [["index", "question", "sentence", "label"],
                                                   ["0", "When ?", "Today .", "entailment"]])
    _write(os.path.join(root, "QNLI", "test.tsv"), [["index", "question", "sentence"], ["0", "How ?", "Fast ."]])
    for task, labels in (("RTE", ("entailment", "not_entailment")), ("WNLI", ("1", "0"))):
        _write(os.path.join(root, task, "train.tsv"), [["index", "sentence1", "sentence2", "label"],
                                                       ["0", "A b .", "B .", labels[0]],
                                                       ["1", "C d .", "E .", labels[1]]])
        _write(os.path.join(root, task, "dev.tsv"), [["index", "sentence1", "sentence2", "label"],
                                                     ["0", "F g .", "G .", labels[0]]])
        _write(os.path.join(root, task, "test.tsv"), [["index", "sentence1", "sentence2"], ["0", "H .", "I ."],
                                                      ["1", "J .", "K ."]])
    _write(os.path.join(root, "diagnostic", "diagnostic.tsv"), [["index", "sentence1", "sentence2"],
                                                                ["0", "The cat sat .", "A cat sat ."],
                                                                ["1", "No one came .", "Someone came ."]])


@pytest.fixture(scope="module")
def glue_root(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("glue"))
    write_mnli(root)
    write_sst2(root, sentiment_rows(1, 160), sentiment_rows(2, 48), sentiment_rows(3, 10))
    write_cola(root, sentiment_rows(4, 8), sentiment_rows(5, 6), sentiment_rows(6, 3))
    write_stsb(root, stsb_rows(7, 48), stsb_rows(8, 16), stsb_rows(9, 5))
    write_small_tasks(root)
    return root


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """A tiny SentencePiece model (original spm_train flags) and a tiny ALBERT config."""
    root = tmp_path_factory.mktemp("model")
    corpus = str(root / "corpus.txt")
    rng = random.Random(0)
    with open(corpus, "w") as f:
        for _ in range(300):
            f.write(sentiment_sentence(rng, rng.random() < 0.5).lower() + "\n")
        f.write("premise number hypothesis here dev matched mismatched test the cat sat a kitten\n")
    spm_model = train_sentencepiece(corpus, str(root / "spm"), vocab_size=80, hard_vocab_limit=False,
                                    character_coverage=1.0, minloglevel=2)

    vocab_size = spm.SentencePieceProcessor(model_file=spm_model).get_piece_size()
    config = AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                          hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    config_file = str(root / "albert_config.json")
    config.to_json_file(config_file)
    return {"spm": spm_model, "config": config, "config_file": config_file}


@pytest.fixture(scope="module")
def tokenizer(model_files):
    return FullTokenizer(spm_model_file=model_files["spm"])
