"""Token classification (NER) fine-tuning, evaluation and prediction on CoNLL-2003-layout data.

`run_ner(...)` is the library behind `run_ner.py`; `albert_tf.training.driver` runs the stages as for the other
tasks: train `AlbertTokenClassifier` for `train_step` steps (AdamW, warm-up then linear decay), score every saved
checkpoint on `valid.txt`/`dev.txt` (entity F1 picks `model.ckpt-best`; `eval_results.txt`, `best_trial.txt`),
on `do_predict` tag `test.txt` with the best checkpoint (`predictions.txt`: each input line with the predicted
tag as a last column, and `predict_results.txt`), and export a SavedModel whose `serve_text` tags words.

The metrics are `conlleval`'s (`albert_tf.tasks.ner.conlleval`): entity-level micro precision, recall and F1,
the same per entity type, and the token accuracy, computed on whole sentences (windows put back together).
"""

import dataclasses
import functools
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
from albert_tf.tasks.ner import data as conll
from albert_tf.errors import InputError
from albert_tf.fileio import write_text_atomic
from albert_tf.options import option
from albert_tf.tasks.ner.model import AlbertTokenClassifier, token_classification_loss
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.training import driver, inference
from albert_tf.tasks.ner import conlleval

PREDICTIONS_FILE = "predictions.txt"
PREDICT_RESULTS_FILE = "predict_results.txt"
TRAIN_RECORD_FILE = "train.tf_record"
METRIC_KEY = "eval_f1"


@dataclasses.dataclass(frozen=True, kw_only=True)
class NerOptions(options_lib.StepsOptions):
    """`run_ner`'s task options (the flags of `run_ner.py`); batch sizes count windows."""

    data_dir: str = option(help_text="The input data dir, with train.txt, valid.txt (or dev.txt) and test.txt in "
                           "the CoNLL-2003 layout.")
    labels: Optional[str] = option(None, "Comma-separated tags (e.g. O,B-PER,I-PER). Default: the tags of "
                                   "train.txt, O first, then the others sorted.")
    dropout_prob: float = option(0.1, "Dropout on the sequence output while training.")
    # Pieces per window ([CLS] and [SEP] included); longer sentences are split into windows of whole words.
    max_seq_length: int = option(128)

    metric_key: ClassVar[str] = METRIC_KEY


def run_ner(*args, options=None, runtime=None, **kwargs):
    """Fine-tunes, evaluates and predicts token classification on CoNLL-2003-layout data.

    Args:
        *args: `data_dir, output_dir` (`NerOptions.positional`), or give them by keyword.
        options: `NerOptions`, runtime: `RuntimeOptions`; **kwargs: their fields (the flags of `run_ner.py`:
            same names, defaults and meanings), which update `options` / `runtime`. `random_seed` also seeds
            the training shuffle; the SavedModel of `export_dir` tags whitespace-separated words (`serve_text`).

    Returns:
        dict with `eval` (best dev metrics, with `best_step`), `predict` (test metrics) and `export_path`, for the
        stages run.
    """
    return driver.results_after_training(
        driver.run(NerTask, *options_lib.call_options(NerOptions, args, kwargs, options, runtime)))


def make_logits_fn(model, strategy, jit_compile=False, max_seq_length=None):
    """A function mapping a dataset of windows to NumPy `logits [n, seq, num_labels]` (one trace per shape,
    reused); `jit_compile` compiles the step with XLA on TensorFlow; with `max_seq_length` (the windows' length)
    each batch runs at its longest real length and its logits are padded back with zeros."""

    def replica_step(batch):
        inputs = {k: batch[k] for k in TOKEN_INPUTS}
        return {"logits": model(inputs, training=False)["logits"]}

    step = inference.make_step(model, replica_step, jit_compile, token_keys=inference.TOKEN_FEATURES,
                               token_outputs=("logits",))

    def run(dataset):
        chunks = [arrays["logits"] for arrays in inference.inference_batches(step, dataset, strategy, "Tagging",
                                                                           unit="windows", max_length=max_seq_length)]
        return np.concatenate(chunks) if chunks else np.zeros([0, 0, model.num_labels], np.float32)

    return run


class NerTask(driver.Task):
    """CoNLL-2003 NER: `AlbertTokenClassifier`, label on each word's first piece, `conlleval` entity F1."""

    def __init__(self, options, runtime):
        super().__init__(options, runtime)
        self.train_file = os.path.join(options.output_dir, TRAIN_RECORD_FILE)
        self.best_value = None
        self._logits_fn = None
        self._eval = None

    @functools.cached_property
    def tokenizer(self):
        return FullTokenizer(vocab_file=self.options.vocab_file, do_lower_case=self.options.do_lower_case,
                             spm_model_file=self.runtime.spm_model_file)

    @functools.cached_property
    def labels(self):
        options = self.options
        if options.labels is not None:
            labels = conll.parse_labels(options.labels)
        else:
            labels = conll.labels_from_sentences(conll.read_sentences(conll.split_path(options.data_dir, "train")))
        logging.info("Labels: %s", ", ".join(labels))
        return list(labels)

    def check(self):
        options = self.options
        options.check_stages()
        if not options.output_dir:
            raise InputError("`output_dir` is required.")
        if not options.data_dir:
            raise InputError("`data_dir` is required (the CoNLL-2003 layout: train.txt, valid.txt, test.txt).")
        if options.max_seq_length < 3:
            raise InputError(f"`max_seq_length` must be >= 3. Received: `max_seq_length={options.max_seq_length}`.")
        options.check_batch_sizes()
        if options.labels is not None:
            conll.parse_labels(options.labels)
        if options.labels is None:
            conll.split_path(options.data_dir, "train")   # The label list is read from it.
        for stage, split in (("do_train", "train"), ("do_eval", "dev"), ("do_predict", "test")):
            if getattr(options, stage):
                path = conll.split_path(options.data_dir, split)
                if split == "dev":   # Tags the label list lacks stop the run before any work.
                    conll.check_tags(conll.read_sentences(path), self.labels, path)
        super().check()
        options.check_vocabulary(self.runtime.spm_model_file)

    def label_names(self):
        return list(self.labels)

    def build_model(self, init_path=None):
        model = AlbertTokenClassifier(self.runtime.config, num_labels=len(self.labels), labels=self.labels,
                                      dropout_rate=self.options.dropout_prob, **driver.model_kwargs(self.runtime))
        if init_path:
            logging.info("Initialising from %s", init_path)
            init_from_checkpoint(model, init_path, allow_missing_heads=True)
        return model

    def _tagger(self, model):
        # One trace of the tagging step per model, reused for every checkpoint.
        if self._logits_fn is None or self._logits_fn[0] is not model:
            self._logits_fn = (model, make_logits_fn(model, self.runtime.strategy, self.runtime.options.jit_compile,
                                                     self.options.max_seq_length))
        return self._logits_fn[1]

    def _read(self, split):
        path = conll.split_path(self.options.data_dir, split)
        sentences = conll.read_sentences(path)
        conll.check_tags(sentences, self.labels, path)
        windows = conll.convert_sentences(sentences, self.tokenizer, self.labels, self.options.max_seq_length,
                                          self.options.do_lower_case)
        return sentences, windows

    def train_data(self):
        o = self.options
        sentences, windows = self._read("train")
        conll.write_tfrecord(windows, o.max_seq_length, self.train_file)
        logging.info("***** Running training *****\n  Num sentences = %d\n  Num windows = %d\n  Num steps = %d",
                     len(sentences), len(windows), o.train_step)

        def dataset(input_context, batch_size, start_batch=0):
            del start_batch  # Not positional: a resumed run reads on from the input position in the checkpoint.
            return conll.dataset(self.train_file, o.max_seq_length, batch_size, is_training=True,
                                 input_context=input_context, seed=self.runtime.options.random_seed,
                                 drop_remainder=True)

        return driver.TrainData(o.train_step, o.warmup_step, dataset, positional=False)

    def loss(self, model, features, training):
        outputs = model(features, training=training)
        loss, count = token_classification_loss(outputs["logits"], features["label_ids"])
        ops = keras.ops      # any Keras backend: the JAX training loop traces it too
        label_ids = ops.cast(features["label_ids"], "int32")
        labelled = ops.not_equal(label_ids, conll.IGNORE_ID)
        correct = ops.logical_and(labelled, ops.equal(ops.cast(outputs["predictions"], "int32"), label_ids))
        return loss, {"accuracy": ops.divide_no_nan(ops.sum(ops.cast(correct, "float32")), count)}

    def tag(self, model, sentences, windows, batch_size):
        """`(predicted tags per sentence, mean loss over labelled first pieces)` of the windows of `sentences`."""
        arrays = conll.window_arrays(windows, self.options.max_seq_length)
        padded = arrays
        if self.runtime.static_batches:
            # One batch shape for a TPU or XLA: empty windows (no piece, no label) fill the last batch.
            fill = (-len(windows)) % batch_size
            padded = {key: np.concatenate([value, np.zeros((fill,) + value.shape[1:], value.dtype)])
                      for key, value in arrays.items()}
        batches = tf.data.Dataset.from_tensor_slices(padded).batch(batch_size)
        logits = self._tagger(model)(batches)[:len(windows)]
        loss, _ = token_classification_loss(logits, arrays["label_ids"]) if len(windows) else (0.0, 0)
        predicted = conll.word_predictions(sentences, windows, logits.argmax(-1), self.labels)
        return predicted, float(loss)

    def score(self, model, sentences, windows, batch_size):
        predicted, loss = self.tag(model, sentences, windows, batch_size)
        metrics = conlleval.conll_metrics([s.tags for s in sentences], predicted)
        return dict(conlleval.flat_metrics(metrics), eval_loss=loss, num_sentences=len(sentences)), predicted

    def evaluate(self, model):
        if self._eval is None:
            self._eval = self._read("dev")
            logging.info("***** Running evaluation *****\n  Num sentences = %d\n  Num windows = %d",
                         len(self._eval[0]), len(self._eval[1]))
        metrics, _ = self.score(model, *self._eval, self.options.eval_batch_size)
        logging.info("NER dev: %s", metrics)
        value = metrics[METRIC_KEY]
        self.best_value = value if self.best_value is None else max(self.best_value, value)
        return metrics

    def predict(self, model, step):
        sentences, windows = self._read("test")
        metrics, predicted = self.score(model, sentences, windows, self.options.predict_batch_size)
        write_text_atomic(os.path.join(self.options.output_dir, PREDICTIONS_FILE),
                          conll.format_predictions(sentences, predicted))
        if step is not None:
            metrics["global_step"] = step
        write_text_atomic(os.path.join(self.options.output_dir, PREDICT_RESULTS_FILE),
                          "***** Predict results *****\n" + "".join(f"{k} = {metrics[k]}\n" for k in sorted(metrics)))
        logging.info("NER test: %s", metrics)
        return metrics

    def export(self, model, export_dir):
        path = export_lib.export_saved_model(model, export_dir, spm_model_file=self.runtime.spm_model_file,
                                             do_lower_case=self.options.do_lower_case,
                                             max_seq_length=self.options.max_seq_length)
        logging.info("Model exported to %s", path)
        return {"export_path": path}


RUN_NER_HELP = """Fine-tunes, evaluates and predicts token classification (NER) with ALBERT on CoNLL-2003-layout data: it
reads `train.txt`, `valid.txt` (or `dev.txt`) and `test.txt` under `--data_dir` (`word POS chunk tag` lines,
IOB1 or IOB2 tags), the model's `--albert_config_file` and `--spm_model_file` (or those of a release directory
given as `--init_checkpoint`) and the initial weights; it writes `train.tf_record` and `model.ckpt-<step>`
checkpoints in `--output_dir`, scores every checkpoint on the dev set with `conlleval`'s entity F1
(`eval_results.txt`, `best_trial.txt`, `model.ckpt-best`), writes `predictions.txt` (the test file with the
predicted tag as a last column) and `predict_results.txt` with `--do_predict`, and a SavedModel in
`--export_dir`.

Example:

    python -m albert_tf.run_ner --data_dir=$CONLL --albert_config_file=$ALBERT/albert_config.json \\
      --spm_model_file=$ALBERT/30k-clean.model --init_checkpoint=$ALBERT/model.ckpt-best \\
      --output_dir=$OUT --do_train --do_eval --do_predict --max_seq_length=128 --train_batch_size=32 \\
      --learning_rate=5e-5 --train_step=3000 --warmup_step=300 --save_checkpoints_steps=500
"""

RUN_NER = options_lib.Command(name="run_ner", help_text=RUN_NER_HELP, options=(NerOptions, options_lib.RuntimeOptions),
                              call=lambda options, runtime: run_ner(options=options, runtime=runtime))
