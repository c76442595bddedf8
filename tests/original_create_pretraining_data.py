# coding=utf-8
# Copyright 2018 The Google AI Team Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
#
# Adapted from google-research/ALBERT/create_pretraining_data.py (and `encode_pieces` of
# google-research/ALBERT/tokenization.py). Changes: the absl flags became the arguments of `run` (a
# namedtuple `Flags` carries the ones the functions read); the n-gram size comes from a seeded
# `numpy.random.Generator` (`np_rng.choice`) instead of the unseeded global `np.random.choice`; TF1 calls
# became their `tf.io` equivalents; logging and the `six` / Python 2 branches were removed; the SentencePiece
# pieces come from `encode_pieces` below, the original's function as it runs under Python 3.
"""A straightforward pure-Python transcription of the original `create_pretraining_data.py`: a test oracle.

Two uses: the reference that `tests/tasks/pretraining/test_pretraining_data.py` and `tests/tasks/pretraining/test_beam_writer.py` compare the
writer of `albert_tf.data` with, and the speed baseline of `benchmarks/bench_pretraining_data.py`. It keeps
the original's data structures and costs (token strings, lists, `_is_start_piece_sp` rebuilding its sets per
call, `tf.train.Example` built with the protobuf API) and holds the corpus and every instance in RAM.
"""

import collections
import random

import numpy as np
import tensorflow as tf

from albert_tf.text import tokenization

SPIECE_UNDERLINE = "▁".encode("utf-8")


def encode_pieces(sp_model, text):
    """The original's `tokenization.encode_pieces` (no sampling), line for line, run under Python 3.

    `cur_pieces[0][0]` is a `str` character and `SPIECE_UNDERLINE` is `bytes`: they are never equal, so
    the `▁` in front of re-encoded digits is never removed.
    """
    pieces = sp_model.EncodeAsPieces(text)
    new_pieces = []
    for piece in pieces:
        if len(piece) > 1 and piece[-1] == str(",") and piece[-2].isdigit():
            cur_pieces = sp_model.EncodeAsPieces(piece[:-1].encode("utf-8").replace(SPIECE_UNDERLINE, b""))
            if piece[0] != SPIECE_UNDERLINE and cur_pieces[0][0] == SPIECE_UNDERLINE:
                if len(cur_pieces[0]) == 1:
                    cur_pieces = cur_pieces[1:]
                else:
                    cur_pieces[0] = cur_pieces[0][1:]
            cur_pieces.append(piece[-1])
            new_pieces.extend(cur_pieces)
        else:
            new_pieces.append(piece)
    return new_pieces


def tokenize(tokenizer, text):
    """`FullTokenizer.tokenize` of the original: `encode_pieces` with SentencePiece, else WordPiece."""
    if tokenizer.sp_model is not None:
        return encode_pieces(tokenizer.sp_model, text)
    return tokenizer.tokenize(text)


Flags = collections.namedtuple(
    "Flags",
    [
        "spm_model_file", "do_lower_case", "do_whole_word_mask", "do_permutation", "favor_shorter_ngram",
        "random_next_sentence", "ngram",
    ],
)


class TrainingInstance:
    def __init__(self, tokens, segment_ids, masked_lm_positions, masked_lm_labels, is_random_next,
                 token_boundary):
        self.tokens = tokens
        self.segment_ids = segment_ids
        self.is_random_next = is_random_next
        self.token_boundary = token_boundary
        self.masked_lm_positions = masked_lm_positions
        self.masked_lm_labels = masked_lm_labels


MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])


def create_int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def create_float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def write_instance_to_example_files(instances, tokenizer, max_seq_length, max_predictions_per_seq,
                                    output_files, flags):
    writers = [tf.io.TFRecordWriter(f) for f in output_files]
    writer_index = 0
    for instance in instances:
        input_ids = tokenizer.convert_tokens_to_ids(instance.tokens)
        input_mask = [1] * len(input_ids)
        segment_ids = list(instance.segment_ids)
        token_boundary = list(instance.token_boundary)
        assert len(input_ids) <= max_seq_length
        while len(input_ids) < max_seq_length:
            input_ids.append(0)
            input_mask.append(0)
            segment_ids.append(0)
            token_boundary.append(0)
        masked_lm_positions = list(instance.masked_lm_positions)
        masked_lm_ids = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
        masked_lm_weights = [1.0] * len(masked_lm_ids)
        multiplier = 1 + int(flags.do_permutation)
        while len(masked_lm_positions) < max_predictions_per_seq * multiplier:
            masked_lm_positions.append(0)
            masked_lm_ids.append(0)
            masked_lm_weights.append(0.0)
        features = collections.OrderedDict()
        features["input_ids"] = create_int_feature(input_ids)
        features["input_mask"] = create_int_feature(input_mask)
        features["segment_ids"] = create_int_feature(segment_ids)
        features["token_boundary"] = create_int_feature(token_boundary)
        features["masked_lm_positions"] = create_int_feature(masked_lm_positions)
        features["masked_lm_ids"] = create_int_feature(masked_lm_ids)
        features["masked_lm_weights"] = create_float_feature(masked_lm_weights)
        features["next_sentence_labels"] = create_int_feature([1 if instance.is_random_next else 0])
        example = tf.train.Example(features=tf.train.Features(feature=features))
        writers[writer_index].write(example.SerializeToString())
        writer_index = (writer_index + 1) % len(writers)
    for w in writers:
        w.close()


def create_training_instances(input_files, tokenizer, max_seq_length, dupe_factor, short_seq_prob,
                              masked_lm_prob, max_predictions_per_seq, rng, np_rng, flags):
    all_documents = [[]]
    for input_file in input_files:
        with tf.io.gfile.GFile(input_file, "r") as reader:
            while True:
                line = reader.readline()
                if not flags.spm_model_file:
                    line = tokenization.convert_to_unicode(line)
                if not line:
                    break
                if flags.spm_model_file:
                    line = tokenization.preprocess_text(line, lower=flags.do_lower_case)
                else:
                    line = line.strip()
                if not line:
                    all_documents.append([])
                tokens = tokenize(tokenizer, line)
                if tokens:
                    all_documents[-1].append(tokens)
    all_documents = [x for x in all_documents if x]
    rng.shuffle(all_documents)
    vocab_words = list(tokenizer.vocab.keys())
    instances = []
    for _ in range(dupe_factor):
        for document_index in range(len(all_documents)):
            instances.extend(create_instances_from_document(
                all_documents, document_index, max_seq_length, short_seq_prob, masked_lm_prob,
                max_predictions_per_seq, vocab_words, rng, np_rng, flags))
    rng.shuffle(instances)
    return instances


def create_instances_from_document(all_documents, document_index, max_seq_length, short_seq_prob,
                                   masked_lm_prob, max_predictions_per_seq, vocab_words, rng, np_rng, flags):
    document = all_documents[document_index]
    max_num_tokens = max_seq_length - 3
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances = []
    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = []
                for j in range(a_end):
                    tokens_a.extend(current_chunk[j])
                tokens_b = []
                if len(current_chunk) == 1 or (flags.random_next_sentence and rng.random() < 0.5):
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    for _ in range(10):
                        random_document_index = rng.randint(0, len(all_documents) - 1)
                        if random_document_index != document_index:
                            break
                    random_document = all_documents[random_document_index]
                    random_start = rng.randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b.extend(random_document[j])
                        if len(tokens_b) >= target_b_length:
                            break
                    num_unused_segments = len(current_chunk) - a_end
                    i -= num_unused_segments
                elif not flags.random_next_sentence and rng.random() < 0.5:
                    is_random_next = True
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])
                    tokens_a, tokens_b = tokens_b, tokens_a
                else:
                    is_random_next = False
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])
                truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                assert len(tokens_a) >= 1
                assert len(tokens_b) >= 1
                tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
                segment_ids = [0] * len(tokens)
                for token in tokens_b:
                    tokens.append(token)
                    segment_ids.append(1)
                tokens.append("[SEP]")
                segment_ids.append(1)
                (tokens, masked_lm_positions, masked_lm_labels, token_boundary) = create_masked_lm_predictions(
                    tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng, np_rng, flags)
                instances.append(TrainingInstance(
                    tokens=tokens, segment_ids=segment_ids, is_random_next=is_random_next,
                    token_boundary=token_boundary, masked_lm_positions=masked_lm_positions,
                    masked_lm_labels=masked_lm_labels))
            current_chunk = []
            current_length = 0
        i += 1
    return instances


def _is_start_piece_sp(piece):
    special_pieces = set(list('!"#$%&"()*+,-./:;?@[\\]^_`{|}~'))
    special_pieces.add("€".encode("utf-8"))
    special_pieces.add("£".encode("utf-8"))
    english_chars = set(list("abcdefghijklmnopqrstuvwxyz"))
    if (piece.startswith("▁") or piece.startswith("<") or piece in special_pieces
            or not all([str(i).lower() in english_chars.union(special_pieces) for i in piece])):
        return True
    return False


def _is_start_piece_bert(piece):
    return not piece.startswith("##")


def is_start_piece(piece, flags):
    if flags.spm_model_file:
        return _is_start_piece_sp(piece)
    return _is_start_piece_bert(piece)


def create_masked_lm_predictions(tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng, np_rng,
                                 flags):
    cand_indexes = []
    token_boundary = [0] * len(tokens)
    for (i, token) in enumerate(tokens):
        if token == "[CLS]" or token == "[SEP]":
            token_boundary[i] = 1
            continue
        if flags.do_whole_word_mask and len(cand_indexes) >= 1 and not is_start_piece(token, flags):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])
            if is_start_piece(token, flags):
                token_boundary[i] = 1
    output_tokens = list(tokens)
    masked_lm_positions = []
    masked_lm_labels = []
    if masked_lm_prob == 0:
        return (output_tokens, masked_lm_positions, masked_lm_labels, token_boundary)
    num_to_predict = min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob))))
    ngrams = np.arange(1, flags.ngram + 1, dtype=np.int64)
    pvals = 1. / np.arange(1, flags.ngram + 1)
    pvals /= pvals.sum(keepdims=True)
    if not flags.favor_shorter_ngram:
        pvals = pvals[::-1]
    ngram_indexes = []
    for idx in range(len(cand_indexes)):
        ngram_index = []
        for n in ngrams:
            ngram_index.append(cand_indexes[idx:idx + n])
        ngram_indexes.append(ngram_index)
    rng.shuffle(ngram_indexes)
    masked_lms = []
    covered_indexes = set()
    for cand_index_set in ngram_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        if not cand_index_set:
            continue
        for index_set in cand_index_set[0]:
            for index in index_set:
                if index in covered_indexes:
                    continue
        n = np_rng.choice(ngrams[:len(cand_index_set)],
                          p=pvals[:len(cand_index_set)] / pvals[:len(cand_index_set)].sum(keepdims=True))
        index_set = sum(cand_index_set[n - 1], [])
        n -= 1
        while len(masked_lms) + len(index_set) > num_to_predict:
            if n == 0:
                break
            index_set = sum(cand_index_set[n - 1], [])
            n -= 1
        if len(masked_lms) + len(index_set) > num_to_predict:
            continue
        is_any_index_covered = False
        for index in index_set:
            if index in covered_indexes:
                is_any_index_covered = True
                break
        if is_any_index_covered:
            continue
        for index in index_set:
            covered_indexes.add(index)
            if rng.random() < 0.8:
                masked_token = "[MASK]"
            else:
                if rng.random() < 0.5:
                    masked_token = tokens[index]
                else:
                    masked_token = vocab_words[rng.randint(0, len(vocab_words) - 1)]
            output_tokens[index] = masked_token
            masked_lms.append(MaskedLmInstance(index=index, label=tokens[index]))
    assert len(masked_lms) <= num_to_predict
    rng.shuffle(ngram_indexes)
    select_indexes = set()
    if flags.do_permutation:
        for cand_index_set in ngram_indexes:
            if len(select_indexes) >= num_to_predict:
                break
            if not cand_index_set:
                continue
            for index_set in cand_index_set[0]:
                for index in index_set:
                    if index in covered_indexes or index in select_indexes:
                        continue
            n = np_rng.choice(ngrams[:len(cand_index_set)],
                              p=pvals[:len(cand_index_set)] / pvals[:len(cand_index_set)].sum(keepdims=True))
            index_set = sum(cand_index_set[n - 1], [])
            n -= 1
            while len(select_indexes) + len(index_set) > num_to_predict:
                if n == 0:
                    break
                index_set = sum(cand_index_set[n - 1], [])
                n -= 1
            if len(select_indexes) + len(index_set) > num_to_predict:
                continue
            is_any_index_covered = False
            for index in index_set:
                if index in covered_indexes or index in select_indexes:
                    is_any_index_covered = True
                    break
            if is_any_index_covered:
                continue
            for index in index_set:
                select_indexes.add(index)
        assert len(select_indexes) <= num_to_predict
        select_indexes = sorted(select_indexes)
        permute_indexes = list(select_indexes)
        rng.shuffle(permute_indexes)
        orig_token = list(output_tokens)
        for src_i, tgt_i in zip(select_indexes, permute_indexes):
            output_tokens[src_i] = orig_token[tgt_i]
            masked_lms.append(MaskedLmInstance(index=src_i, label=orig_token[src_i]))
    masked_lms = sorted(masked_lms, key=lambda x: x.index)
    for p in masked_lms:
        masked_lm_positions.append(p.index)
        masked_lm_labels.append(p.label)
    return (output_tokens, masked_lm_positions, masked_lm_labels, token_boundary)


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    while True:
        total_length = len(tokens_a) + len(tokens_b)
        if total_length <= max_num_tokens:
            break
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        assert len(trunc_tokens) >= 1
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()


def run(input_files, output_files, spm_model_file=None, vocab_file=None, max_seq_length=512, dupe_factor=40,
        short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=20, random_seed=12345,
        do_lower_case=True, do_whole_word_mask=True, do_permutation=False, favor_shorter_ngram=True,
        random_next_sentence=False, ngram=3):
    """The original's `main` for one corpus; returns the number of instances written."""
    flags = Flags(spm_model_file, do_lower_case, do_whole_word_mask, do_permutation, favor_shorter_ngram,
                  random_next_sentence, ngram)
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case,
                                           spm_model_file=spm_model_file)
    rng = random.Random(random_seed)
    np_rng = np.random.default_rng(random_seed)
    instances = create_training_instances(input_files, tokenizer, max_seq_length, dupe_factor, short_seq_prob,
                                          masked_lm_prob, max_predictions_per_seq, rng, np_rng, flags)
    write_instance_to_example_files(instances, tokenizer, max_seq_length, max_predictions_per_seq,
                                    output_files, flags)
    return len(instances)
