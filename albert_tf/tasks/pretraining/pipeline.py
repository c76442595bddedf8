"""Text in, pieces out: the `"fill-mask"` pipeline (`AlbertPretrainer`'s masked-LM head).

`albert_tf.pipeline("fill-mask", source)("the [MASK] of france", top_k=5)` -> per `[MASK]` (in order) a list of
`top_k` `{"token": piece, "token_id": int, "score": probability}` from the MLM head. The text between masks is
tokenized chunk by chunk, as the export's `serve_text`, and packed as a GLUE sentence (pair). A source is a
checkpoint with the MLM head, an `albert-export --model=pretrainer` directory or its LiteRT export.
"""

import contextlib
import re

import numpy as np

from albert_tf.config import TOKEN_INPUTS
from albert_tf import registry
from albert_tf.errors import InputError
from albert_tf.pipelines import Pipeline
from albert_tf.tasks.pretraining.model import AlbertPretrainer
from albert_tf.text import packing

_MASK_PATTERN = re.compile(r"\[mask\]", re.IGNORECASE)


class _MaskedTokenizer:
    """`tokenize` keeps each literal `[MASK]` (any case) as the `[MASK]` piece and tokenizes the text between the
    masks chunk by chunk, as the export's in-graph `tokenize_with_masks`; texts come in unprocessed."""

    def __init__(self, tokenizer, process_text):
        self.tokenizer = tokenizer
        self.process_text = process_text

    def tokenize(self, text):
        pieces = []
        for i, chunk in enumerate(_MASK_PATTERN.split(text)):
            if i:
                pieces.append("[MASK]")
            pieces.extend(self.tokenizer.tokenize(self.process_text(chunk)))
        return pieces

    def convert_tokens_to_ids(self, tokens):
        return self.tokenizer.convert_tokens_to_ids(tokens)


@registry.register_pipeline
class FillMaskPipeline(Pipeline):
    """`"fill-mask"`: the `top_k` most probable pieces at each `[MASK]` of a text (or a pair)."""

    task = "fill-mask"
    model_class = AlbertPretrainer
    required_heads = ("mlm",)
    defaults = {"max_seq_length": 512, "do_lower_case": True, "top_k": 5}
    output_names = ("mlm_logits",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mask_id = self.tokenizer.convert_tokens_to_ids(["[MASK]"])[0]
        self.masked_tokenizer = _MaskedTokenizer(self.tokenizer, self.process_text)

    def __call__(self, inputs=None, top_k=None, **kwargs):
        if top_k is not None:
            with self._top_k(top_k):
                return super().__call__(inputs, **kwargs)
        return super().__call__(inputs, **kwargs)

    @contextlib.contextmanager
    def _top_k(self, top_k):
        saved, self.top_k = self.top_k, top_k
        try:
            yield
        finally:
            self.top_k = saved

    def _check(self, item, index):
        text_a, text_b = self._text_pair(item, index)
        if not _MASK_PATTERN.search(text_a + (text_b or "")):
            raise InputError(f"Input {index} of 'fill-mask' has no `[MASK]`: {text_a!r}.")
        return text_a, text_b

    def _encode(self, items):
        rows = []
        for index, (text_a, text_b) in enumerate(items):
            # The masked tokenizer processes the text chunk by chunk: the example holds the raw texts.
            row = packing.pack_pair(self.masked_tokenizer, text_a, text_b, self.max_seq_length)
            row["masked_lm_positions"] = [i for i, piece_id in enumerate(row["input_ids"]) if piece_id == self.mask_id]
            rows.append(row)
        return rows, rows

    def _stack(self, batch):
        width = max(1, max(len(row["masked_lm_positions"]) for row in batch))
        features = {name: np.asarray([row[name] for row in batch], np.int32)
                    for name in TOKEN_INPUTS}
        # Padded with position 0, as `serve_text`; the padded predictions are dropped in `_decode`.
        features["masked_lm_positions"] = np.asarray(
            [row["masked_lm_positions"] + [0] * (width - len(row["masked_lm_positions"])) for row in batch],
            np.int32)
        return features

    def _decode(self, items, rows, outputs):
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise InputError(f"`top_k` must be a positive int. Received: {self.top_k!r}.")
        results = []
        for row, output in zip(rows, outputs):
            # A mask cut off by `max_seq_length` has no prediction.
            logits = output["mlm_logits"][:len(row["masked_lm_positions"])].astype(np.float64)
            probabilities = np.exp(logits - logits.max(-1, keepdims=True))
            probabilities /= probabilities.sum(-1, keepdims=True)
            per_mask = []
            for probs in probabilities:
                top = np.argsort(-probs, kind="stable")[:self.top_k]
                per_mask.append([{"token": piece, "token_id": int(i), "score": float(probs[i])}
                                 for i, piece in zip(top, self.tokenizer.convert_ids_to_tokens(top))])
            results.append(per_mask)
        return results
