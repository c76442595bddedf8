"""Small SQuAD 1.1 / 2.0 files and a tiny SentencePiece model for the SQuAD tests.

Paragraphs are real-looking English with accents, digits, odd spacing and punctuation next to answers; every
answer is an exact substring of its context at `answer_start`.
"""

import json
import os

import sentencepiece as spm

from albert_tf.config import AlbertConfig
from albert_tf.text.tokenization import preprocess_text

PARAGRAPHS = [
    ("The Eiffel Tower was completed in 1889 for the Exposition Universelle in Paris. Gustave Eiffel's "
     "company designed and built it; at 330 metres it was the tallest man-made structure for 41 years.",
     [("When was the Eiffel Tower completed?", "1889"),
      ("Whose company built the tower?", "Gustave Eiffel's company"),
      ("How tall is the tower?", "330 metres"),
      ("For how many years was it the tallest structure?", "41 years")],
     ["What colour was the tower painted in 1950?"]),
    ("Zürich is the largest city in Switzerland,  with about 421,000 inhabitants.   The city lies at the "
     "north-western tip of Lake Zürich and is home to the ETH, founded in 1855.",
     [("What is the largest city in Switzerland?", "Zürich"),
      ("How many people live in the city?", "421,000"),
      ("When was the ETH founded?", "1855"),
      ("Where does the city lie?", "north-western tip of Lake Zürich")],
     ["How many bridges cross the lake?"]),
    ("Marie Skłodowska-Curie was born in Warsaw in 1867. She shared the 1903 Nobel Prize in Physics with "
     "Pierre Curie and Henri Becquerel, and won the 1911 prize in Chemistry alone.",
     [("Where was Marie Curie born?", "Warsaw"),
      ("In which year was she born?", "1867"),
      ("Which prize did she win in 1911?", "the 1911 prize in Chemistry"),
      ("With whom did she share the 1903 prize?", "Pierre Curie and Henri Becquerel")],
     ["Which university did Becquerel found?"]),
    ("The river Amazon discharges about 209,000 cubic metres of water per second into the Atlantic Ocean. "
     "Its basin covers roughly 7 million square kilometres across nine countries, mostly Brazil (60%).",
     [("Into which ocean does the Amazon flow?", "the Atlantic Ocean"),
      ("How much water does it discharge per second?", "209,000 cubic metres"),
      ("How many countries does the basin cross?", "nine"),
      ("Which country holds most of the basin?", "Brazil")],
     ["How long is the river Nile?"]),
    ("Café culture in Vienna dates back to 1683 , when coffee beans were left behind by the Ottoman army. "
     "Today the Café Central, opened in 1876, serves Sachertorte and Melange to tourists.",
     [("Since when does café culture exist in Vienna?", "1683"),
      ("Who left the coffee beans behind?", "the Ottoman army"),
      ("When did the Café Central open?", "1876"),
      ("What does it serve?", "Sachertorte and Melange")],
     ["Who owns the Café Central today?"]),
]


def _qas(paragraph_index, context, answerable, impossible, with_negative, max_questions=None):
    answerable = answerable[:max_questions]
    impossible = impossible[:max_questions]
    qas = []
    for q, (question, answer) in enumerate(answerable):
        start = context.index(answer)
        qa = {"id": f"p{paragraph_index}q{q}", "question": question,
              "answers": [{"text": answer, "answer_start": start}]}
        if with_negative:
            qa["is_impossible"] = False
        qas.append(qa)
    if with_negative:
        for q, question in enumerate(impossible):
            qas.append({"id": f"p{paragraph_index}n{q}", "question": question, "answers": [],
                        "is_impossible": True})
    return qas


def squad_dataset(with_negative, max_questions=None):
    """The fixture as a SQuAD dict; `max_questions` keeps the first answerable (and impossible) ones only."""
    data = [{"title": f"article_{i}",
             "paragraphs": [{"context": context,
                             "qas": _qas(i, context, answerable, impossible, with_negative, max_questions)}]}
            for i, (context, answerable, impossible) in enumerate(PARAGRAPHS)]
    return {"version": "v2.0" if with_negative else "1.1", "data": data}


def write_squad(path, with_negative, max_questions=None):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(squad_dataset(with_negative, max_questions), f, ensure_ascii=False)
    return path


def train_spm(directory, vocab_size=300):
    """A tiny SentencePiece model with the original's special ids and symbols, on the fixture texts."""
    corpus = os.path.join(directory, "corpus.txt")
    lines = []
    for context, answerable, impossible in PARAGRAPHS:
        lines.append(context)
        lines.extend(q for q, _ in answerable)
        lines.extend(impossible)
    with open(corpus, "w", encoding="utf-8") as f:
        for line in lines * 3:
            f.write(preprocess_text(line, lower=True) + "\n")
    prefix = os.path.join(directory, "spm")
    spm.SentencePieceTrainer.train(
        input=corpus, model_prefix=prefix, vocab_size=vocab_size, pad_id=0, unk_id=1, eos_id=-1, bos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=["(", ")", '"', "-", ".", "–", "£", "€"],
        character_coverage=1.0, model_type="unigram", hard_vocab_limit=False, num_threads=1,
        minloglevel=2)
    return prefix + ".model"


def toy_dataset(with_negative):
    """A memorisable set: the first sentence of each paragraph, its first question (+ the impossible one)."""
    data = []
    for i, (context, answerable, impossible) in enumerate(PARAGRAPHS):
        sentence = context[:context.index(". ") + 1]
        question, answer = answerable[0]
        assert answer in sentence
        data.append({"title": f"toy_{i}", "paragraphs": [{
            "context": sentence, "qas": _qas(i, sentence, [(question, answer)], impossible[:1], with_negative)}]})
    return {"version": "v2.0" if with_negative else "1.1", "data": data}


def write_toy(path, with_negative):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(toy_dataset(with_negative), f, ensure_ascii=False)
    return path


def model_files(directory):
    """`(spm_file, config, config_file)`: the tiny SentencePiece model of `train_spm` and a 2-layer config of its
    piece count (the runners check that the two files belong together), written in `directory`."""
    spm_file = train_spm(str(directory))
    config = AlbertConfig(vocab_size=spm.SentencePieceProcessor(model_file=spm_file).get_piece_size(),
                          embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=64)
    config_file = os.path.join(str(directory), "albert_config.json")
    config.to_json_file(config_file)
    return spm_file, config, config_file
