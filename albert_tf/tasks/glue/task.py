"""GLUE fine-tuning, evaluation and prediction: the GLUE task of the driver and the library side of
`run_classifier.py`.

`run_classifier(...)` does what the original `run_classifier.py` main does, with explicit arguments instead of
flags (`albert_tf.training.driver` runs the stages):

* `do_train`: features cached as `<cached_dir>/<task>_train.tf_record` (reused when present), model
  initialised from `init_checkpoint` / `albert_hub_module_handle`, trained `train_step` steps with the
  original AdamW (or LAMB) and schedule, a checkpoint every `save_checkpoints_steps`, all kept.
* `do_eval`: every checkpoint in `output_dir` is evaluated on the dev set; the best by `pearson` (sts-b),
  `matthew_corr` (cola) or `eval_accuracy` (others) is kept as `model.ckpt-best`, the others deleted;
  `eval_results.txt` and `best_trial.txt` as the original.
* `do_predict`: the test set through `model.ckpt-best`; `test_results.tsv` (probabilities),
  `submit_results.tsv` (`index\\tprediction`) and the GLUE leaderboard file (`MNLI-m.tsv`, `AX.tsv`, ...).
* `export_dir`: a SavedModel of `model.ckpt-best` (serialized `tf.Example` serving input, as the original).
"""

import dataclasses
import functools
import math
import os
from typing import ClassVar, Optional

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import options as options_lib
from albert_tf.export import saved_model as export_lib
from albert_tf.checkpoints import init_from_checkpoint, source_num_labels
from albert_tf.tasks.glue import data as glue
from albert_tf.errors import InputError
from albert_tf.fileio import write_text_atomic
from albert_tf.options import option
from albert_tf.tasks.glue.model import AlbertClassifier, classifier_loss
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.training import driver, inference
from albert_tf.training import metrics as metrics_lib

# The per-task values of the original `run_glue.sh`, all with max_seq_length 512,
# adamw and lower casing. WNLI is not in run_glue.sh: the paper's values (save interval chosen here).
_RUN_GLUE_COMMON = dict(max_seq_length=512, optimizer="adamw", do_lower_case=True)
_RUN_GLUE_FIELDS = ("learning_rate", "train_batch_size", "train_step", "warmup_step", "save_checkpoints_steps")
_RUN_GLUE = {task: dict(zip(_RUN_GLUE_FIELDS, values)) for task, values in {
    "cola": (1e-5, 16, 5336, 320, 100),
    "sts-b": (2e-5, 16, 3598, 214, 100),
    "sst-2": (1e-5, 32, 20935, 1256, 100),
    "mnli": (3e-5, 128, 10000, 1000, 100),
    "qnli": (1e-5, 32, 33112, 1986, 200),
    "qqp": (5e-5, 128, 14000, 1000, 100),
    "rte": (3e-5, 32, 800, 200, 100),
    "mrpc": (2e-5, 32, 800, 200, 100),
    "wnli": (2e-5, 16, 2000, 250, 100),
}.items()}
_RUN_GLUE["mismnli"] = _RUN_GLUE["mnli"]
HPARAMS_PRESETS = {"albert": {task: dict(_RUN_GLUE_COMMON, **values) for task, values in _RUN_GLUE.items()}}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifierOptions(options_lib.StepsOptions):
    """`run_classifier`'s task options: the original `run_classifier.py` flags (`keep_checkpoint_max` is
    accepted and unused, as the original's RunConfig keeps every checkpoint for evaluation)."""

    positional: ClassVar[tuple] = ("task_name", "data_dir", "output_dir")

    data_dir: str = option(help_text="The input data dir. Should contain the .tsv files (or other data files) for "
                           "the task.")
    task_name: str = option(help_text="The name of the task to train: cola mnli mismnli mrpc rte sst-2 sts-b qqp "
                            "qnli wnli (or ax: GLUE diagnostic, predict only).")
    cached_dir: Optional[str] = option(None, "Path to cached training and dev tfrecord file. The file will be "
                                       "generated if not exist.")
    keep_checkpoint_max: int = option(5, "How many checkpoints to keep (unused, as in the original: every "
                                      "checkpoint is kept for --do_eval).")
    threshold_to_export: float = option(float("nan"), "The threshold value that should be used with the exported "
                                        "classifier. When specified, the threshold will be attached to the "
                                        "exported SavedModel, and served along with the predictions.")

    @property
    def metric_key(self):
        """The metric that picks `model.ckpt-best`: `pearson` (sts-b), `matthew_corr` (cola), `eval_accuracy`."""
        return best_metric_key((self.task_name or "").lower())

    def feature_files(self):
        cached_dir = self.cached_dir or self.output_dir
        return [glue.cache_file(cached_dir, (self.task_name or "").lower(), split)
                for split in ("train", "eval", "predict")]


@dataclasses.dataclass(frozen=True)
class PresetOptions:
    """The option that only `run_classifier.py` has: a preset's values fill in the flags not given (`main`)."""

    hparams_preset: Optional[str] = option(None, "Optional: 'albert' sets the per-task learning_rate, "
                                           "train_batch_size, train_step, warmup_step, save_checkpoints_steps, "
                                           "max_seq_length, optimizer and do_lower_case of the original "
                                           "run_glue.sh (flags given explicitly win).",
                                           enum_values=tuple(HPARAMS_PRESETS))


def hparams_preset(name, task_name):
    """The preset hyper-parameters of `task_name`, e.g. `hparams_preset("albert", "rte")` (run_glue.sh).

    Returns:
        dict with `learning_rate`, `train_batch_size`, `train_step`, `warmup_step`, `save_checkpoints_steps`,
        `max_seq_length`, `optimizer`, `do_lower_case`.
    """
    if name not in HPARAMS_PRESETS:
        raise InputError(f"`hparams_preset` must be one of {sorted(HPARAMS_PRESETS)}. Received: {name!r}.")
    task = (task_name or "").lower()
    if task not in HPARAMS_PRESETS[name]:
        raise InputError(f"`hparams_preset={name}` has no values for `task_name` {task_name!r}; it has "
                         f"{sorted(HPARAMS_PRESETS[name])}.")
    return dict(HPARAMS_PRESETS[name][task])


def best_metric_key(task_name):
    """The metric that picks `model.ckpt-best`: `pearson` (sts-b), `matthew_corr` (cola), `eval_accuracy`."""
    return {"sts-b": "pearson", "cola": "matthew_corr"}.get(task_name, "eval_accuracy")


def compute_eval_metrics(task_name, label_ids, predictions, per_example_loss, weights, batch_losses=None):
    """The eval metrics of the task from whole-dev-set arrays.

    All tasks: `eval_loss` (weighted mean per-example loss) and `loss` (mean of the batch losses, what the
    Estimator reports). Classification: `eval_accuracy`; `f1` for mrpc/qqp; `matthew_corr` for cola.
    STS-B (the original's regression metrics): `pearson`, `MSE`, plus `spearman`.
    """
    result = {"eval_loss": metrics_lib.weighted_mean(per_example_loss, weights)}
    if batch_losses is not None and len(batch_losses):
        result["loss"] = float(np.mean(batch_losses))
    if task_name == "sts-b":
        result["pearson"] = metrics_lib.pearson(predictions, label_ids, weights)
        result["spearman"] = metrics_lib.spearman(predictions, label_ids, weights)
        result["MSE"] = metrics_lib.mean_squared_error(label_ids, predictions, weights)
        return result
    result["eval_accuracy"] = metrics_lib.accuracy(label_ids, predictions, weights)
    if task_name == "cola":
        result["matthew_corr"] = metrics_lib.matthews_corr(label_ids, predictions, weights)
    if task_name in ("mrpc", "qqp"):
        result["f1"] = metrics_lib.f1(label_ids, predictions, weights)
    return result


def make_inference_step(model, jit_compile=False, length_aware=True):
    """The `inference.InferenceStep` computing a batch's outputs and per-example loss (traced once per shape,
    reused per checkpoint); `jit_compile` compiles it with XLA on TensorFlow; `length_aware` runs each batch at
    its longest real length."""
    num_labels = model.num_labels

    def step(features):
        outputs = model(features, training=False)
        loss = classifier_loss(outputs, features["label_ids"], num_labels)
        return {"probabilities": outputs["probabilities"], "predictions": outputs["predictions"],
                "label_ids": features["label_ids"], "is_real_example": features["is_real_example"],
                "per_example_loss": loss}

    return inference.make_step(model, step, jit_compile, token_keys=inference.TOKEN_FEATURES if length_aware else ())


def run_model_on_dataset(model, dataset, strategy, num_examples=None, what="eval", step=None, max_seq_length=None):
    """Runs `model(training=False)` over a dataset of feature dicts; returns NumPy arrays in order.

    Args:
        model: `AlbertClassifier`.
        dataset: batched `tf.data.Dataset` of the cached features (global batch size).
        strategy: the `tf.distribute.Strategy` the model was built under.
        num_examples: int, for the progress log's ETA.
        what: str, name in the progress log.
        step: optional `make_inference_step(model)` result, to reuse its trace.
        max_seq_length: int, the features' length (each batch then runs at its own; None: at this one).

    Returns:
        dict with `probabilities`, `predictions`, `label_ids`, `is_real_example`, `per_example_loss`, and
        `batch_loss` (one mean loss per batch).
    """
    step = step or make_inference_step(model)
    collected = {}
    batch_loss = []
    for arrays in inference.inference_batches(step, dataset, strategy, what, num_examples, max_length=max_seq_length):
        for key, value in arrays.items():
            collected.setdefault(key, []).append(value)
        real = arrays["is_real_example"].astype(np.float64)
        if real.sum() > 0:
            batch_loss.append(float((arrays["per_example_loss"] * real).sum() / real.sum()))
    arrays = {k: np.concatenate(v) if v else np.zeros([0]) for k, v in collected.items()}
    arrays["batch_loss"] = np.asarray(batch_loss)
    return arrays


def _label_string(label_list, prediction, regression):
    return str(prediction) if regression else label_list[int(prediction)]


def write_predictions(output_dir, task_name, label_list, examples, probabilities, predictions, leaderboard_file):
    """Writes `test_results.tsv`, `submit_results.tsv` and the GLUE leaderboard file (atomically).

    `test_results.tsv`: one line per example, its probabilities tab-separated (the raw value for STS-B).
    `submit_results.tsv` and `leaderboard_file`: header `index\\tprediction`, then `guid\\tlabel` (a float for
    STS-B).

    Returns:
        list of the paths written.
    """
    regression = label_list == [None]
    if len(examples) != len(predictions):
        raise InputError(f"Got {len(predictions)} predictions for {len(examples)} examples.")
    test_lines = []
    submit_lines = ["index\tprediction"]
    for example, probs, prediction in zip(examples, probabilities, predictions):
        test_lines.append("\t".join(str(p) for p in np.reshape(probs, [-1])))
        submit_lines.append(f"{example.guid}\t{_label_string(label_list, prediction, regression)}")
    paths = [os.path.join(output_dir, "test_results.tsv"), os.path.join(output_dir, "submit_results.tsv")]
    write_text_atomic(paths[0], "".join(line + "\n" for line in test_lines))
    submit_text = "".join(line + "\n" for line in submit_lines)
    write_text_atomic(paths[1], submit_text)
    if leaderboard_file:
        paths.append(os.path.join(output_dir, leaderboard_file))
        write_text_atomic(paths[2], submit_text)
    return paths


def init_classifier(model, path):
    """Initialises `model` from any checkpoint source, keeping a fresh head when the label counts differ.

    A fine-tuned classifier (e.g. an MNLI run's `model.ckpt-best`, 3 labels) used for another task (RTE,
    2 labels): the encoder is loaded and the head skipped (logged). The head is read into a throwaway
    head on the shared encoder, so the checkpoint helper still checks every encoder variable.
    """
    source_labels = source_num_labels(path)
    if source_labels is not None and source_labels != model.num_labels:
        logging.info("Checkpoint %s has a %d-label classifier head, the model %d labels: loading the encoder "
                     "only; the head is skipped and starts from its initial values.", path, source_labels,
                     model.num_labels)
        donor = AlbertClassifier(encoder=model.encoder, num_labels=source_labels)
        return init_from_checkpoint(donor, path, allow_missing_heads=True)
    return init_from_checkpoint(model, path, allow_missing_heads=True)


class GlueTask(driver.Task):
    """A GLUE task: cached `tf.Example` features, `AlbertClassifier`, the original's metrics and files."""

    def __init__(self, options, runtime):
        super().__init__(options, runtime)
        self.name = options.task_name.lower() if options.task_name else ""
        self.cached_dir = options.cached_dir or options.output_dir
        self._eval = None

    @functools.cached_property
    def processor(self):
        return glue.PROCESSORS[self.name](use_spm=bool(self.runtime.spm_model_file),
                                          do_lower_case=self.options.do_lower_case)

    @functools.cached_property
    def label_list(self):
        return self.processor.get_labels()

    @functools.cached_property
    def tokenizer(self):
        return FullTokenizer(vocab_file=self.options.vocab_file, do_lower_case=self.options.do_lower_case,
                             spm_model_file=self.runtime.spm_model_file)

    def check(self):
        options, task_name = self.options, self.name
        if task_name not in glue.PROCESSORS:
            raise InputError(f"Task not found: `task_name` must be one of {sorted(glue.PROCESSORS)}. "
                             f"Received: {task_name!r}.")
        options.check_stages()
        if not (options.albert_config_file or options.albert_hub_module_handle or options.init_checkpoint):
            raise InputError("At least one of `albert_config_file`, `albert_hub_module_handle` and "
                             "`init_checkpoint` (a source with its config) must be set.")
        if not options.output_dir:
            raise InputError(f"`output_dir` must be set. Received: {options.output_dir!r}.")
        if task_name == "ax" and (options.do_train or options.do_eval):
            raise InputError("Task `ax` (GLUE diagnostic) has only a test set: use `do_predict` with the "
                             "`output_dir` of an MNLI run.")
        logging.info("***** %s: learning_rate = %g, train_batch_size = %d, train_step = %d, warmup_step = %d, "
                     "save_checkpoints_steps = %d, max_seq_length = %d, optimizer = %s, do_lower_case = %s *****",
                     task_name, options.learning_rate, options.train_batch_size, options.train_step,
                     options.warmup_step, options.save_checkpoints_steps, options.max_seq_length,
                     options.optimizer, options.do_lower_case)
        super().check()
        options.check_vocabulary(self.runtime.spm_model_file,
                                 "Set `spm_model_file` (or a hub module with one) or `vocab_file`.")

    def label_names(self):
        return list(self.label_list)

    def build_model(self, init_path=None):
        model = AlbertClassifier(self.runtime.config, num_labels=len(self.label_list),
                                 **driver.model_kwargs(self.runtime))
        if init_path:
            logging.info("Initialising from %s", init_path)
            init_classifier(model, init_path)
        return model

    def train_data(self):
        examples = self.processor.get_train_examples(self.options.data_dir)
        if not examples:
            raise InputError(f"The {self.name} train set in {self.options.data_dir!r} has no examples.")
        tf.io.gfile.makedirs(self.cached_dir)
        train_file = glue.cache_file(self.cached_dir, self.name, "train")
        glue.ensure_cached_features(examples, self.label_list, self.options.max_seq_length, self.tokenizer,
                                    train_file, self.name)
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(examples))
        logging.info("  Num steps = %d", self.options.train_step)

        def dataset(input_context, batch_size, start_batch=0):
            return glue.file_based_dataset(train_file, self.options.max_seq_length, True, True, self.name,
                                           batch_size, input_context=input_context,
                                           seed=self.runtime.options.random_seed, start_batch=start_batch)

        return driver.TrainData(self.options.train_step, self.options.warmup_step, dataset)

    def loss(self, model, features, training):
        num_labels = len(self.label_list)
        outputs = model(features, training=training)
        ops = keras.ops      # any Keras backend: the JAX training loop traces it too
        loss = ops.mean(classifier_loss(outputs, features["label_ids"], num_labels))
        if num_labels == 1:
            return loss, {}
        correct = ops.cast(ops.equal(ops.cast(outputs["predictions"], "int32"),
                                     ops.cast(features["label_ids"], "int32")), "float32")
        return loss, {"accuracy": ops.mean(correct)}

    def _dataset(self, examples, what, batch_size, split):
        num_actual = len(examples)
        static = self.runtime.static_batches
        if static:
            # TPUs and XLA take fixed batches: pad with fake examples (is_real_example=0, weight 0 in every metric).
            examples = glue.pad_examples(examples, batch_size)
        tf.io.gfile.makedirs(self.cached_dir)
        glue.ensure_cached_features(examples, self.label_list, self.options.max_seq_length, self.tokenizer,
                                    glue.cache_file(self.cached_dir, self.name, split), self.name,
                                    check_count=True)
        logging.info("***** Running %s *****", what)
        logging.info("  Num examples = %d (%d actual, %d padding)", len(examples), num_actual,
                     len(examples) - num_actual)
        logging.info("  Batch size = %d", batch_size)
        return glue.file_based_dataset(glue.cache_file(self.cached_dir, self.name, split),
                                       self.options.max_seq_length, False, static, self.name, batch_size)

    def evaluate(self, model):
        if self._eval is None:
            examples = self.processor.get_dev_examples(self.options.data_dir)
            self._eval = (examples, self._dataset(examples, "evaluation", self.options.eval_batch_size, "eval"))
        examples, dataset = self._eval
        if getattr(self, "_eval_model", None) is not model:
            self._eval_model = model
            self._eval_step = make_inference_step(model, self.runtime.options.jit_compile)
        arrays = run_model_on_dataset(model, dataset, self.runtime.strategy, len(examples), "eval",
                                      step=self._eval_step, max_seq_length=self.options.max_seq_length)
        result = compute_eval_metrics(self.name, arrays["label_ids"], arrays["predictions"],
                                      arrays["per_example_loss"], arrays["is_real_example"], arrays["batch_loss"])
        logging.info("Eval: %s", ", ".join(f"{k} = {v:.6g}" for k, v in sorted(result.items())))
        return result

    def predict(self, model, step):
        examples = self.processor.get_test_examples(self.options.data_dir)
        dataset = self._dataset(examples, "prediction", self.options.predict_batch_size, "predict")
        arrays = run_model_on_dataset(model, dataset, self.runtime.strategy, len(examples), "predict",
                                      step=make_inference_step(model, self.runtime.options.jit_compile),
                                      max_seq_length=self.options.max_seq_length)
        n = len(examples)
        paths = write_predictions(self.options.output_dir, self.name, self.label_list, examples,
                                  arrays["probabilities"][:n], arrays["predictions"][:n],
                                  self.processor.LEADERBOARD_FILE)
        logging.info("Wrote %d predictions: %s", n, ", ".join(paths))
        return paths

    def export(self, model, export_dir):
        threshold = self.options.threshold_to_export
        threshold = None if threshold is None or math.isnan(threshold) else threshold
        path = export_lib.export_saved_model(model, export_dir, spm_model_file=self.runtime.spm_model_file,
                                             do_lower_case=self.options.do_lower_case,
                                             max_seq_length=self.options.max_seq_length, threshold=threshold)
        logging.info("Model exported to %s.", path)
        return {"export_path": path}


def run_classifier(*args, options=None, runtime=None, **kwargs):
    """Fine-tunes, evaluates and/or predicts a GLUE task, as the original `run_classifier.py`.

    Args:
        *args: `task_name, data_dir, output_dir` (`ClassifierOptions.positional`), or give them by keyword.
        options: `ClassifierOptions`, runtime: `RuntimeOptions`; **kwargs: their fields (the flags of
            `run_classifier.py`: same names, defaults and meanings), which update `options` / `runtime`.

    Returns:
        dict: `eval` (best metrics, with `best_step`) when `do_eval`, `predict_files` when `do_predict`,
        `export_path` when exporting.
    """
    stages = driver.run(GlueTask, *options_lib.call_options(ClassifierOptions, args, kwargs, options, runtime))
    names = {"eval": "eval", "predict": "predict_files", "export_path": "export_path"}
    return {names[key]: value for key, value in stages.items() if key in names}


def _preset(values, given):
    """The `--hparams_preset` values of the flags not given."""
    if not values.get("hparams_preset"):
        return {}
    return {name: value for name, value in hparams_preset(values["hparams_preset"], values["task_name"]).items()
            if name not in given}


RUN_CLASSIFIER_HELP = """Fine-tunes, evaluates and predicts a GLUE task with ALBERT, as the original `run_classifier.py`: it reads the
task's TSV files under `--data_dir`, the model's `--albert_config_file` and `--spm_model_file`, and the
initial weights of `--init_checkpoint` (or `--albert_hub_module_handle`); `--do_train` writes cached
`<task>_{train,eval,predict}.tf_record` features (in `--cached_dir`, default `--output_dir`) and
`model.ckpt-<step>` checkpoints in `--output_dir`, `--do_eval` scores every checkpoint on the dev set and keeps
the best as `model.ckpt-best` with `eval_results.txt` and `best_trial.txt`, `--do_predict` writes
`test_results.tsv`, `submit_results.tsv` and the GLUE leaderboard file there, and `--export_dir` receives a
SavedModel; checkpoints written by the original code in `--output_dir` are read as well.

Example (the paper's RTE setup from `run_glue.sh`, starting from an MNLI run):

    python -m albert_tf.run_classifier --task_name=rte --hparams_preset=albert --data_dir=glue \\
      --albert_config_file=albert_base/albert_config.json --spm_model_file=albert_base/30k-clean.model \\
      --init_checkpoint=mnli_out/model.ckpt-best --output_dir=rte_out --do_train --do_eval --do_predict
"""

# The original `run_classifier.py`; `--hparams_preset` fills in the flags not given (`_preset`).
RUN_CLASSIFIER = options_lib.Command(
    name="run_classifier", help_text=RUN_CLASSIFIER_HELP,
    options=(ClassifierOptions, options_lib.RuntimeOptions, PresetOptions),
    call=lambda options, runtime, _: run_classifier(options=options, runtime=runtime), resolve=_preset)
