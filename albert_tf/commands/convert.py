"""`albert-convert`: any ALBERT weights source -> Keras weights, a TF1 release, a Hugging Face or keras-hub dir.

    albert-convert --input=albert_base_v2.tar.gz --output_dir=out --format=keras
    albert-convert --input=model_dir/model.ckpt-12000 --output_dir=release --format=tf1 \
        --albert_config_file=albert_config.json
    albert-convert --input=albert_en_base_3/ --output_dir=hf_base --format=hf
    albert-convert --input=hf_base/ --output_dir=kh_base --format=keras_hub
"""

import dataclasses

from absl import logging

from albert_tf import options as options_lib
from albert_tf.checkpoints.convert import FORMATS, convert, models
from albert_tf.options import option

CLI_HELP = (
    "Converts ALBERT weights between the forms they are published and used in. --input is read from its files, "
    "whatever it is: a TF1 checkpoint prefix, a Google release directory or .tar.gz, a TF-Hub TF1 module, a "
    "TF2 SavedModel of tf-models' AlbertEncoder (TF-Hub/Kaggle albert_en_*), a keras-hub AlbertBackbone or task "
    "preset, a Hugging Face directory (config.json + model.safetensors or transformers 4.x tf_model.h5; pickled "
    "pytorch_model.bin files are refused), or an albert_tf training checkpoint. --output_dir receives, per "
    "--format: keras (albert_config.json, model.weights.h5), tf1 (a release directory with model.ckpt-best under "
    "the original variable names), hf (config.json, model.safetensors, spiece.model for transformers), hf_tf (the "
    "same with tf_model.h5 for transformers 4.x TFAlbert* classes) or keras_hub (a preset for "
    "keras_hub.models.AlbertBackbone.from_preset; a sequence classifier also as an AlbertTextClassifier task), "
    "plus the SentencePiece model when the source has one. The output is assembled in a temporary directory "
    "beside --output_dir and moved there when complete."
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConvertOptions(options_lib.ModelOptions):
    """`albert-convert`'s options: the source, the output and its form; `albert_config_file` (`ModelOptions`)
    replaces the source's config."""

    # A weights source (as `albert-export`'s), not the text files of `albert-train-vocab`.
    input: str = option(help_text="Checkpoint prefix, release directory, .tar.gz, TF-Hub TF1 module directory, TF2 "
                        "SavedModel (tf-models AlbertEncoder), keras-hub preset, Hugging Face directory, or an "
                        "albert_tf TF2 checkpoint; or a name, fetched once into the cache: a release name "
                        "(albert_base_v2, albert_large_zh, ...), hf:<org>/<repo>, kaggle:<handle> or an https:// URL.")
    # The directory of the converted weights, not of a run's checkpoints (the runners' `output_dir`).
    output_dir: str = option(help_text="Directory for albert_config.json, the weights and 30k-clean.model.")
    format: str = option("keras", "keras: model.weights.h5; tf1: model.ckpt-best with the original variable names; "
                         "hf: transformers directory (safetensors); hf_tf: the same with tf_model.h5 for "
                         "transformers 4.x TFAlbert* classes; keras_hub: keras-hub AlbertBackbone preset (and "
                         "AlbertTextClassifier task of a classifier).",
                         enum_values=FORMATS)
    model: str = option("auto", "Model whose variables to convert; auto picks from the heads in the checkpoint.",
                        enum_values=models)


# The source's weights are `input`: `init_checkpoint` has no flag here.
FLAG_OPTIONS = {ConvertOptions: ("input", "output_dir", "format", "model", "albert_config_file")}


def convert_from_options(run):
    """`convert(...)` with the `ConvertOptions` `run`; logs and returns its result."""
    result = convert(run.input, run.output_dir, output_format=run.format, model=run.model,
                     config_file=run.albert_config_file)
    logging.info("%s weights: %s", result["model"], result["weights"])
    return result


def _call(run):
    convert_from_options(run)


COMMAND = options_lib.Command(name="albert-convert", help_text=CLI_HELP, options=(ConvertOptions,), call=_call,
                              only=FLAG_OPTIONS)
