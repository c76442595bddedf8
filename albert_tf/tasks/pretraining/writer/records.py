"""Serialized `tf.train.Example` records of the pretraining schema, encoded directly as protobuf wire bytes.

Example{features: Features{feature: map<string, Feature>}}, each Feature an Int64List (packed varints) or a
FloatList (packed little-endian float32), the entries in the order of the original's
`write_instance_to_example_files` (`create_pretraining_data.py`). Building each record with the protobuf
API costs several times more than the rest of an instance; `benchmarks/bench_pretraining_data.py
--shuffle_and_encoder` measures it. `tests/tasks/pretraining/test_pretraining_data.py` checks the bytes against
`tf.train.Example.SerializeToString` of messages built there by hand.
"""

import numpy as np


def _varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _entry_prefix(key, payload_length, float_list=False):
    """The bytes of one `feature` map entry up to its packed payload of `payload_length` bytes."""
    packed = b"\x0a" + _varint(payload_length)  # Int64List/FloatList field 1, packed
    feature_length = len(packed) + payload_length
    feature = (b"\x12" if float_list else b"\x1a") + _varint(feature_length) + packed
    entry_head = b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(len(feature) + payload_length) + feature
    return b"\x0a" + _varint(len(entry_head) + payload_length) + entry_head


class ExampleEncoder:
    """Serializes one pretraining instance as a `tf.train.Example` of the PRETRAINING schema, the features
    in the original's order, from per-id varint tables and cached constant prefixes."""

    def __init__(self, max_seq_length, num_predictions, vocab_size, unk_id):
        self.seq = max_seq_length
        self.num_predictions = num_predictions
        # Extended id `vocab_size` (an <unk> that is not a start piece) is written as <unk>.
        self.id_bytes = [_varint(i) for i in range(vocab_size)] + [_varint(unk_id)]
        self.num_bytes = [_varint(i) for i in range(max_seq_length + 1)]  # masked positions
        self.zeros = b"\x00" * max(max_seq_length, 4 * num_predictions)
        self.ones = b"\x01" * max_seq_length
        self.mask_prefix = _entry_prefix(b"input_mask", max_seq_length)
        self.segment_prefix = _entry_prefix(b"segment_ids", max_seq_length)
        self.boundary_prefix = _entry_prefix(b"token_boundary", max_seq_length)
        self.weights_prefix = _entry_prefix(b"masked_lm_weights", 4 * num_predictions, float_list=True)
        self.label_entries = [_entry_prefix(b"next_sentence_labels", 1) + bytes([label]) for label in (0, 1)]
        self.one_float = np.float32(1.0).astype("<f4").tobytes()
        self._prefixes = {}

    def _prefix(self, key, length):
        prefix = self._prefixes.get((key, length))
        if prefix is None:
            prefix = self._prefixes[(key, length)] = _entry_prefix(key, length)
        return prefix

    def encode(self, ids, len_a, boundary, positions, labels, label):
        """ids: list of extended ids (unpadded); boundary: bytes; positions, labels: lists (unpadded)."""
        seq = self.seq
        length = len(ids)
        pad = self.zeros[:seq - length]
        id_bytes = self.id_bytes
        ids_payload = b"".join(map(id_bytes.__getitem__, ids)) + pad
        n = len(positions)
        pred_pad = self.zeros[:self.num_predictions - n]
        pos_payload = b"".join(map(self.num_bytes.__getitem__, positions)) + pred_pad
        lab_payload = b"".join(map(id_bytes.__getitem__, labels)) + pred_pad
        body = b"".join((
            self._prefix(b"input_ids", len(ids_payload)), ids_payload,
            self.mask_prefix, self.ones[:length], pad,
            self.segment_prefix, self.zeros[:len_a + 2], self.ones[:length - len_a - 2], pad,
            self.boundary_prefix, boundary, pad,
            self._prefix(b"masked_lm_positions", len(pos_payload)), pos_payload,
            self._prefix(b"masked_lm_ids", len(lab_payload)), lab_payload,
            self.weights_prefix, self.one_float * n, self.zeros[:4 * (self.num_predictions - n)],
            self.label_entries[label],
        ))
        return b"\x0a" + _varint(len(body)) + body
