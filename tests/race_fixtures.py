"""RACE files in both released forms (a tree of JSON files per level, JSON-lines), a tiny SentencePiece
model and config: fixtures shared by the RACE tests and the tests of the runners' sources, the
pipelines and the task harness."""

import json
import os
import random
import pytest
import sentencepiece as spm
from albert_tf.config import AlbertConfig


MAX_SEQ = 32
MAX_QA = 12

# A memorisable rule: the correct option is always "the true one"; the position of it varies.
RIGHT = "the true one"
WRONG = ("a false one", "not this one", "some bad one")
WORDS = ("cat", "dog", "bird", "fish", "tree", "house", "river", "hill", "book", "ship", "road", "star")


def _article(rng, i):
    a, b, c = rng.sample(WORDS, 3)
    question = "what did the %s see near the _ ?" % a if i % 3 == 0 else "what is true about the %s ?" % a
    return a, b, c, question


def make_articles(seed, n_articles, with_answers=True):
    rng = random.Random(seed)
    articles = []
    for i in range(n_articles):
        a, b, c, _ = _article(rng, i)
        questions, options, answers = [], [], []
        for q in range(2):
            _, _, _, question = _article(rng, i + q)
            answer = rng.randrange(4)
            opts = list(WRONG)
            rng.shuffle(opts)
            opts.insert(answer, RIGHT)
            questions.append(question)
            options.append(opts)
            answers.append("ABCD"[answer])
        obj = {"id": f"{seed}-{i}.txt",
               "article": f"The {a.title()} saw the {b} near the {c}. The {b} was happy, and the {c} was old.",
               "questions": questions, "options": options}
        if with_answers:
            obj["answers"] = answers
        articles.append(obj)
    return articles


SPLITS = {  # split -> level -> (seed, articles, with answers)
    "train": {"middle": (1, 6, True), "high": (2, 6, True)},
    "dev": {"middle": (3, 2, True), "high": (4, 4, True)},
    "test": {"middle": (5, 2, True), "high": (6, 2, False)},
}


def write_tree(root, form):
    """`root/RACE/<split>/<level>/` as `all.txt` (JSON lines) or per-article files (one object each)."""
    for split, levels in SPLITS.items():
        for level, (seed, n, answers) in levels.items():
            level_dir = os.path.join(root, "RACE", split, level)
            os.makedirs(level_dir, exist_ok=True)
            articles = make_articles(seed, n, answers)
            if form == "all":
                with open(os.path.join(level_dir, "all.txt"), "w") as f:
                    for obj in articles:
                        f.write(json.dumps(obj) + "\n")
            else:
                for i, obj in enumerate(articles):
                    with open(os.path.join(level_dir, f"{1000 + i}.txt"), "w") as f:
                        json.dump(obj, f, indent=1 if i % 2 else None)
    return root


def train_spm(directory):
    corpus = os.path.join(directory, "corpus.txt")
    with open(corpus, "w") as f:
        for split, levels in SPLITS.items():
            for level, (seed, n, _) in levels.items():
                for obj in make_articles(seed, n):
                    f.write(obj["article"].lower() + "\n")
                    for q, opts in zip(obj["questions"], obj["options"]):
                        f.write(q.lower() + " " + " ".join(opts) + "\n")
    prefix = os.path.join(directory, "race_spm")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=90, pad_id=0, unk_id=1, eos_id=-1, bos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=["(", ")", '"', "-", ".", "–", "£", "€"],
        character_coverage=1.0, model_type="unigram", hard_vocab_limit=False, minloglevel=2)
    return prefix + ".model"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("race")
    write_tree(str(root / "all_form"), "all")
    write_tree(str(root / "article_form"), "articles")
    spm_model = train_spm(str(root))

    vocab_size = spm.SentencePieceProcessor(model_file=spm_model).get_piece_size()
    config = AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    config_file = str(root / "albert_config.json")
    config.to_json_file(config_file)
    return {"root": root, "spm": spm_model, "config": config, "config_file": config_file}
