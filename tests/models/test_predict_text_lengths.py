"""`Model.predict` on raw text runs each batch at its longest text (rounded up to a multiple of 8), not at the
preprocessor's `max_seq_length`: the outputs equal the same model's on the ids packed to `max_seq_length` (1e-5)
at every real position, and come back at `max_seq_length` (positions past a batch's cut hold 0, `p_mask` 1)."""

import keras
import numpy as np
import pytest

from albert_tf import AlbertClassifier, AlbertPretrainer, AlbertRace, AlbertSquadV1, AlbertSquadV2
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.text.preprocessor import AlbertPreprocessor
from glue_fixtures import model_files  # noqa: F401  (a fixture)

MAX = 64    # the fixture config's max_position_embeddings: batches of short texts run short

SHORT = ["a good film .", "the plot was sad", "nice ."]
LONG = ["the movie was good and the plot was nice , " * 4 + "the end ."]
TEXTS = SHORT[:2] + LONG + SHORT[2:]     # batch 2: [short, short] short, [long, short] at 64
ARTICLE = ["the movie was good .", "the plot was sad and long and the actors were not very good at all " * 2]

CASES = {
    "classifier": (lambda c, p: AlbertClassifier(c, num_labels=3, preprocessor=p), {}, TEXTS),
    "token classifier": (lambda c, p: AlbertTokenClassifier(c, num_labels=4, preprocessor=p), {}, TEXTS),
    "pretrainer": (lambda c, p: AlbertPretrainer(c, preprocessor=p), {"max_predictions_per_seq": 2},
                   ["the [MASK] .", "a [mask] film", LONG[0] + " [MASK]", "[MASK] ."]),
    "squad v1": (lambda c, p: AlbertSquadV1(c, preprocessor=p), {"max_query_length": 8},
                 {"question": ["what ?", "who ?", "what was it ?", "why ?"], "context": TEXTS}),
    "squad v2": (lambda c, p: AlbertSquadV2(c, preprocessor=p, start_n_top=2, end_n_top=2), {"max_query_length": 8},
                 {"question": ["what ?", "who ?", "what was it ?", "why ?"], "context": TEXTS}),
    "race": (lambda c, p: AlbertRace(c, preprocessor=p), {"max_qa_length": 8},
             {"article": ARTICLE[:1] * 2 + ARTICLE[1:] + ARTICLE[:1], "question": ["what ?"] * 4,
              "options": [["a", "b", "c", "d"]] * 4}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_predict_on_text_equals_the_ids_packed_to_the_maximum(model_files, case):  # noqa: F811
    make, options, inputs = CASES[case]
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=MAX, **options)
    keras.utils.set_random_seed(3)
    model = make(model_files["config"], pre)
    packed = {name: value.numpy() for name, value in pre(inputs, mode=model._PREPROCESS_MODE).items()}
    got = model.predict(inputs, batch_size=2, verbose=0)
    expected = model.predict(packed, batch_size=2, verbose=0)
    mask = packed["input_mask"]
    real = mask.reshape(-1, MAX).any(0).nonzero()[0].max() + 1
    assert 32 < real <= MAX and mask[:2].reshape(-1, MAX).any(0).nonzero()[0].max() < 32
    for name, value in expected.items():
        if name not in got or isinstance(value, list):
            continue   # (a list: the encoder layers, whose last one is `sequence_output`)
        assert got[name].shape == value.shape, name
        seq_axis = mask.ndim - 1
        if value.ndim > seq_axis and value.shape[seq_axis] == MAX and name not in ("masked_lm_positions",):
            # Compared at the real positions: past a batch's cut the text batches hold 0.
            keep = np.broadcast_to(mask.reshape(mask.shape + (1,) * (value.ndim - mask.ndim)) > 0, value.shape)
            np.testing.assert_allclose(got[name][keep], value[keep], atol=1e-5, rtol=0, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], value, atol=1e-5, rtol=0, err_msg=name)


def test_batches_of_text_round_to_8_in_a_graph_and_to_32_where_each_length_compiles(model_files):  # noqa: F811
    pre = AlbertPreprocessor(model_files["spm"], max_seq_length=MAX)
    model = AlbertClassifier(model_files["config"], num_labels=3, preprocessor=pre)
    mask = pre(TEXTS).get("input_mask").numpy()
    longest = [int(mask[i:i + 2].any(0).nonzero()[0].max()) + 1 for i in (0, 2)]    # per batch of 2
    assert longest[0] <= 24 < 32 < longest[1]      # the two roundings differ on the first batch
    for jit_compile in (False, True):
        model.jit_compile = jit_compile      # XLA (JAX's default): each new length compiles once
        multiple = 32 if model.jit_compile else 8    # (Keras keeps False where the model cannot compile)
        batches = model._text_dataset(TEXTS, batch_size=2, cut=True)
        lengths = [int(features["input_ids"].shape[-1]) for features, *_ in batches]
        assert lengths == [min(-(-n // multiple) * multiple, MAX) for n in longest], (jit_compile, lengths)
