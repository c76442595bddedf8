"""Sentence (pair) packing in Python, as the original `classifier_utils.convert_single_example` packs an example:
`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, the longer side cut one piece at a time, padded with zeros.

What the sentence pipelines (`albert_tf.pipelines`) and the default LiteRT calibration of a serving spec
(`albert_tf.serving_spec.ServingSpec.calibration_rows`) pack; the in-graph twin is
`albert_tf.text.ops.TextPipeline.pack_texts`.
"""

from albert_tf.text import tokenization


def process_text(text, use_spm=True, do_lower_case=True):
    """A raw text as the runners read it: `preprocess_text` for SentencePiece, else decoded as is."""
    if use_spm:
        return tokenization.preprocess_text(text, lower=do_lower_case)
    return text if isinstance(text, str) else text.decode("utf-8", "ignore")


def truncate_pair(tokens_a, tokens_b, max_length):
    """Truncates in place, one token at a time from the end of the longer list (ties: `tokens_b`)."""
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def pack_pair(tokenizer, text_a, text_b, max_seq_length):
    """`{"input_ids", "input_mask", "segment_ids"}` (lists of `max_seq_length` ints) of `text_a` (and `text_b`).

    Args:
        tokenizer: an object with `tokenize(text)` and `convert_tokens_to_ids(tokens)`.
        text_a: str, the first text (already processed as the tokenizer expects it).
        text_b: str or None, the second text ("" and None: a single sentence).
        max_seq_length: int, the padded length.
    """
    tokens_a = list(tokenizer.tokenize(text_a))
    tokens_b = list(tokenizer.tokenize(text_b)) if text_b else None
    if tokens_b:
        truncate_pair(tokens_a, tokens_b, max_seq_length - 3)      # [CLS], [SEP], [SEP]
    elif len(tokens_a) > max_seq_length - 2:
        tokens_a = tokens_a[0:(max_seq_length - 2)]                # [CLS], [SEP]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)
    input_ids = list(tokenizer.convert_tokens_to_ids(tokens))
    input_mask = [1] * len(input_ids)
    padding = max_seq_length - len(input_ids)
    return {"input_ids": input_ids + [0] * padding, "input_mask": input_mask + [0] * padding,
            "segment_ids": segment_ids + [0] * padding}
