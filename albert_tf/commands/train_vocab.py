"""`albert-train-vocab`: the original README's `spm_train` command (`albert_tf.text.vocab.train_vocab`).

Usage:
    albert-train-vocab --input=all.txt --model_prefix=30k-clean --vocab_size=30000
"""

from albert_tf import options as options_lib
from albert_tf.text.vocab import TrainVocabOptions, train_vocab

CLI_HELP = (
    "Trains a SentencePiece vocabulary with the flags of the original ALBERT README's spm_train command "
    "(unigram model, <pad>=0, <unk>=1, control symbols [CLS] [SEP] [MASK], user-defined symbols "
    "( ) \" - . \u2013 \u00a3 \u20ac, character coverage 0.99995): reads the text files of --input (comma-separated, "
    "one sentence per line) and writes <model_prefix>.model and <model_prefix>.vocab (written to temporary "
    "names, then renamed), the --spm_model_file and --vocab_file of albert-create-pretraining-data and of the "
    "training scripts."
)


COMMAND = options_lib.Command(name="albert-train-vocab", help_text=CLI_HELP, options=(TrainVocabOptions,),
                              call=train_vocab)
