"""The pretraining data writer of the original `create_pretraining_data.py` (`albert-create-pretraining-data`):
raw text to SOP pairs with n-gram masks, serialized as the TFRecords that `run_pretraining` reads.

- `instances`: the algorithm (documents, SOP pairs, n-gram masking) and its options (`PretrainingDataOptions`).
- `records`: an instance as a `tf.train.Example`; `shuffle`: the seeded shuffles of a shard.
- `local`: the writer on this machine (worker processes over shards of text).
- `beam`: the same work as an Apache Beam pipeline (the `[beam]` extra).
- `create_data`: the command's options and the call that picks the local writer or Beam.
"""
