"""Length-aware batches of `albert_tf.pipeline`: for every task, the outputs of batches grouped by length and cut
to their longest member (rounded up to a multiple of 8 on a graph that runs any length, of 32 where XLA compiles
each length) equal the same model's on ids padded to `max_seq_length`, in the inputs' order; the model sees the
short lengths; fixed-shape runners keep theirs."""

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import pipelines
from albert_tf.pipelines import KerasRunner, real_length
from albert_tf.tasks.glue.model import AlbertClassifier
from albert_tf.tasks.glue.pipeline import TextClassificationPipeline
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.tasks.ner.pipeline import TokenClassificationPipeline
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.tasks.pretraining.pipeline import FillMaskPipeline
from albert_tf.tasks.race.model import AlbertRace
from albert_tf.tasks.race.pipeline import MultipleChoicePipeline
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.squad.pipeline import QuestionAnsweringPipeline
from albert_tf.models.albert_model import AlbertModel
from albert_tf.text import tokenization
import squad_fixtures as fx
from support.pipeline_models import assert_nested_close, built as _built

MAX = 64   # the fixture config's max_position_embeddings: buckets 8, 16, ..., 64


def _rounded(length, multiple=8):
    """The length a batch whose longest member has `length` tokens runs at: the next multiple, at most MAX."""
    return min(-(-length // multiple) * multiple, MAX)

SENTENCES = ["a tower .", "the city lies at the tip of the lake and is home to a school founded in 1855 .",
             "coffee", "she was born in warsaw in 1867 and won two prizes , one in physics and one alone .",
             "the river discharges water into the ocean .", "yes"]
CONTEXTS = [paragraph for paragraph, _, _ in fx.PARAGRAPHS]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    spm_file, config, _ = fx.model_files(tmp_path_factory.mktemp("length_buckets"))
    return tokenization.FullTokenizer(spm_model_file=spm_file, do_lower_case=True), config


class _Recording:
    """A runner that records the sequence length of every batch it runs."""

    def __init__(self, runner):
        self.runner, self.lengths = runner, []

    def __getattr__(self, name):
        return getattr(self.runner, name)

    def __call__(self, features, output_names):
        self.lengths.append(np.shape(features["input_ids"])[-1])
        return self.runner(features, output_names)


CASES = {
    "text-classification": (TextClassificationPipeline, lambda c: AlbertClassifier(c, num_labels=3), {},
                            SENTENCES + [(SENTENCES[1], SENTENCES[3])]),
    "feature-extraction": (pipelines.FeatureExtractionPipeline, AlbertModel, {}, SENTENCES),
    "fill-mask": (FillMaskPipeline, AlbertPretrainer, {"top_k": 3},
                  ["the [MASK] .", "the city lies at the [MASK] of the lake and is home to a school founded in "
                   "1855 . she was born in [MASK] in 1867 and won two prizes", "[MASK]"]),
    "token-classification": (TokenClassificationPipeline, lambda c: AlbertTokenClassifier(c, num_labels=5), {},
                             SENTENCES),
    "multiple-choice": (MultipleChoicePipeline, AlbertRace, {"max_qa_length": 16},
                        [{"article": s, "question": "what ?", "options": ["a", "b c", "d", s[:20]]}
                         for s in SENTENCES[:4]]),
    # SQuAD 1.1's n-best lists rank each window's own positions, so any `n_best_size` gives the padded run's
    # answers; every position a candidate also checks the logits beyond the short batches' length.
    "question-answering v1": (QuestionAnsweringPipeline, AlbertSquadV1,
                              {"doc_stride": 16, "max_query_length": 12, "n_best_size": MAX},
                              [{"question": "who built it ?", "context": c} for c in CONTEXTS[:3]]
                              + [{"question": "when ?", "context": "in 1889 ."}, {"question": "who ?", "context": "a man ."}]),
    "question-answering v2": (QuestionAnsweringPipeline, AlbertSquadV2, {"doc_stride": 16, "max_query_length": 12},
                              [{"question": "where ?", "context": c} for c in CONTEXTS[2:]]
                              + [{"question": "who ?", "context": "a man ."}, {"question": "when ?", "context": "in 1889 ."}]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_length_aware_batches_equal_the_batches_padded_to_the_maximum(env, case):
    tokenizer, config = env
    cls, make_model, call_options, inputs = CASES[case]
    tf.keras.utils.set_random_seed(len(case))
    model = _built(make_model(config), choices=cls is MultipleChoicePipeline, positions=cls is FillMaskPipeline)
    pipe = cls(KerasRunner(model), tokenizer, True, batch_size=2, progress=False, max_seq_length=MAX,
               **{k: v for k, v in CASES[case][2].items() if k != "top_k"})
    padded = cls(KerasRunner(model), tokenizer, True, batch_size=2, progress=False, max_seq_length=MAX,
                 **{k: v for k, v in CASES[case][2].items() if k != "top_k"})
    padded.runner.dynamic_lengths = False    # the same model, every batch at `max_seq_length`
    pipe.runner, padded.runner = _Recording(pipe.runner), _Recording(padded.runner)
    call = {"top_k": call_options["top_k"]} if "top_k" in call_options else {}
    got, expected = pipe(inputs, **call), padded(inputs, **call)
    assert_nested_close(got, expected)
    assert set(padded.runner.lengths) == {MAX}
    assert min(pipe.runner.lengths) < MAX and all(n % 8 == 0 or n == MAX for n in pipe.runner.lengths)

    # The raw outputs row by row, in the rows' order: the padded ones cut to the short ones' length.
    rows, _ = pipe._encode([pipe._check(item, i) for i, item in enumerate(inputs)])
    short, full = pipe._run(rows), padded._run(rows)
    assert [real_length(row["input_mask"]) for row in rows] != sorted(real_length(r["input_mask"]) for r in rows)
    for s, f in zip(short, full):
        for name in s:
            cut = f[name][tuple(slice(0, n) for n in s[name].shape)]
            if name.endswith("_top_index"):   # SQuAD 2.0's top-k: the positions, ties in either order
                _assert_same_top_k(s[name], cut, f[name.replace("_index", "_log_probs")], name)
            else:
                np.testing.assert_allclose(s[name], cut, atol=1e-5, rtol=0, err_msg=name)


def _assert_same_top_k(got, expected, log_probs, name):
    """The top-k positions `got` equal `expected`, except where candidates tie (log-probabilities within 1e-5,
    a random model's near-equal logits): a tied candidate may take the other's slot."""
    got, expected, log_probs = (np.ravel(a) for a in (got, expected, log_probs))
    for slot in np.flatnonzero(got != expected):
        tied = np.abs(log_probs - log_probs[slot]) <= 1e-5
        assert got[slot] in expected[tied], (name, slot, got, expected)


def test_a_fixed_shape_runner_keeps_the_full_length_and_the_input_order(env):
    tokenizer, config = env
    pipe = TextClassificationPipeline(KerasRunner(_built(AlbertClassifier(config, num_labels=2))), tokenizer, True,
                                      batch_size=4, max_seq_length=MAX)
    rows, _ = pipe._encode([pipe._check(item, i) for i, item in enumerate(SENTENCES)])
    batches = pipe._batches(rows)
    lengths = [real_length(row["input_mask"]) for row in rows]
    assert sorted(i for indices, _ in batches for i in indices) == list(range(len(rows)))
    for indices, length in batches:
        assert length == _rounded(max(lengths[i] for i in indices))
    assert min(length for _, length in batches) < 32
    pipe.runner.compiles_per_shape = True    # XLA: each length compiles once, so fewer lengths
    for indices, length in pipe._batches(rows):
        assert length == _rounded(max(lengths[i] for i in indices), 32)
    pipe.runner.dynamic_lengths = False
    assert pipe._batches(rows) == [([0, 1, 2, 3], None), ([4, 5], None)]
    assert real_length([[1, 1, 0, 0], [1, 1, 1, 0]]) == 3 and real_length([0, 0]) == 1
