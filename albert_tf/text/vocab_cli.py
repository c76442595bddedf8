"""`albert-train-vocab`: the original README's `spm_train` command (`albert_tf.text.vocab.train_sentencepiece`).

Usage:
    albert-train-vocab --input=all.txt --model_prefix=30k-clean --vocab_size=30000
"""

import dataclasses
from typing import Optional

from absl import app, flags

from albert_tf import cli
from albert_tf.training import options as options_lib
from albert_tf.training.options import option
from albert_tf.text.vocab import CONTROL_SYMBOLS, USER_DEFINED_SYMBOLS, train_sentencepiece

CLI_HELP = (
    "Trains a SentencePiece vocabulary with the flags of the original ALBERT README's spm_train command "
    "(unigram model, <pad>=0, <unk>=1, control symbols [CLS] [SEP] [MASK], user-defined symbols "
    "( ) \" - . \u2013 \u00a3 \u20ac, character coverage 0.99995): reads the text files of --input (comma-separated, "
    "one sentence per line) and writes <model_prefix>.model and <model_prefix>.vocab (written to temporary "
    "names, then renamed), the --spm_model_file and --vocab_file of albert-create-pretraining-data and of the "
    "training scripts."
)


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


def define_flags(flag_values=flags.FLAGS):
    """The flags of `albert-train-vocab`: the fields of `TrainVocabOptions`."""
    options_lib.define_flags((TrainVocabOptions,), flag_values=flag_values)


def train_vocab(run):
    """Trains the SentencePiece model of the `TrainVocabOptions` `run` (`train_sentencepiece`)."""
    if not run.input or not run.model_prefix:
        raise app.UsageError("`--input` and `--model_prefix` are required.")
    values = {field.name: getattr(run, field.name) for field in dataclasses.fields(run)}
    for name in ("control_symbols", "user_defined_symbols"):
        values[name] = split_symbols(values[name])
    train_sentencepiece(values.pop("input"), values.pop("model_prefix"), **values)


def _main(argv):
    del argv
    train_vocab(*options_lib.from_flags(flags.FLAGS, TrainVocabOptions))


def main():
    define_flags()
    cli.run_app(_main, CLI_HELP, [__name__])


if __name__ == "__main__":
    main()
