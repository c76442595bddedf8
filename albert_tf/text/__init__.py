"""Text: the original's tokenization module, the in-graph text ops, the Keras preprocessor and the vocabulary.

- `tokenization`: the original release's `tokenization.py` API (`FullTokenizer`, `preprocess_text`, ...).
- `ops`: the same tokenization and input packing as TensorFlow ops (SentencePiece through tensorflow-text).
- `preprocessor`: `AlbertPreprocessor`, the Keras layer from raw strings to the model's inputs.
- `vocab`: training a SentencePiece model with the original `spm_train` flags (`albert-train-vocab`).
"""
