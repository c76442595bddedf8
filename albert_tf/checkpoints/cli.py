"""`albert-convert`: any ALBERT checkpoint source -> Keras weights or a TF1 checkpoint with the original names.

    albert-convert --input=albert_base_v2.tar.gz --output_dir=out --format=keras
    albert-convert --input=model_dir/model.ckpt-12000 --output_dir=release --format=tf1 \
        --albert_config_file=albert_config.json
"""

import sys

from absl import app, flags, logging

from albert_tf.checkpoints.convert import FORMATS, MODELS, convert

FLAGS = flags.FLAGS


def define_flags():
    flags.DEFINE_string("input", None, "Checkpoint prefix, release directory, .tar.gz, TF-Hub TF1 module "
                        "directory, or an albert_tf TF2 checkpoint.")
    flags.DEFINE_string("output_dir", None, "Directory for albert_config.json, the weights and 30k-clean.model.")
    flags.DEFINE_enum("format", "keras", list(FORMATS),
                      "keras: model.weights.h5; tf1: model.ckpt-best with the original variable names.")
    flags.DEFINE_enum("model", "auto", list(MODELS),
                      "Model whose variables to convert; auto picks from the heads in the checkpoint.")
    flags.DEFINE_string("albert_config_file", None, "Config to use when the source has no albert_config.json.")
    flags.mark_flags_as_required(["input", "output_dir"])


def _run(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    try:
        result = convert(FLAGS.input, FLAGS.output_dir, output_format=FLAGS.format, model=FLAGS.model,
                         config_file=FLAGS.albert_config_file)
    except (ValueError, FileNotFoundError) as e:  # Bad input: a message, not a traceback.
        sys.stderr.write(f"albert-convert: error: {e}\n")
        sys.exit(2)
    logging.info("%s weights: %s", result["model"], result["weights"])


def main():
    define_flags()
    app.run(_run)


if __name__ == "__main__":
    main()
