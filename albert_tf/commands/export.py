"""`albert-export`: its options and its call, over `albert_tf.export.saved_model` (SavedModel),
`albert_tf.export.lite` (`--format=tflite`) and `albert_tf.export.mediapipe` (`--format=mediapipe`); none imports
this module."""

import dataclasses
import functools
from typing import Optional

from albert_tf import options as options_lib
from albert_tf.errors import InputError, check_export_backend
from albert_tf.fileio import check_directory
from albert_tf.export import saved_model as export_lib
from albert_tf.options import option
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
    "export (core TensorFlow ops only: it loads without tensorflow-text). Prints the written directory. With --format=tflite it writes a LiteRT model instead: <export_dir>/model.tflite with "
    "int32 inputs of any batch size and length up to --max_seq_length (--nodynamic_shapes: fixed [--batch_size, "
    "--max_seq_length]) and the serving_default names, quantized by --quantize "
    "(none|float16|dynamic|int8; int8 calibrates on --calibration_file: raw text, one example per line, or the "
    "task's TFRecords), with albert_lite.json (model kind, labels, lengths), albert_config.json and the "
    "SentencePiece model beside it, so that albert_tf.pipeline(task, '<export_dir>/model.tflite') runs it on "
    "LiteRT. Prints the written file. With --format=mediapipe (a classifier or an encoder) the LiteRT model also "
    "carries MediaPipe Tasks' metadata and a SentencePiece model with ALBERT's text preprocessing in its "
    "normalization rules (written beside it as mediapipe_spm.model), so that MediaPipe's TextClassifier (the "
    "classifier's probabilities, labels from --labels) or TextEmbedder (the encoder's pooled output) runs it "
    "on raw text on Android, iOS, the web or in Python. With --tasks=NAME=RUN_DIR,... (runs fine-tuned with "
    "--lora_rank or --freeze_encoder from the same initial weights) it writes one SavedModel for all of them: the "
    "encoder once, each task's signatures NAME, NAME_examples and NAME_text, and serve_all (raw text once, every "
    "task's outputs).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportOptions(options_lib.ModelOptions, options_lib.TokenizerOptions, options_lib.MaskedLmOptions):
    """`albert-export`'s options: the source and the model kind, the export's form and lengths. The model files
    (`albert_config_file`, `spm_model_file`, `do_lower_case`) and the example lengths (`max_seq_length`,
    `max_predictions_per_seq`) are the shared groups' fields; the other text modes' lengths are `LENGTHS`."""

    # A weights source, as albert-convert's `input` (which also reads TF2 and Hugging Face forms).
    input: Optional[str] = option(None, "Checkpoint source (required unless --tasks): Google TF1 checkpoint prefix, release directory or .tar.gz, "
                        "TF-Hub TF1 module directory, or an albert_tf checkpoint prefix; or a name, fetched once into "
                        "the cache: a release name (albert_base_v2, albert_large_zh, ...), hf:<org>/<repo>, "
                        "kaggle:<handle> or an https:// URL.")
    # A model kind of the registry (albert-convert's `model` also has `auto`).
    model: str = option("encoder", "Which model the checkpoint holds.", enum_values=export_lib.model_kinds)
    num_labels: int = option(2, "Classifier labels (1 = STS-B style regression).")
    # The base directory TF Serving watches (a runner's `export_dir` receives its best model the same way).
    export_dir: str = option(help_text="Base directory; the SavedModel goes to <export_dir>/<version>/.")
    version: Optional[int] = option(None, "Version subdirectory (default: the next integer).")
    threshold: Optional[float] = option(None, "Classifier only: a constant `threshold` output.")
    serve_text: bool = option(True, "Export the raw-text signature (needs the tensorflow-text ops in the server); "
                              "--noserve_text exports core ops only.")
    warmup: Optional[bool] = option(None, "Write TF Serving's warm-up requests (assets.extra/"
                                    "tf_serving_warmup_requests, one per signature). Default: when "
                                    "tensorflow-serving-api is installed (the serving extra); --warmup requires it, "
                                    "--nowarmup leaves the file out.")
    # saved_model or tflite (albert-convert's `format` is a weights format).
    format: str = option("saved_model", "saved_model (TF Serving), tflite (LiteRT: <export_dir>/model.tflite with "
                         "albert_lite.json, config and tokenizer beside it) or mediapipe (the LiteRT model with "
                         "MediaPipe Tasks' metadata and tokenizer packed in: TextClassifier, TextEmbedder).",
                         enum_values=("saved_model", "tflite", "mediapipe"))
    quantize: str = option("none", "tflite and mediapipe only: float16 weights, dynamic-range int8, or int8 calibrated on "
                           "--calibration_file.", enum_values=("none", "float16", "dynamic", "int8"))
    batch_size: Optional[int] = option(None, "tflite: albert_tf.pipeline's default batch for the export (with "
                                       "--nodynamic_shapes the fixed batch of the inputs); default 32 (mediapipe: "
                                       "1, the only batch it takes).")
    dynamic_shapes: bool = option(True, "tflite only: resizable inputs, so that each batch runs at its own size "
                                  "and length up to --max_seq_length (the fastest on real text); "
                                  "--nodynamic_shapes writes fixed [--batch_size, --max_seq_length] inputs (runtimes "
                                  "or delegates that need static shapes).")
    calibration_file: Optional[str] = option(None, "tflite/mediapipe --quantize=int8: raw text (one example per line; a tab "
                                             "separates text_a and text_b, SQuAD question and context) or the "
                                             "task's TFRecords.")
    # Runs' output directories (albert_tf.training.run_record), not checkpoint sources as `input`.
    tasks: Optional[list] = option(None, "NAME=RUN_DIR,...: one SavedModel for several runs fine-tuned with "
                                   "--lora_rank or --freeze_encoder from the same initial weights: the encoder, "
                                   "the SentencePiece model and albert_config.json once, each task's adapters, head "
                                   "and labels, the signatures NAME, NAME_examples, NAME_text of each run's own "
                                   "export and serve_all (raw text once -> every task's outputs, NAME/output). "
                                   "Replaces --input and --model: each run's record gives its model and lengths.")
    # The names of a tflite classifier's outputs (NER's `labels` are its tag set).
    labels: Optional[list] = option(None, "tflite/mediapipe classifier: label names written to albert_lite.json "
                                    "(and MediaPipe's label file), each once.")
    overwrite: bool = option(False, "tflite/mediapipe: replace the LiteRT export already in --export_dir (without "
                             "it, such a directory is refused; a SavedModel goes to a new version directory).")


def _lengths_options():
    """The options dataclass of the text modes' lengths that `ExportOptions` does not hold (found through the
    registry: each is declared once, by its text mode); one class for the same lengths."""
    own = {field.name for field in dataclasses.fields(ExportOptions)}
    return _lengths_class(tuple(length for name, length in text_modes.lengths().items() if name not in own))


@functools.lru_cache(maxsize=None)
def _lengths_class(lengths):
    return options_lib.length_options(lengths, name="ExportLengths")


# `--format=tflite`'s default batch: the pipelines' (`albert_tf.pipeline`'s `batch_size`).
DEFAULT_LITE_BATCH_SIZE = 32

# The checkpoint is `input`, the SentencePiece model `spm_model_file` (no WordPiece vocabulary for serve_text).
NO_FLAG = ("init_checkpoint", "vocab_file")


def export(run, lengths):
    """The export of `run` (`ExportOptions`) with the text modes' `lengths` (a dict): a SavedModel or, with
    `format="tflite"`, a LiteRT model, with `format="mediapipe"` one for MediaPipe Tasks; returns the written
    path. Refused before the checkpoint is read: an `export_dir` that is a file, a LiteRT export into a directory
    that holds one (without `overwrite`), `labels` that name an output twice, and a LiteRT export under another
    Keras backend than TensorFlow's. With `tasks`, one multi-task SavedModel of the runs
    (`albert_tf.export.multitask`)."""
    check_directory(run.export_dir, "export_dir")
    if run.tasks:
        from albert_tf.export import multitask  # Reads the runs' records (albert_tf.training) only when asked for.

        return multitask.export_multitask(run.tasks, run.export_dir, version=run.version, warmup=run.warmup,
                                          spm_model_file=run.spm_model_file)
    if not run.input:
        raise InputError("`input` is required (a checkpoint source), or `tasks` (NAME=RUN_DIR,...).")
    if run.format in ("tflite", "mediapipe"):
        check_export_backend(run.format)
        from albert_tf.export import lite  # The LiteRT converter only when asked for.

        lite.check_labels(run.labels)
        lite.check_output_dir(run.export_dir, run.overwrite, name="export_dir")
    if run.format == "mediapipe":
        from albert_tf.export import mediapipe  # The LiteRT converter only when asked for.

        return mediapipe.export_mediapipe_from_checkpoint(
            run.input, run.export_dir, model=run.model, num_labels=run.num_labels,
            albert_config_file=run.albert_config_file, spm_model_file=run.spm_model_file,
            max_seq_length=run.max_seq_length, do_lower_case=run.do_lower_case,
            batch_size=1 if run.batch_size is None else run.batch_size,
            quantize=run.quantize, calibration_file=run.calibration_file, labels=run.labels,
            overwrite=run.overwrite, **lengths)
    if run.format == "tflite":
        from albert_tf.export import lite  # The LiteRT converter only when asked for.

        return lite.export_tflite_from_checkpoint(
            run.input, run.export_dir, model=run.model, num_labels=run.num_labels,
            albert_config_file=run.albert_config_file, spm_model_file=run.spm_model_file,
            max_seq_length=run.max_seq_length, do_lower_case=run.do_lower_case,
            batch_size=DEFAULT_LITE_BATCH_SIZE if run.batch_size is None else run.batch_size,
            dynamic_shapes=run.dynamic_shapes, quantize=run.quantize, calibration_file=run.calibration_file,
            threshold=run.threshold, labels=run.labels, max_predictions_per_seq=run.max_predictions_per_seq,
            overwrite=run.overwrite, **lengths)
    return export_lib.export_from_checkpoint(
        run.input, run.export_dir, model=run.model, num_labels=run.num_labels,
        albert_config_file=run.albert_config_file, spm_model_file=run.spm_model_file,
        max_seq_length=run.max_seq_length, do_lower_case=run.do_lower_case, version=run.version,
        threshold=run.threshold, text_signature=run.serve_text, warmup=run.warmup,
        max_predictions_per_seq=run.max_predictions_per_seq, **lengths)


def _resolve(values, given):
    """Refuses the flags of one format given with the other, and those of a single export with --tasks."""
    if values.get("tasks"):
        wrong = sorted(set(given) - {"tasks", "export_dir", "version", "warmup", "spm_model_file"})
        if wrong:
            raise InputError(f"--{wrong[0]} does not apply to --tasks (each run's own model, lengths and casing "
                             "are used); --tasks takes --export_dir, --version, --warmup and --spm_model_file.")
        return {}
    if values["format"] in ("tflite", "mediapipe"):
        if "warmup" in given:
            raise InputError("--warmup applies to --format=saved_model only.")
        if values["format"] == "mediapipe" and "threshold" in given:
            raise InputError("--threshold applies to --format=saved_model or tflite only (MediaPipe reads one output).")
        if values["format"] == "mediapipe" and "dynamic_shapes" in given:
            raise InputError("--dynamic_shapes applies to --format=tflite only (MediaPipe runs fixed shapes).")
        return {}
    for name in ("quantize", "batch_size", "calibration_file", "labels", "dynamic_shapes", "overwrite"):
        if name in given:
            raise InputError(f"--{name} applies to --format=tflite or mediapipe only.")
    return {}


def _call(run, lengths):
    print(export(run, dataclasses.asdict(lengths)), flush=True)


COMMAND = options_lib.Command(name="albert-export", help_text=CLI_HELP, options=(ExportOptions, _lengths_options()),
                              call=_call, no_flag=NO_FLAG, resolve=_resolve)
