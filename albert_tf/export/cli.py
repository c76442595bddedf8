"""The `albert-export` command line (`python -m albert_tf.export.cli`): flags over `albert_tf.export.saved_model`
(SavedModel) and `albert_tf.export.lite` (`--format=tflite`); neither imports this module."""

from absl import app, flags

from albert_tf import cli
from albert_tf.export import saved_model as export_lib
from albert_tf.text import modes as text_modes

CLI_HELP = (
    "Exports an ALBERT checkpoint as a TF Serving SavedModel. Reads --input (a Google TF1 checkpoint, release "
    "directory or .tar.gz, a TF-Hub TF1 module, or an albert_tf checkpoint) with its albert_config.json and "
    "SentencePiece model (or --albert_config_file / --spm_model_file), builds the --model head from it, and "
    "writes <export_dir>/<version>/ (the next integer unless --version is given) with the signatures "
    "serving_default (token ids), serve_examples (serialized tf.Examples with the original TFRecord features), "
    "serve_text (raw text, tokenized in the graph; needs tensorflow-text, --noserve_text leaves it out) and "
    "tokenization_info, the SentencePiece model and albert_config.json as assets, and TF Serving's warm-up "
    "requests in assets.extra/ (with tensorflow-serving-api installed). --noserve_text writes a token-ids-only "
    "export (core TensorFlow ops only: it loads without tensorflow-text). Prints the written directory. With --format=tflite it writes a LiteRT model instead: <export_dir>/model.tflite with fixed "
    "[--batch_size, --max_seq_length] int32 inputs and the serving_default names, quantized by --quantize "
    "(none|float16|dynamic|int8; int8 calibrates on --calibration_file: raw text, one example per line, or the "
    "task's TFRecords), with albert_lite.json (model kind, labels, lengths), albert_config.json and the "
    "SentencePiece model beside it, so that albert_tf.pipeline(task, '<export_dir>/model.tflite') runs it on "
    "LiteRT. Prints the written file.")


def _define_flags():
    flags.DEFINE_string("input", None, "Checkpoint source: Google TF1 checkpoint prefix, release directory or "
                        ".tar.gz, TF-Hub TF1 module directory, or an albert_tf checkpoint prefix.")
    flags.DEFINE_enum("model", "encoder", list(export_lib.MODEL_KINDS), "Which model the checkpoint holds.")
    flags.DEFINE_integer("num_labels", 2, "Classifier labels (1 = STS-B style regression).")
    flags.DEFINE_string("albert_config_file", None, "albert_config.json, when the source has none.")
    flags.DEFINE_string("spm_model_file", None, "SentencePiece model for serve_text (default: the source's).")
    flags.DEFINE_string("export_dir", None, "Base directory; the SavedModel goes to <export_dir>/<version>/.")
    flags.DEFINE_integer("max_seq_length", 512, "Length of the tf.Example features and of packed raw text.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case raw text (True for the English releases).")
    flags.DEFINE_integer("version", None, "Version subdirectory (default: the next integer).")
    flags.DEFINE_float("threshold", None, "Classifier only: a constant `threshold` output.")
    for length in text_modes.lengths().values():   # the packing lengths of the tasks' text modes
        flags.DEFINE_integer(length.name, length.default, length.help)
    flags.DEFINE_bool("serve_text", True, "Export the raw-text signature (needs the tensorflow-text ops in the "
                      "server); --noserve_text exports core ops only.")
    flags.DEFINE_bool("warmup", None, "Write TF Serving's warm-up requests (assets.extra/tf_serving_warmup_requests, "
                      "one per signature). Default: when tensorflow-serving-api is installed (the serving extra); "
                      "--warmup requires it, --nowarmup leaves the file out.")
    flags.DEFINE_enum("format", "saved_model", ["saved_model", "tflite"], "saved_model (TF Serving) or tflite "
                      "(LiteRT: <export_dir>/model.tflite with albert_lite.json, config and tokenizer beside it).")
    flags.DEFINE_enum("quantize", "none", ["none", "float16", "dynamic", "int8"], "tflite only: float16 "
                      "weights, dynamic-range int8, or int8 calibrated on --calibration_file.")
    flags.DEFINE_integer("batch_size", 1, "tflite only: the fixed batch size of the inputs.")
    flags.DEFINE_string("calibration_file", None, "tflite --quantize=int8: raw text (one example per line; a tab "
                        "separates text_a and text_b, SQuAD question and context) or the task's TFRecords.")
    flags.DEFINE_list("labels", None, "tflite classifier: label names written to albert_lite.json.")
    flags.mark_flags_as_required(["input", "export_dir"])


def _lengths(flag_values):
    """The text modes' lengths given on the command line."""
    return {name: flag_values[name].value for name in text_modes.lengths()}


def _run(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
    f = flags.FLAGS
    if f.format == "tflite":
        if f["warmup"].present:
            raise app.UsageError("--warmup applies to --format=saved_model only.")
        from albert_tf.export import lite  # The LiteRT converter only when asked for.

        print(lite.export_tflite_from_checkpoint(
            f.input, f.export_dir, model=f.model, num_labels=f.num_labels, albert_config_file=f.albert_config_file,
            spm_model_file=f.spm_model_file, max_seq_length=f.max_seq_length, do_lower_case=f.do_lower_case,
            batch_size=f.batch_size, quantize=f.quantize, calibration_file=f.calibration_file,
            threshold=f.threshold, labels=f.labels, **_lengths(f)))
        return
    for name in ("quantize", "batch_size", "calibration_file", "labels"):
        if f[name].present:
            raise app.UsageError(f"--{name} applies to --format=tflite only.")
    path = export_lib.export_from_checkpoint(
        f.input, f.export_dir, model=f.model, num_labels=f.num_labels, albert_config_file=f.albert_config_file,
        spm_model_file=f.spm_model_file, max_seq_length=f.max_seq_length, do_lower_case=f.do_lower_case,
        version=f.version, threshold=f.threshold, text_signature=f.serve_text, warmup=f.warmup, **_lengths(f))
    print(path)


def main():
    """`albert-export`: a checkpoint -> a TF Serving SavedModel (see `export_from_checkpoint`)."""
    _define_flags()
    cli.run_app(_run, CLI_HELP, [__name__])


if __name__ == "__main__":
    main()
