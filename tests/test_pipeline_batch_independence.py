"""An answer of `albert_tf.pipeline` depends on its own input only: for every task, each input asked alone gives
what it gives in shuffled batches of inputs of mixed lengths; a SQuAD 1.1 answer is never the placeholder "empty"
while its context holds a valid span, and `context[start:end] == answer` for ligatures, compatibility characters
and combining marks."""

import random
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import pipelines
from albert_tf.pipelines import KerasRunner
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.glue.pipeline import TextClassificationPipeline
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.tasks.ner.pipeline import TokenClassificationPipeline
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.pretraining.pipeline import FillMaskPipeline
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.race.pipeline import MultipleChoicePipeline
from albert_tf.tasks.squad import data as squad
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.squad.pipeline import QuestionAnsweringPipeline
from albert_tf.models.albert_model import AlbertModel
from albert_tf.text import tokenization
import squad_fixtures as fx
from support.pipeline_models import assert_nested_close, built as _built

MAX = 64   # the fixture config's max_position_embeddings

SENTENCES = ["a tower .", "the city lies at the tip of the lake and is home to a school founded in 1855 .",
             "coffee", "she was born in warsaw in 1867 and won two prizes , one in physics and one alone .",
             "the river discharges water into the ocean .", "yes", "the [MASK] of the lake ."]
CONTEXTS = [paragraph for paragraph, _, _ in fx.PARAGRAPHS]
# Characters that NFKD turns into several ("ﬁ" -> "fi", "Ⅻ" -> "XII", "㎏" -> "kg") or that carry combining marks.
ODD = ["ﬁne ﬀ Ⅻ ① ㎏ are odd", "the caf\u00e9 and the cafe\u0301 serve ﬁsh in Ⅻ ways ."]
QUESTIONS = ([{"question": "who built it ?", "context": c} for c in CONTEXTS]
             + [{"question": "when ?", "context": "in 1889 ."}, {"question": "who ?", "context": "a man ."},
                {"question": "what is odd ?", "context": ODD[0]}, {"question": "where ?", "context": ODD[1]}])

CASES = {
    "text-classification": (TextClassificationPipeline, lambda c: AlbertClassifier(c, num_labels=3), {},
                            SENTENCES + [(SENTENCES[1], SENTENCES[3])]),
    "feature-extraction": (pipelines.FeatureExtractionPipeline, AlbertModel, {}, SENTENCES),
    "fill-mask": (FillMaskPipeline, AlbertPretrainer, {},
                  ["the [MASK] .", "the city lies at the [MASK] of the lake and is home to a school founded in "
                   "1855 . she was born in [MASK] in 1867", "[MASK]", "a [MASK] tower ."]),
    "token-classification": (TokenClassificationPipeline, lambda c: AlbertTokenClassifier(c, num_labels=5), {},
                             SENTENCES),
    "multiple-choice": (MultipleChoicePipeline, AlbertRace, {"max_qa_length": 16},
                        [{"article": s, "question": "what ?", "options": ["a", "b c", "d", s[:20]]}
                         for s in SENTENCES[:5]]),
    # The default `n_best_size` (20) over windows much shorter than the batch's padded length.
    "question-answering v1": (QuestionAnsweringPipeline, AlbertSquadV1, {"doc_stride": 16, "max_query_length": 12},
                              QUESTIONS),
    "question-answering v2": (QuestionAnsweringPipeline, AlbertSquadV2, {"doc_stride": 16, "max_query_length": 12},
                              QUESTIONS),
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    spm_file, config, _ = fx.model_files(tmp_path_factory.mktemp("batch_independence"))
    return tokenization.FullTokenizer(spm_model_file=spm_file, do_lower_case=True), config


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_answer_is_the_same_alone_and_in_any_batch(env, case):
    tokenizer, config = env
    cls, make_model, options, inputs = CASES[case]
    tf.keras.utils.set_random_seed(len(case))
    model = _built(make_model(config), choices=cls is MultipleChoicePipeline, positions=cls is FillMaskPipeline)
    pipe = cls(KerasRunner(model), tokenizer, True, batch_size=3, progress=False, max_seq_length=MAX, **options)
    alone = [pipe(item) for item in inputs]
    rng = random.Random(7)
    for round_ in range(3):
        order = list(range(len(inputs)))
        rng.shuffle(order)
        batched = pipe([inputs[i] for i in order])
        for k, i in enumerate(order):
            assert_nested_close(batched[k], alone[i], f"round {round_}, input {i}")
    if cls is QuestionAnsweringPipeline:
        for item, answer in zip(inputs, alone):
            assert answer["answer"] not in ("empty", ""), item
            assert item["context"][answer["start"]:answer["end"]] == answer["answer"], item


def test_the_v1_answer_is_a_valid_span_when_the_best_logits_are_padding(env):
    """A model whose largest logits sit past the input: the n-best lists rank the input's own positions."""
    tokenizer, config = env

    class PaddingFavoured:
        dynamic_lengths, input_names, config, kind = False, (), env[1], "squad_v1"

        def __call__(self, features, output_names):
            mask = np.asarray(features["input_mask"], np.float32)
            position = np.arange(mask.shape[-1], dtype=np.float32)
            # Real positions score by position (ends late, starts early), padding scores 100.
            start = np.where(mask > 0, -position, 100.0)
            end = np.where(mask > 0, position, 100.0)
            return {"start_logits": start, "end_logits": end}

    pipe = QuestionAnsweringPipeline(PaddingFavoured(), tokenizer, True, max_seq_length=MAX, n_best_size=4,
                                     max_query_length=12, doc_stride=16, max_answer_length=3)
    answer = pipe(question="who ?", context="a man built the tower in 1889 .")
    assert answer["answer"] not in ("empty", "")
    assert "a man built the tower in 1889 ."[answer["start"]:answer["end"]] == answer["answer"]


@pytest.mark.parametrize("context", ODD + ["Ｆｕｌｌｗｉｄｔｈ ＡＢＣ and ﬃ ligatures ."])
def test_every_piece_maps_to_the_raw_characters_it_came_from(env, context):
    tokenizer, _ = env
    pieces = tokenization.encode_pieces(tokenizer.sp_model, tokenization.preprocess_text(context, lower=True))
    if context == ODD[0]:
        assert squad.align_pieces(context, pieces, True) is None   # the original's alignment: a mismatch
    alignment = squad.align_pieces(context, pieces, True, expand_characters=True)
    assert alignment is not None
    for piece, start, end in zip(pieces, alignment["tok_start_to_orig_index"], alignment["tok_end_to_orig_index"]):
        text = piece.replace("\u2581", " ").strip()
        if not text:
            continue
        raw = unicodedata.normalize("NFKD", context[start:end + 1]).lower()
        raw = "".join(c for c in raw if not unicodedata.combining(c))
        assert text in raw, (piece, context[start:end + 1])


def test_a_numpy_array_and_a_generator_give_what_the_list_gives(env):
    tokenizer, config = env
    tf.keras.utils.set_random_seed(3)
    model = _built(AlbertClassifier(config, num_labels=3))
    pipe = TextClassificationPipeline(KerasRunner(model), tokenizer, True, max_seq_length=MAX)
    texts, pairs = SENTENCES[:4], [(SENTENCES[0], SENTENCES[1]), (SENTENCES[2], SENTENCES[3])]
    assert_nested_close(pipe(np.array(texts)), pipe(texts), "array")
    assert_nested_close(pipe(text for text in texts), pipe(texts), "generator")
    assert_nested_close(pipe(np.array(pairs)), pipe(pairs), "array of pairs")
    assert_nested_close(pipe(np.array(texts[0])), pipe(texts[0]), "0-d array")
    qa = QuestionAnsweringPipeline(KerasRunner(_built(AlbertSquadV1(config))), tokenizer, True, max_seq_length=MAX,
                                   max_query_length=12, doc_stride=16)
    assert_nested_close(qa(iter(QUESTIONS[:2])), qa(QUESTIONS[:2]), "iterator of questions")
