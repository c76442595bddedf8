"""RACE fine-tuning, evaluation and prediction: the RACE task of the driver and the library behind `run_race.py`.

`run_race(...)` does what the original `run_race.py` does, with a TF2 custom training loop instead of a
TPUEstimator (`albert_tf.training.driver` runs the stages): train for `train_step` steps (AdamW, warm-up then
linear decay), evaluate every saved checkpoint on the dev set (`eval_results.txt`, `best_trial.txt`, best
copied to `model.ckpt-best`), and on `do_predict` score the test set with the best checkpoint
(`predict_results.txt`, plus per-question `predictions.tsv`).
Accuracy is reported overall and per level (`middle`, `high`).
"""

import csv
import dataclasses
import functools
import io
import os
from typing import ClassVar, Optional

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import options as options_lib
from albert_tf.checkpoints import init_from_checkpoint
from albert_tf.config import TOKEN_INPUTS
from albert_tf.export import saved_model as export_lib
from albert_tf.tasks.race import data as race_data
from albert_tf.tasks.race.data import RACE_NUM_CHOICES
from albert_tf.errors import InputError
from albert_tf.fileio import write_text_atomic
from albert_tf.options import option
from albert_tf.tasks.race.model import AlbertRace, race_loss
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.training import driver, inference
from albert_tf.tasks.race import kind

PREDICTIONS_FILE = "predictions.tsv"
PREDICT_RESULTS_FILE = "predict_results.txt"
METRIC_KEY = "eval_accuracy"


def check_race_tfrecord(path, max_seq_length, expected_count=None):
    """Checks that a cached RACE TFRecord matches `max_seq_length` (and the number of questions, if given)."""
    first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    if first is None:
        raise InputError(f"RACE TFRecord `{path}` is empty; delete it to regenerate it.")
    example = tf.train.Example.FromString(first.numpy())
    length = len(example.features.feature["input_ids"].int64_list.value)
    if length != RACE_NUM_CHOICES * max_seq_length:
        raise InputError(f"RACE TFRecord `{path}` holds `input_ids` of length {length}, expected "
                         f"{RACE_NUM_CHOICES} * max_seq_length = {RACE_NUM_CHOICES * max_seq_length}: it was "
                         "written with another `max_seq_length`; delete it or pass another file to regenerate it.")
    if expected_count is not None:
        count = race_data.count_records(path)
        if count != expected_count:
            raise InputError(f"RACE TFRecord `{path}` holds {count} records but the data has {expected_count} "
                             "questions (other data or --high_only/--middle_only); delete it or pass another "
                             "file to regenerate it.")


def prepare_tfrecord(examples, tokenizer, path, max_seq_length, max_qa_length, num_padding=0, check_count=True):
    """Writes `path` unless it exists (the original's cache semantics), then checks it fits the request."""
    if tf.io.gfile.exists(path):
        logging.info("Using cached RACE features %s", path)
        check_race_tfrecord(path, max_seq_length, len(examples) + num_padding if check_count else None)
    else:
        race_data.write_race_tfrecord(examples, tokenizer, max_seq_length, max_qa_length, path, num_padding)
    return path


def make_logits_fn(model, strategy=None, jit_compile=False, max_seq_length=None):
    """A function mapping a dataset to NumPy `logits [n, 4]`, `label_ids [n]`, `is_real [n]` in its order (one
    trace of the step per shape, reused for every checkpoint); with `max_seq_length` (the features' length)
    each batch runs at its longest real length."""
    strategy = strategy or tf.distribute.get_strategy()

    def replica_step(batch):
        inputs = {k: batch[k] for k in TOKEN_INPUTS}
        return {"logits": model(inputs, training=False)["logits"], "label_ids": batch["label_ids"],
                "is_real_example": batch["is_real_example"]}

    step = inference.make_step(model, replica_step, jit_compile, token_keys=inference.TOKEN_FEATURES)

    def run(dataset):
        logits, labels, real = [], [], []
        for arrays in inference.inference_batches(step, dataset, strategy, "Scoring", unit="questions",
                                                  max_length=max_seq_length):
            logits.append(arrays["logits"])
            labels.append(arrays["label_ids"])
            real.append(arrays["is_real_example"])
        if not logits:
            return np.zeros([0, RACE_NUM_CHOICES], np.float32), np.zeros([0], np.int32), np.zeros([0], bool)
        return np.concatenate(logits), np.concatenate(labels), np.concatenate(real).astype(bool)

    return run


def score_examples(logits_fn, examples, tfrecord, max_seq_length, batch_size, drop_remainder=False):
    """Scores the questions of `tfrecord` (written from `examples`, in order) with `make_logits_fn(...)`.

    Returns:
        `(metrics, logits)`: `accuracy_by_level` metrics (with `eval_loss`), `logits [n, 4]` of real examples.
    """
    dataset = race_data.race_dataset(tfrecord, max_seq_length, batch_size, is_training=False,
                                     drop_remainder=drop_remainder)
    logits, labels, real = logits_fn(dataset)
    logits, labels = logits[real], labels[real]
    if len(labels) != len(examples):
        raise InputError(f"RACE TFRecord `{tfrecord}` yielded {len(labels)} questions, expected {len(examples)}.")
    labeled = labels != race_data.NO_LABEL
    per_example_loss = np.zeros(len(labels), np.float32)
    if labeled.any():
        _, loss = race_loss(logits[labeled], labels[labeled])
        per_example_loss[labeled] = np.asarray(loss)
    metrics = race_data.accuracy_by_level(logits.argmax(-1), labels, [e.level for e in examples],
                                          per_example_loss)
    return metrics, logits


def write_predictions(path, examples, logits):
    """Per-question TSV: id, level, predicted letter, gold letter (empty if unknown), probabilities A-D."""
    probabilities = tf.nn.softmax(logits, axis=-1).numpy()
    text = io.StringIO()
    writer = csv.writer(text, delimiter="\t", lineterminator="\n")
    writer.writerow(["id", "level", "prediction", "answer"] + [f"prob_{c}" for c in race_data.LABELS])
    for example, probs in zip(examples, probabilities):
        answer = "" if example.label is None else race_data.LABELS[example.label]
        writer.writerow([example.example_id, example.level, race_data.LABELS[int(probs.argmax())], answer]
                        + [f"{p:.6f}" for p in probs])
    write_text_atomic(path, text.getvalue())


def _format_results(title, metrics):
    lines = [title] if title else []
    lines += [f"{key} = {metrics[key]}" for key in sorted(metrics)]
    return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True, kw_only=True)
class RaceOptions(options_lib.StepsOptions):
    """`run_race`'s task options: the original `run_race.py` flags (`num_keep_checkpoint` is accepted and
    unused, as the original's RunConfig keeps every checkpoint so that each one is evaluated), and
    `delete_non_best`, which has no flag. `optimizer` (no flag either) is `adamw`, the original's, or `lamb`."""

    data_dir: str = option(help_text="The input data dir. Should contain `RACE/{train,dev,test}/{middle,high}` "
                           "(per-level `all.txt` JSON lines or the per-article `*.txt` files).")
    task_name: str = option("race", "The name of the task to train.")
    train_file: Optional[str] = option(None, "path to preprocessed tfrecord file. The file will be generated if not "
                                       "exst. Default: <output_dir>/train.tf_record.")
    eval_file: Optional[str] = option(None, "path to preprocessed tfrecord file. The file will be generated if not "
                                      "exst. Default: <output_dir>/eval.tf_record.")
    predict_file: Optional[str] = option(None, "path to preprocessed tfrecord file. The file will be generated if "
                                         "not exst. Default: <output_dir>/predict.tf_record.")
    dropout_prob: float = option(0.1, "dropout probability.")
    max_qa_length: int = options_lib.length_option(kind.MAX_QA_LENGTH)
    num_keep_checkpoint: int = option(5, "maximum number of keep checkpoints (unused, as in the original).")
    high_only: bool = option(False, "Whether to only run the model on the high school set.")
    middle_only: bool = option(False, "Whether to only run the model on the middle school set.")
    delete_non_best: bool = option(True, "After evaluation delete the checkpoints other than the best and the "
                                   "latest (the original deletes them while evaluating).", flag=False)
    # The original `run_race.py`'s defaults.
    do_train: bool = option(True)
    do_eval: bool = option(True)
    learning_rate: float = option(1e-5)
    save_checkpoints_steps: int = option(100)
    train_step: int = option(12000)
    warmup_step: int = option(1000)

    metric_key: ClassVar[str] = METRIC_KEY

    @property
    def keep_best_only(self):
        return self.delete_non_best

    def feature_path(self, name):
        """The TFRecord cache `name` (`train_file`, `eval_file`, `predict_file`), by default in `output_dir`."""
        return getattr(self, name) or os.path.join(self.output_dir, f"{name[:-len('_file')]}.tf_record")

    def feature_files(self):
        return [self.feature_path(name) for name in ("train_file", "eval_file", "predict_file")]


def run_race(*args, options=None, runtime=None, **kwargs):
    """Fine-tunes, evaluates and predicts RACE as the original `run_race.py`.

    Args:
        *args: `data_dir, output_dir` (`RaceOptions.positional`), or give them by keyword.
        options: `RaceOptions`, runtime: `RuntimeOptions`; **kwargs: their fields (the flags of `run_race.py`:
            same names, defaults and meanings), which update `options` / `runtime`.

    Returns:
        dict with `eval` (best dev metrics, with `best_step`), `predict` (test metrics) and `export_path`, for
        the stages run.
    """
    return driver.results_after_training(
        driver.run(RaceTask, *options_lib.call_options(RaceOptions, args, kwargs, options, runtime)))


class RaceTask(driver.Task):
    """RACE: four (article, question + option) sequences per question, `AlbertRace`, accuracy per level."""

    def __init__(self, options, runtime):
        super().__init__(options, runtime)
        self.best_value = None
        self._logits_fn = None
        self._eval_examples = None

    @functools.cached_property
    def tokenizer(self):
        return FullTokenizer(vocab_file=self.options.vocab_file, do_lower_case=self.options.do_lower_case,
                             spm_model_file=self.runtime.spm_model_file)

    @property
    def read(self):
        """The keywords of `read_race_examples`: casing, levels, and whether the vocabulary is SentencePiece."""
        o = self.options
        return dict(do_lower_case=o.do_lower_case, high_only=o.high_only, middle_only=o.middle_only,
                    use_spm=bool(self.runtime.spm_model_file))

    def check(self):
        options = self.options
        options.check_stages()
        if str(options.task_name).lower() != "race":
            raise InputError(f"Task not found: `task_name={options.task_name!r}`; run_race supports `race`.")
        if not options.output_dir:
            raise InputError("`output_dir` is required.")
        race_data.levels_for(options.high_only, options.middle_only)
        if options.max_qa_length > options.max_seq_length - 3:
            raise InputError(f"`max_qa_length` must be <= `max_seq_length` - 3. Received: "
                             f"`max_qa_length={options.max_qa_length}`, `max_seq_length={options.max_seq_length}`.")
        options.check_batch_sizes()
        super().check()
        options.check_vocabulary(self.runtime.spm_model_file)

    def build_model(self, init_path=None):
        model = AlbertRace(self.runtime.config, dropout_prob=self.options.dropout_prob,
                           **driver.model_kwargs(self.runtime))
        if init_path:
            logging.info("Initialising from %s", init_path)
            init_from_checkpoint(model, init_path, allow_missing_heads=True)
        return model

    def _scorer(self, model):
        # One trace of the scoring step per model, reused for every checkpoint.
        if self._logits_fn is None or self._logits_fn[0] is not model:
            self._logits_fn = (model, make_logits_fn(model, self.runtime.strategy, self.runtime.options.jit_compile,
                                                     self.options.max_seq_length))
        return self._logits_fn[1]

    def train_data(self):
        o = self.options
        try:
            race_data.split_dir(o.data_dir, "train")
        except InputError as e:
            raise InputError(f"{e} `do_train` is true by default, as in the original: pass `do_train=False` "
                             "(--nodo_train) to evaluate or predict without training.") from e
        examples = race_data.read_race_examples(o.data_dir, "train", **self.read)
        train_file = o.feature_path("train_file")
        prepare_tfrecord(examples, self.tokenizer, train_file, o.max_seq_length, o.max_qa_length, check_count=False)
        logging.info("***** Running training *****\n  Num examples = %d\n  Num steps = %d", len(examples),
                     o.train_step)

        def dataset(input_context, batch_size, start_batch=0):
            return race_data.race_dataset(train_file, o.max_seq_length, batch_size, is_training=True,
                                          drop_remainder=True, input_context=input_context,
                                          seed=self.runtime.options.random_seed, start_batch=start_batch)

        return driver.TrainData(o.train_step, o.warmup_step, dataset)

    def loss(self, model, features, training):
        outputs = model(features, training=training)
        loss, _ = race_loss(outputs["logits"], features["label_ids"])
        ops = keras.ops      # any Keras backend: the JAX training loop traces it too
        labels = ops.cast(ops.reshape(features["label_ids"], [-1]), "int32")
        accuracy = ops.mean(ops.cast(ops.equal(ops.cast(outputs["predictions"], "int32"), labels), "float32"))
        return loss, {"accuracy": accuracy}

    def evaluate(self, model):
        o, static = self.options, self.runtime.static_batches
        if self._eval_examples is None:
            self._eval_examples = race_data.read_race_examples(o.data_dir, "dev", **self.read)
            padding = (-len(self._eval_examples)) % o.eval_batch_size if static else 0
            prepare_tfrecord(self._eval_examples, self.tokenizer, o.feature_path("eval_file"), o.max_seq_length,
                             o.max_qa_length, padding)
            logging.info("***** Running evaluation *****\n  Num examples = %d (%d padding)\n  Batch size = %d",
                         len(self._eval_examples), padding, o.eval_batch_size)
        metrics, _ = score_examples(self._scorer(model), self._eval_examples, o.feature_path("eval_file"),
                                    o.max_seq_length, o.eval_batch_size, drop_remainder=static)
        logging.info("RACE dev: %s", metrics)
        value = metrics[METRIC_KEY]
        self.best_value = value if self.best_value is None else max(self.best_value, value)
        return metrics

    def predict(self, model, step):
        o, static = self.options, self.runtime.static_batches
        examples = race_data.read_race_examples(o.data_dir, "test", require_answers=False, **self.read)
        batch_size = o.predict_batch_size
        padding = (-len(examples)) % batch_size if static else 0
        predict_file = o.feature_path("predict_file")
        prepare_tfrecord(examples, self.tokenizer, predict_file, o.max_seq_length, o.max_qa_length, padding)
        logging.info("***** Running prediction *****\n  Num examples = %d (%d padding)\n  Batch size = %d",
                     len(examples), padding, batch_size)
        metrics, logits = score_examples(self._scorer(model), examples, predict_file, o.max_seq_length,
                                         batch_size, drop_remainder=static)
        write_predictions(os.path.join(o.output_dir, PREDICTIONS_FILE), examples, logits)
        if metrics["num_examples"] == 0:  # No answers in the test data: no accuracy to report.
            metrics = {"num_questions": len(examples)}
        else:
            metrics["num_questions"] = len(examples)
        if step is not None:
            metrics["global_step"] = step
        if self.best_value is not None:
            metrics["best"] = self.best_value
        write_text_atomic(os.path.join(o.output_dir, PREDICT_RESULTS_FILE),
                          _format_results("***** Predict results *****", metrics))
        logging.info("RACE test: %s", metrics)
        return metrics

    def export(self, model, export_dir):
        o = self.options
        path = export_lib.export_saved_model(model, export_dir, spm_model_file=self.runtime.spm_model_file,
                                             do_lower_case=o.do_lower_case, max_seq_length=o.max_seq_length,
                                             max_qa_length=o.max_qa_length)
        logging.info("Model exported to %s", path)
        return {"export_path": path}


RUN_RACE_HELP = """Fine-tunes, evaluates and predicts RACE with ALBERT, as the original `run_race.py`: it reads the
`RACE/{train,dev,test}/{middle,high}` files under `--data_dir`, the model's `--albert_config_file` and
`--spm_model_file` (or those of a release directory given as `--init_checkpoint`), and the initial weights;
it writes cached `{train,eval,predict}.tf_record` features and `model.ckpt-<step>` checkpoints in
`--output_dir`, scores every checkpoint on the dev set (`eval_results.txt`, `best_trial.txt`,
`model.ckpt-best`), writes `predict_results.txt` and `predictions.tsv` for the test set with `--do_predict`,
and a SavedModel in `--export_dir`; checkpoints written by the original code in `--output_dir` are read as
well.

Example (the README's command):

    python -m albert_tf.run_race --data_dir=$DATA --albert_config_file=$ALBERT/albert_config.json \\
      --spm_model_file=$ALBERT/30k-clean.model --init_checkpoint=$ALBERT/model.ckpt-best \\
      --output_dir=$OUT --max_seq_length=512 --max_qa_length=128 --train_batch_size=32 \\
      --learning_rate=1e-5 --train_step=12000 --warmup_step=1000 --save_checkpoints_steps=100
"""

# The original `run_race.py` (no --optimizer: AdamW).
RUN_RACE = options_lib.Command(name="run_race", help_text=RUN_RACE_HELP,
                               options=(RaceOptions, options_lib.RuntimeOptions),
                               call=lambda options, runtime: run_race(options=options, runtime=runtime),
                               no_flag=("optimizer",))
