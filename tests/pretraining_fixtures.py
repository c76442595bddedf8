"""The statistics of the original's pretraining-data algorithm on a generated corpus, for any
writer (the local writer's tests and the Beam writer's)."""

import collections
import random
import numpy as np
import tensorflow as tf
from albert_tf.data import features as features_lib
from albert_tf.tasks.pretraining import data as pretraining_data
from albert_tf.tasks.pretraining.writer.instances import PretrainingDataOptions
from albert_tf.text.vocab import train_sentencepiece


WORDS = ("time person year way day thing man world life hand part child eye woman place work week case point "
         "government company number group problem fact be have do say get make go know take see come think "
         "look want give use find tell ask seem feel try leave call good new first last long great little own "
         "other old right big high different small large next early young important few public bad same able "
         "running unbelievable internationalization reconsider").split()


def _sentence(rng, low=3, high=12):
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    if rng.random() < 0.3:
        words.insert(rng.randint(0, len(words)), f"{rng.randint(1, 2000)},")
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice([".", ".", "!", "?"])


def _write_corpus(path, rng, num_documents, low_sentences=1, high_sentences=12):
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(num_documents):
            for _ in range(rng.randint(low_sentences, high_sentences)):
                f.write(_sentence(rng) + "\n")
            f.write("\n")


def _examples(path):
    return [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(path)]


def _as_arrays(path, seq, pred):
    spec = features_lib.parse_spec(pretraining_data.PRETRAINING, seq=seq, pred=pred)
    rows = collections.defaultdict(list)
    for record in tf.data.TFRecordDataset(path):
        for key, value in tf.io.parse_single_example(record, spec).items():
            rows[key].append(value.numpy())
    return {key: np.stack(values) for key, values in rows.items()}


def check_statistics(tmp_path, write):
    """The statistics of the original's algorithm on a generated corpus, for any writer.

    `write(input_path, output_path, spm_model_file, options)` returns (`PretrainingStats`, TFRecord paths).
    """
    rng = random.Random(1)
    path = str(tmp_path / "long_docs.txt")
    # Long documents, so most chunks have several sentences (SOP then swaps with p=0.5).
    _write_corpus(path, rng, 40, low_sentences=40, high_sentences=60)
    # Every word of the generator is one piece, so n-grams of words are short in tokens.
    spm_model = train_sentencepiece([path], str(tmp_path / "spm"), vocab_size=400, minloglevel=2,
                                    hard_vocab_limit=False)
    seq, pred = 128, 128  # max_predictions large enough not to cap the 15%
    stats, paths = write(path, str(tmp_path / "stats.tfrecord"), spm_model,
                         PretrainingDataOptions(max_seq_length=seq, max_predictions_per_seq=pred, dupe_factor=10))
    arrays = _as_arrays(paths, seq, pred)
    n = len(arrays["input_ids"])
    assert n == stats.instances > 1000

    lengths = arrays["input_mask"].sum(1)
    n_masked = arrays["masked_lm_weights"].sum(1)
    expected = np.minimum(pred, np.maximum(1, np.round(lengths * 0.15)))
    assert np.all(n_masked <= expected)
    assert abs(n_masked.sum() / lengths.sum() - 0.15) < 0.01
    assert abs(stats.masked_fraction - n_masked.sum() / lengths.sum()) < 1e-9

    # 80% [MASK], 10% kept, 10% random.
    positions = arrays["masked_lm_positions"]
    real = arrays["masked_lm_weights"] > 0
    shown = np.take_along_axis(arrays["input_ids"], positions, 1)[real]
    labels = arrays["masked_lm_ids"][real]
    mask_rate = np.mean(shown == 4)
    kept_rate = np.mean(shown == labels)
    assert abs(mask_rate - 0.8) < 0.02
    assert abs(kept_rate - 0.1) < 0.015
    assert abs(1 - mask_rate - kept_rate - 0.1) < 0.015

    # SOP labels ~50/50 on long documents.
    assert abs(arrays["next_sentence_labels"].mean() - 0.5) < 0.04
    assert abs(stats.sop_positive_fraction - arrays["next_sentence_labels"].mean()) < 1e-9
    # Short targets in ~10% of the document passes.
    assert stats.document_passes == 400
    assert abs(stats.short_target_fraction - 0.1) < 0.05

    # n-gram sizes drawn with p ~ 1/n: the applied sizes, and the isolated masked word spans.
    draws = np.array(stats.ngram_draws, float)
    np.testing.assert_allclose(draws / draws.sum(), [6 / 11, 3 / 11, 2 / 11], atol=0.015)
    spans = collections.Counter()
    boundary = arrays["token_boundary"]
    for row in range(n):
        length = lengths[row]
        masked = set(positions[row][real[row]].tolist())
        # Words: a start piece begins a new word; [CLS]/[SEP] are not words.
        sep = [i for i in range(length) if arrays["input_ids"][row, i] == 3]
        words = []
        for i in range(1, length - 1):
            if i in sep:
                continue
            if boundary[row, i] or not words:
                words.append([i])
            else:
                words[-1].append(i)
        flags = [all(i in masked for i in w) for w in words]
        run = 0
        for k, flag in enumerate(flags + [False]):
            if flag:
                run += 1
            elif run:
                start = k - run
                if start > 0 and k < len(flags):  # both neighbours are unmasked words
                    spans[run] += 1
                run = 0
    total = sum(spans[k] for k in (1, 2, 3))
    fractions = [spans[k] / total for k in (1, 2, 3)]
    # Merged neighbours and the back-off near the budget move these a little (measured: .558 .275 .167).
    np.testing.assert_allclose(fractions, [6 / 11, 3 / 11, 2 / 11], atol=0.03)
