"""Entity-level precision, recall and F1 as the CoNLL shared tasks' `conlleval` perl script counts them.

`conlleval` reads one token per line (`... correct guessed`), a blank line between sentences, and splits a tag
`B-PER` into a prefix (`B`) and a type (`PER`); `O` has the empty type. A chunk (entity) starts and ends where
its `startOfChunk` / `endOfChunk` rules say, so IOB1 (`I-` opens an entity after `O` or another type), IOB2
(`B-` opens each entity) and an `I-` with no `B-` before it are all counted as the script does; `E-` and the
single-token `S-` prefix (IOBES, as `seqeval` reads them) end chunks too. A sentence boundary acts as an `O`
token: no entity runs across sentences. A guessed chunk is correct when it starts and ends where a gold chunk
does, with the same type.

`conll_metrics(gold, guessed)` returns the micro precision, recall and F1 over all entities, the same per
entity type, and the token accuracy (tags equal, boundary tokens not counted), as fractions in [0, 1].
"""

import collections

from albert_tf.errors import InputError


def split_tag(tag):
    """`("B", "PER")` of `B-PER`; `("O", "")` of `O` (the perl script's `/^([^-]*)-(.*)$/`)."""
    prefix, dash, kind = tag.partition("-")
    return (prefix, kind) if dash else (tag, "")


def end_of_chunk(prev_tag, tag, prev_type, kind):
    """Whether a chunk ends between the previous token and this one (the script's `endOfChunk`)."""
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != kind


def start_of_chunk(prev_tag, tag, prev_type, kind):
    """Whether a chunk starts at this token (the script's `startOfChunk`)."""
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != kind


class Counts:
    """The script's counters, filled sentence by sentence (`add_sentence`)."""

    def __init__(self):
        self.correct_chunk = collections.Counter()
        self.found_correct = collections.Counter()
        self.found_guessed = collections.Counter()
        self.correct_tags = 0
        self.tokens = 0

    def add_sentence(self, gold, guessed):
        """Counts one sentence: `gold` and `guessed` are lists of tags of equal length."""
        if len(gold) != len(guessed):
            raise InputError(f"A sentence has {len(gold)} gold tags but {len(guessed)} guessed tags.")
        last_correct, last_correct_type = "O", ""
        last_guessed, last_guessed_type = "O", ""
        in_correct = False
        # The sentence boundary after the last token is an `O` token that is not counted; it closes every chunk.
        for index, (correct_tag, guessed_tag) in enumerate(list(zip(gold, guessed)) + [("O", "O")]):
            boundary = index == len(gold)
            correct, correct_type = split_tag(correct_tag)
            guessed_, guessed_type = split_tag(guessed_tag)
            gold_ends = end_of_chunk(last_correct, correct, last_correct_type, correct_type)
            guess_ends = end_of_chunk(last_guessed, guessed_, last_guessed_type, guessed_type)
            if in_correct:
                if gold_ends and guess_ends and last_guessed_type == last_correct_type:
                    in_correct = False
                    self.correct_chunk[last_correct_type] += 1
                elif gold_ends != guess_ends or guessed_type != correct_type:
                    in_correct = False
            gold_starts = start_of_chunk(last_correct, correct, last_correct_type, correct_type)
            guess_starts = start_of_chunk(last_guessed, guessed_, last_guessed_type, guessed_type)
            if gold_starts and guess_starts and guessed_type == correct_type:
                in_correct = True
            if gold_starts:
                self.found_correct[correct_type] += 1
            if guess_starts:
                self.found_guessed[guessed_type] += 1
            if not boundary:
                if correct == guessed_ and guessed_type == correct_type:
                    self.correct_tags += 1
                self.tokens += 1
            last_correct, last_correct_type = correct, correct_type
            last_guessed, last_guessed_type = guessed_, guessed_type

    def metrics(self):
        """`{"precision", "recall", "f1", "accuracy", "per_type": {type: {...}}}` as fractions."""
        def prf(correct, guessed, gold):
            precision = correct / guessed if guessed else 0.0
            recall = correct / gold if gold else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            return {"precision": precision, "recall": recall, "f1": f1, "num_gold": gold, "num_guessed": guessed,
                    "num_correct": correct}

        types = sorted(set(self.found_correct) | set(self.found_guessed))
        result = prf(sum(self.correct_chunk.values()), sum(self.found_guessed.values()),
                     sum(self.found_correct.values()))
        result["accuracy"] = self.correct_tags / self.tokens if self.tokens else 0.0
        result["num_tokens"] = self.tokens
        result["per_type"] = {kind: prf(self.correct_chunk[kind], self.found_guessed[kind], self.found_correct[kind])
                              for kind in types}
        return result


def conll_metrics(gold, guessed):
    """The `conlleval` metrics of sentences `gold` and `guessed` (lists of lists of tags, one list per sentence)."""
    if len(gold) != len(guessed):
        raise InputError(f"{len(gold)} gold sentences but {len(guessed)} guessed sentences.")
    counts = Counts()
    for gold_tags, guessed_tags in zip(gold, guessed):
        counts.add_sentence(list(gold_tags), list(guessed_tags))
    return counts.metrics()


def flat_metrics(metrics, prefix="eval_"):
    """`{eval_precision, eval_recall, eval_f1, eval_accuracy, eval_<TYPE>_f1, ...}` for `eval_results.txt`."""
    out = {f"{prefix}{key}": float(metrics[key]) for key in ("precision", "recall", "f1", "accuracy")}
    for kind, values in metrics["per_type"].items():
        for key in ("precision", "recall", "f1"):
            out[f"{prefix}{kind}_{key}"] = float(values[key])
    return out
