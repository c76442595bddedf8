"""`albert-train-vocab`: the original README's `spm_train` command (`albert_tf.text.vocab.train_sentencepiece`).

Usage:
    albert-train-vocab --input=all.txt --model_prefix=30k-clean --vocab_size=30000
"""

from absl import app, flags

from albert_tf import cli
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
        control_symbols=split_symbols(fl.control_symbols),
        user_defined_symbols=split_symbols(fl.user_defined_symbols),
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
