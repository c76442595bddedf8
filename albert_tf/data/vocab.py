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

Usage:
    albert-train-vocab --input=all.txt --model_prefix=30k-clean --vocab_size=30000
"""

import os

import sentencepiece as spm
import tensorflow as tf
from absl import app, flags, logging

from albert_tf import cli, fileio
from albert_tf.errors import InputError

CLI_HELP = (
    "Trains a SentencePiece vocabulary with the flags of the original ALBERT README's spm_train command "
    "(unigram model, <pad>=0, <unk>=1, control symbols [CLS] [SEP] [MASK], user-defined symbols "
    "( ) \" - . \u2013 \u00a3 \u20ac, character coverage 0.99995): reads the text files of --input (comma-separated, "
    "one sentence per line) and writes <model_prefix>.model and <model_prefix>.vocab (written to temporary "
    "names, then renamed), the --spm_model_file and --vocab_file of albert-create-pretraining-data and of the "
    "training scripts."
)

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


def _split_symbols(value):
    return [s for s in value.split(",") if s]


def define_flags():
    flags.DEFINE_string("input", None, "Comma-separated text files, one sentence per line.")
    flags.DEFINE_string("model_prefix", None, "Output prefix: writes <prefix>.model and <prefix>.vocab.")
    flags.DEFINE_integer("vocab_size", 30000, "Vocabulary size.")
    flags.DEFINE_integer("pad_id", 0, "Id of <pad> (-1 = none).")
    flags.DEFINE_integer("unk_id", 1, "Id of <unk>.")
    flags.DEFINE_integer("eos_id", -1, "Id of </s> (-1 = none).")
    flags.DEFINE_integer("bos_id", -1, "Id of <s> (-1 = none).")
    flags.DEFINE_string("control_symbols", ",".join(CONTROL_SYMBOLS), "Comma-separated control symbols.")
    flags.DEFINE_string(
        "user_defined_symbols", ",".join(USER_DEFINED_SYMBOLS),
        "Comma-separated user-defined symbols (split on commas only; `\"` is a plain symbol).")
    flags.DEFINE_bool("shuffle_input_sentence", True, "Shuffle the sampled input sentences.")
    flags.DEFINE_integer("input_sentence_size", 10000000, "Maximum number of sentences sampled for training.")
    flags.DEFINE_float("character_coverage", 0.99995, "Fraction of characters covered by the model.")
    flags.DEFINE_string("model_type", "unigram", "unigram, bpe, word or char.")


def _main(argv):
    del argv
    fl = flags.FLAGS
    if not fl.input or not fl.model_prefix:
        raise app.UsageError("`--input` and `--model_prefix` are required.")
    train_sentencepiece(
        fl.input,
        fl.model_prefix,
        vocab_size=fl.vocab_size,
        pad_id=fl.pad_id,
        unk_id=fl.unk_id,
        eos_id=fl.eos_id,
        bos_id=fl.bos_id,
        control_symbols=_split_symbols(fl.control_symbols),
        user_defined_symbols=_split_symbols(fl.user_defined_symbols),
        shuffle_input_sentence=fl.shuffle_input_sentence,
        input_sentence_size=fl.input_sentence_size,
        character_coverage=fl.character_coverage,
        model_type=fl.model_type,
    )


def main():
    define_flags()
    cli.run_app(_main, CLI_HELP, [__name__])


if __name__ == "__main__":
    main()
