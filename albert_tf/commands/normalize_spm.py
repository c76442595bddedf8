"""`albert-normalize-spm`: a release's SentencePiece model with ALBERT's text preprocessing in its own
normalization rules (`albert_tf.text.normalization`).

Usage:
    albert-normalize-spm --spm_model_file=albert_base/30k-clean.model --output=albert_base/raw-text.model
"""

from albert_tf import options as options_lib
from albert_tf.text.normalization import NormalizeOptions, normalize_spm

CLI_HELP = (
    "Writes --output: the SentencePiece model --spm_model_file (any release's 30k-clean.model) with the original "
    "ALBERT preprocess_text (whitespace runs to one space, NFKD, combining marks dropped, lower-casing with "
    "--do_lower_case) compiled into its normalization rules, so that plain SentencePiece on raw text gives the "
    "original tokenizer's ids, except where the original's digit-comma split or Python's final-sigma "
    "lower-casing applies. The vocabulary is not retrained. albert-export --format=mediapipe packs the same "
    "model into its file. Prints the written path."
)

COMMAND = options_lib.Command(name="albert-normalize-spm", help_text=CLI_HELP, options=(NormalizeOptions,),
                              call=normalize_spm, no_flag=("vocab_file",))
