"""Train a SentencePiece vocabulary with the `spm_train` flags of the original README (google-research/ALBERT).

The README command is

    spm_train --input all.txt --model_prefix=30k-clean --vocab_size=30000 --logtostderr
      --pad_id=0 --unk_id=1 --eos_id=-1 --bos_id=-1
      --control_symbols=[CLS],[SEP],[MASK]
      --user_defined_symbols="(,),\\",-,.,–,£,€"
      --shuffle_input_sentence=true --input_sentence_size=10000000
      --character_coverage=0.99995 --model_type=unigram

Passed literally, the user-defined symbols reach the trainer as `(,),",-,.,–,£,€`, which sentencepiece
parses as CSV: the bare `"` opens a quoted field and only three symbols result. Here the symbols are a
Python list handed to `SentencePieceTrainer.train`, which escapes them, so ids 0-12 come out as
`<pad> <unk> [CLS] [SEP] [MASK] ( ) " - . – £ €`. On the command line, `--control_symbols` and
`--user_defined_symbols` are split on commas only (no CSV quoting), so `"` is an ordinary symbol.

The command line is `albert-train-vocab` (`albert_tf.commands.train_vocab`).
"""

import dataclasses
import os
from typing import Optional

import sentencepiece as spm
import tensorflow as tf
from absl import logging

from albert_tf import fileio
from albert_tf.errors import InputError
from albert_tf.options import option

CONTROL_SYMBOLS = ("[CLS]", "[SEP]", "[MASK]")
USER_DEFINED_SYMBOLS = ("(", ")", '"', "-", ".", "–", "£", "€")


def train_sentencepiece(
    input_files,
    model_prefix,
    vocab_size=30000,
    pad_id=0,
    unk_id=1,
    eos_id=-1,
    bos_id=-1,
    control_symbols=CONTROL_SYMBOLS,
    user_defined_symbols=USER_DEFINED_SYMBOLS,
    shuffle_input_sentence=True,
    input_sentence_size=10000000,
    character_coverage=0.99995,
    model_type="unigram",
    **trainer_kwargs,
):
    """Trains `<model_prefix>.model` and `<model_prefix>.vocab` with the original's spm_train flags.

    Args:
        input_files: str (comma-separated) or list of str, text files, one sentence per line.
        model_prefix: str, output path prefix; the two files are written to temporary names and renamed.
        vocab_size: int, number of pieces (30000 in the releases).
        pad_id, unk_id, eos_id, bos_id: int, special ids (-1 = none), as the original.
        control_symbols: sequence of str, symbols that are never produced from text.
        user_defined_symbols: sequence of str, symbols always kept as one piece.
        shuffle_input_sentence, input_sentence_size, character_coverage, model_type: as spm_train.
        **trainer_kwargs: any other `SentencePieceTrainer.train` option (e.g. `num_threads`).

    Returns:
        The path of the `.model` file.
    """
    if isinstance(input_files, str):
        input_files = [f for f in input_files.split(",") if f]
    input_files = list(input_files)
    if not input_files:
        raise InputError(f"`input_files` must name at least one text file. Received: `{input_files!r}`.")
    for path in input_files:
        if not tf.io.gfile.exists(path):
            raise InputError(f"`input_files`: the file `{path}` does not exist.")
    if int(vocab_size) < 1:
        raise InputError(f"`vocab_size` must be positive. Received: `vocab_size={vocab_size}`.")
    for name, symbols in (("control_symbols", control_symbols), ("user_defined_symbols", user_defined_symbols)):
        if isinstance(symbols, str):
            raise TypeError(
                f"`{name}` must be a list of symbols, not a string (a string is parsed as CSV by "
                f"sentencepiece and a `\"` in it swallows the symbols after it). Received: `{symbols!r}`."
            )
    out_dir = os.path.dirname(os.path.abspath(model_prefix))
    os.makedirs(out_dir, exist_ok=True)
    with fileio.atomic_prefix(model_prefix, (".vocab", ".model")) as tmp_prefix:
        spm.SentencePieceTrainer.train(
            input=input_files,
            model_prefix=tmp_prefix,
            vocab_size=int(vocab_size),
            pad_id=pad_id,
            unk_id=unk_id,
            eos_id=eos_id,
            bos_id=bos_id,
            control_symbols=list(control_symbols),
            user_defined_symbols=list(user_defined_symbols),
            shuffle_input_sentence=shuffle_input_sentence,
            input_sentence_size=input_sentence_size,
            character_coverage=character_coverage,
            model_type=model_type,
            **trainer_kwargs,
        )
    logging.info("Wrote %s.model and %s.vocab (%d pieces).", model_prefix, model_prefix, vocab_size)
    return model_prefix + ".model"


def split_symbols(value):
    """The symbols of a comma-separated list (no CSV quoting: `"` is an ordinary symbol)."""
    return [s for s in value.split(",") if s]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainVocabOptions:
    """`albert-train-vocab`'s options: the README's `spm_train` flags (the keywords of `train_sentencepiece`)."""

    # Text files, not the weights source of `albert-convert`.
    input: Optional[str] = option(None, "Comma-separated text files, one sentence per line.")
    model_prefix: Optional[str] = option(None, "Output prefix: writes <prefix>.model and <prefix>.vocab.")
    vocab_size: int = option(30000, "Vocabulary size.")
    pad_id: int = option(0, "Id of <pad> (-1 = none).")
    unk_id: int = option(1, "Id of <unk>.")
    eos_id: int = option(-1, "Id of </s> (-1 = none).")
    bos_id: int = option(-1, "Id of <s> (-1 = none).")
    control_symbols: str = option(",".join(CONTROL_SYMBOLS), "Comma-separated control symbols.")
    user_defined_symbols: str = option(",".join(USER_DEFINED_SYMBOLS), "Comma-separated user-defined symbols "
                                       "(split on commas only; `\"` is a plain symbol).")
    shuffle_input_sentence: bool = option(True, "Shuffle the sampled input sentences.")
    input_sentence_size: int = option(10000000, "Maximum number of sentences sampled for training.")
    character_coverage: float = option(0.99995, "Fraction of characters covered by the model.")
    model_type: str = option("unigram", "unigram, bpe, word or char.")


def train_vocab(run):
    """Trains the SentencePiece model of the `TrainVocabOptions` `run` (`train_sentencepiece`)."""
    if not run.input or not run.model_prefix:
        raise InputError("`--input` and `--model_prefix` are required.")
    values = {field.name: getattr(run, field.name) for field in dataclasses.fields(run)}
    for name in ("control_symbols", "user_defined_symbols"):
        values[name] = split_symbols(values[name])
    train_sentencepiece(values.pop("input"), values.pop("model_prefix"), **values)
