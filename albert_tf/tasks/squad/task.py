"""SQuAD 1.1 / 2.0 fine-tuning and prediction: the SQuAD task of the driver and the library side of `run_squad.py`.

`run_squad(...)` does what the original `run_squad_v1.py` / `run_squad_v2.py` mains do, with explicit
arguments instead of flags (`albert_tf.training.driver` runs the stages); `version_2_with_negative` selects v2:

* `do_train`: the training examples are shuffled (`random.Random(12345)`), converted once to
  `train_feature_file` (reused when present), the model initialised from `init_checkpoint` /
  `albert_hub_module_handle` and trained `int(n_examples / train_batch_size * num_train_epochs)` steps with
  AdamW, warm-up `int(steps * warmup_proportion)`, a checkpoint every `save_checkpoints_steps`.
* `do_predict`: `predict_feature_file` (TFRecord) and `predict_feature_left_file` (JSON here; the original
  pickles it) are written or reused; every checkpoint in `output_dir` is run on them and, when the predict
  file has answers, scored with the official metrics; the best by `f1` is copied to `model.ckpt-best`, and
  `predictions.json`, `nbest_predictions.json` (v2: `null_odds.json`) are finally written from it.
  v2 tunes the null-score threshold on the predict set as the original, unless `null_score_diff_threshold`
  is given.
* `export_dir`: a SavedModel of `model.ckpt-best` (or the latest checkpoint), via `albert_tf.export.saved_model`; v1 also
  writes `albert_model.tflite` (fixed `[1, max_seq_length]` inputs), as `run_squad_v1.py`.
"""

import dataclasses
import functools
import os
import random
from typing import ClassVar, Optional

import tensorflow as tf
from absl import logging

from albert_tf import options as options_lib
from albert_tf.export import saved_model as export_lib
from albert_tf.export import lite
from albert_tf.checkpoints import init_from_checkpoint, resolve_source
from albert_tf.checkpoints.convert import describe_heads
from albert_tf.tasks.squad import data as squad
from albert_tf.tasks.squad import postprocess as post
from albert_tf.errors import InputError
from albert_tf.fileio import write_bytes_atomic, write_text_atomic
from albert_tf.options import constant, option
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2, squad_v1_loss, squad_v2_loss
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.training import driver, inference
from albert_tf.tasks.squad import kind

_V2_RESULT_KEYS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")


def num_train_steps_and_warmup(num_examples, train_batch_size, num_train_epochs, warmup_proportion):
    """The original's `int(n / batch * epochs)` steps and `int(steps * warmup_proportion)` warm-up steps."""
    steps = int(num_examples / train_batch_size * num_train_epochs)
    return steps, int(steps * warmup_proportion)


def _conversion_metadata(max_seq_length, doc_stride, max_query_length, do_lower_case, predict_file,
                         num_examples):
    return {"max_seq_length": max_seq_length, "doc_stride": doc_stride, "max_query_length": max_query_length,
            "do_lower_case": bool(do_lower_case), "predict_file": os.path.basename(predict_file),
            "num_examples": num_examples}


def prepare_eval_features(examples, tokenizer, predict_file, predict_feature_file, predict_feature_left_file,
                          max_seq_length, doc_stride, max_query_length, do_lower_case):
    """Writes (or reuses, when both exist) the predict TFRecord and the JSON eval-feature file."""
    metadata = _conversion_metadata(max_seq_length, doc_stride, max_query_length, do_lower_case, predict_file,
                                    len(examples))
    if tf.io.gfile.exists(predict_feature_file) and tf.io.gfile.exists(predict_feature_left_file):
        logging.info("Loading eval features from %s", predict_feature_left_file)
        return squad.read_eval_features(predict_feature_left_file, expected_metadata=metadata)
    features = []
    with squad.FeatureWriter(predict_feature_file, is_training=False) as writer:
        def append_feature(feature):
            features.append(feature)
            writer.process_feature(feature)

        squad.convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                                           False, append_feature, do_lower_case)
    squad.write_eval_features(features, predict_feature_left_file, metadata=metadata)
    return features


def predict_dataset(predict_feature_file, max_seq_length, batch_size, is_v2, num_features,
                    pad_to_full_batches=False):
    """The predict TFRecord in batches; with `pad_to_full_batches` (TPU) the last batch is filled with copies of
    the first feature, whose duplicate results `postprocess` ignores (one result per `unique_id` is kept)."""
    if not pad_to_full_batches:
        return squad.squad_dataset(predict_feature_file, max_seq_length, False, batch_size, False, is_v2=is_v2)
    records = squad.squad_dataset(predict_feature_file, max_seq_length, False, 1, False, is_v2=is_v2).unbatch()
    padding = (-num_features) % batch_size
    if padding:
        records = records.concatenate(records.take(1).repeat(padding))
    return records.batch(batch_size, drop_remainder=True)


def predict_raw_results(model, dataset, strategy, version_2_with_negative, num_features=None, jit_compile=False,
                        max_seq_length=None):
    """Runs `model(training=False)` over the predict dataset; returns `RawResult`s (v1) or `RawResultV2`s.
    `jit_compile` compiles the step with XLA on TensorFlow. With `max_seq_length` (the features' length), v2
    runs each batch at its longest real length (its beams never pick a padding position, masked by `p_mask`);
    v1 keeps the full length, as its logits at padding positions take part in the n-best selection."""

    def step(features):
        inputs = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids", "p_mask") if k in features}
        outputs = model(inputs, training=False)
        if version_2_with_negative:
            out = {k: outputs[k] for k in _V2_RESULT_KEYS}
        else:
            out = {"start_logits": outputs["start_logits"], "end_logits": outputs["end_logits"]}
        out["unique_ids"] = features["unique_ids"]
        return out

    token_keys = inference.TOKEN_FEATURES if version_2_with_negative else ()
    step = inference.make_step(model, step, jit_compile, token_keys=token_keys)
    results = []
    for arrays in inference.inference_batches(step, dataset, strategy, "Predicting", num_features, unit="features",
                                              max_length=max_seq_length):
        for i, unique_id in enumerate(arrays["unique_ids"]):
            if version_2_with_negative:
                results.append(post.RawResultV2(
                    unique_id=int(unique_id),
                    start_top_log_probs=[float(x) for x in arrays["start_top_log_probs"][i]],
                    start_top_index=[int(x) for x in arrays["start_top_index"][i]],
                    end_top_log_probs=[float(x) for x in arrays["end_top_log_probs"][i]],
                    end_top_index=[int(x) for x in arrays["end_top_index"][i]],
                    cls_logits=float(arrays["cls_logits"][i])))
            else:
                results.append(post.RawResult(
                    unique_id=int(unique_id), start_log_prob=[float(x) for x in arrays["start_logits"][i]],
                    end_log_prob=[float(x) for x in arrays["end_logits"][i]]))
    return results


def postprocess_and_score(results, examples, features, dataset, output_dir, version_2_with_negative,
                          n_best_size, max_answer_length, start_n_top, end_n_top, null_score_diff_threshold,
                          score=True):
    """Writes `predictions.json`, `nbest_predictions.json` (v2: `null_odds.json`) in `output_dir`; returns
    the official metrics when `score` (v1: `exact_match`, `f1`; v2: `exact`, `f1`, `HasAns_*`, `NoAns_*`,
    `null_score_diff_threshold`, ...), else `{}`."""
    prediction_file = os.path.join(output_dir, "predictions.json")
    nbest_file = os.path.join(output_dir, "nbest_predictions.json")
    if not version_2_with_negative:
        result_dict = {}
        post.accumulate_predictions_v1(result_dict, examples, features, results, n_best_size, max_answer_length)
        predictions, _ = post.write_predictions_v1(result_dict, examples, features, results, n_best_size,
                                                   prediction_file, nbest_file)
        return post.evaluate_v1(dataset, predictions) if score else {}
    result_dict, cls_dict = {}, {}
    post.accumulate_predictions_v2(result_dict, cls_dict, examples, features, results, n_best_size,
                                   max_answer_length, start_n_top, end_n_top)
    null_odds_file = os.path.join(output_dir, "null_odds.json")
    if score:
        return post.evaluate_v2(result_dict, cls_dict, dataset, examples, features, results, n_best_size,
                                prediction_file, nbest_file, null_odds_file, null_score_diff_threshold)
    post.write_predictions_v2(result_dict, cls_dict, examples, features, results, n_best_size, prediction_file,
                              nbest_file, null_odds_file, null_score_diff_threshold)
    return {}


def write_squad_tflite(model, tflite_file, max_seq_length):
    """`albert_model.tflite` of the original `run_squad_v1.py --export_dir`: int32 `input_ids`, `input_mask`,
    `segment_ids` `[1, max_seq_length]` -> `start_logits`, `end_logits` `[1, max_seq_length]` (float32), the
    float32 LiteRT model of `albert_tf.export.lite.convert`."""
    flatbuffer = lite.convert(model, max_seq_length)
    write_bytes_atomic(tflite_file, flatbuffer)
    logging.info("Wrote %s (%d bytes).", tflite_file, len(flatbuffer))
    return tflite_file


class SquadTask(driver.Task):
    """SQuAD 1.1 (`AlbertSquadV1`) or 2.0 (`AlbertSquadV2`): span features, the official metrics, the
    original's predictions files."""

    def __init__(self, options, runtime):
        super().__init__(options, runtime)
        self.v2 = options.version_2_with_negative
        self._eval = None
        self._scored = False   # `evaluate` scored a checkpoint: `predict` writes the best one's final results

    @functools.cached_property
    def tokenizer(self):
        return FullTokenizer(do_lower_case=self.options.do_lower_case, spm_model_file=self.runtime.spm_model_file)

    def check(self):
        options = self.options
        if not (options.do_train or options.do_predict or options.export_dir):
            raise InputError("At least one of `do_train` or `do_predict` (or `export_dir`) must be True.")
        if options.do_train and not options.train_file:
            raise InputError("If `do_train` is True, then `train_file` must be specified.")
        if options.do_predict and not options.predict_file:
            raise InputError("If `do_predict` is True, then `predict_file` must be specified.")
        if not options.output_dir:
            raise InputError(f"`output_dir` must be set. Received: {options.output_dir!r}.")
        squad.check_lengths(options.max_seq_length, options.max_query_length)
        if options.doc_stride <= 0:
            raise InputError(f"`doc_stride` must be positive. Received: {options.doc_stride}.")
        if not self.runtime.spm_model_file:
            raise InputError("SQuAD needs a SentencePiece model: set `spm_model_file` (the answer alignment works "
                             "on SentencePiece pieces).")
        super().check()

    def build_model(self, init_path=None):
        o, kwargs = self.options, driver.model_kwargs(self.runtime)
        if self.v2:
            model = AlbertSquadV2(self.runtime.config, start_n_top=o.start_n_top, end_n_top=o.end_n_top,
                                  dropout_prob=o.dropout_prob, **kwargs)
        else:
            model = AlbertSquadV1(self.runtime.config, **kwargs)
        if init_path:
            logging.info("Initialising from %s", init_path)
            loaded = init_from_checkpoint(model, init_path, allow_missing_heads=True)
            head = "squad_v2" if self.v2 else "squad_v1"
            if not o.do_train and head in loaded.missing_heads:
                # Evaluating or predicting without training reads the answers off the head: a random one is
                # refused rather than scored.
                with resolve_source(init_path) as source:
                    held = describe_heads(source)
                raise InputError(f"`init_checkpoint={init_path}` has no {head} head, which predicting without "
                                 f"training needs; it holds {held}. Train first (--do_train) or pass a SQuAD "
                                 f"checkpoint of {'run_squad_v2' if self.v2 else 'run_squad_v1'}.")
        return model

    def train_data(self):
        o = self.options
        examples = squad.read_squad_examples(o.train_file, is_training=True)
        steps, warmup = num_train_steps_and_warmup(len(examples), o.train_batch_size, o.num_train_epochs,
                                                   o.warmup_proportion)
        if steps < 1:
            raise InputError(f"{len(examples)} training examples / train_batch_size {o.train_batch_size} * "
                             f"num_train_epochs {o.num_train_epochs} gives {steps} steps: nothing to train.")
        # Pre-shuffle the input, as the original, to avoid a very large shuffle buffer.
        random.Random(12345).shuffle(examples)
        train_file = o.feature_path("train_feature_file")
        if not tf.io.gfile.exists(train_file):
            with squad.FeatureWriter(train_file, is_training=True) as writer:
                stats = squad.convert_examples_to_features(examples, self.tokenizer, o.max_seq_length, o.doc_stride,
                                                           o.max_query_length, True, writer.process_feature,
                                                           o.do_lower_case)
            logging.info("Wrote %d training features to %s", stats.num_features, train_file)
        else:
            logging.info("Reusing training features %s", train_file)
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(examples))
        logging.info("  Batch size = %d", o.train_batch_size)
        logging.info("  Num steps = %d (warm-up %d)", steps, warmup)

        def dataset(input_context, batch_size, start_batch=0):
            return squad.squad_dataset(train_file, o.max_seq_length, True, batch_size, True, is_v2=self.v2,
                                       input_context=input_context, seed=self.runtime.options.random_seed,
                                       start_batch=start_batch)

        return driver.TrainData(steps, warmup, dataset)

    def loss(self, model, features, training):
        outputs = model(features, training=training)
        if self.v2:
            return squad_v2_loss(outputs, features)
        return squad_v1_loss(outputs, features), {}

    def _eval_data(self):
        """`(dataset_json, examples, features, score)` of the predict file, its features written on first use."""
        if self._eval is None:
            o = self.options
            dataset_json = squad.load_squad_json(o.predict_file)
            examples = squad.read_squad_examples(o.predict_file, is_training=False, dataset=dataset_json)
            features = prepare_eval_features(examples, self.tokenizer, o.predict_file,
                                             o.feature_path("predict_feature_file"),
                                             o.feature_path("predict_feature_left_file"), o.max_seq_length,
                                             o.doc_stride, o.max_query_length, o.do_lower_case)
            logging.info("***** Running predictions *****")
            logging.info("  Num orig examples = %d", len(examples))
            logging.info("  Num split examples = %d", len(features))
            logging.info("  Batch size = %d", o.predict_batch_size)
            score = squad.has_answers(dataset_json)
            if not score:
                logging.info("%s has no answers: writing predictions without metrics.", o.predict_file)
            self._eval = (dataset_json, examples, features, score)
        return self._eval

    def _predictions(self, model):
        """Writes the predictions files of `model`; returns the official metrics (`{}` without answers)."""
        dataset_json, examples, features, score = self._eval_data()
        o = self.options
        dataset = predict_dataset(o.feature_path("predict_feature_file"), o.max_seq_length, o.predict_batch_size,
                                  self.v2, len(features), pad_to_full_batches=self.runtime.static_batches)
        results = predict_raw_results(model, dataset, self.runtime.strategy, self.v2, len(features),
                                      jit_compile=self.runtime.options.jit_compile, max_seq_length=o.max_seq_length)
        return postprocess_and_score(results, examples, features, dataset_json, o.output_dir, self.v2,
                                     o.n_best_size, o.max_answer_length, o.start_n_top, o.end_n_top,
                                     o.null_score_diff_threshold, score=score)

    def evaluate(self, model):
        """The predictions files of `model` and the official metrics; None when the predict file has no
        answers (nothing to score)."""
        if not self._eval_data()[3]:
            return None
        self._scored = True
        return self._predictions(model)

    def predict(self, model, step):
        """The final predictions files: those of `model.ckpt-best` after every checkpoint was scored (its
        results appended to `eval_results.txt` with the best step, as the original), else those of the
        inference checkpoint (its results written to `eval_results.txt` when the file has answers)."""
        metrics = self._predictions(model)
        eval_path = os.path.join(self.options.output_dir, driver.EVAL_RESULTS_FILE)
        if not self._scored:
            if metrics:
                for key in sorted(metrics):
                    logging.info("  %s = %s", key, metrics[key])
                write_text_atomic(eval_path, "".join(f"{key} = {metrics[key]}\n" for key in sorted(metrics)))
            return metrics
        previous = tf.io.gfile.GFile(eval_path).read() if tf.io.gfile.exists(eval_path) else ""
        lines = [f"{key} = {metrics[key]}" for key in sorted(metrics)]
        lines.append(f"best perf happened at step: {step}")
        write_text_atomic(eval_path, previous + "\n".join(lines) + "\n")
        logging.info("***** Final Eval results (step %s) *****", step)
        for key in sorted(metrics):
            logging.info("  %s = %s", key, metrics[key])
        return dict(metrics, best_step=step)

    def export(self, model, export_dir):
        o = self.options
        result = {"export_path": export_lib.export_saved_model(
            model, export_dir, spm_model_file=self.runtime.spm_model_file, do_lower_case=o.do_lower_case,
            max_seq_length=o.max_seq_length, max_query_length=o.max_query_length)}
        logging.info("Model exported to %s.", result["export_path"])
        if not self.v2:
            # As the original run_squad_v1.py: also a TFLite model with fixed [1, max_seq_length] inputs.
            result["tflite_file"] = write_squad_tflite(model, os.path.join(export_dir, "albert_model.tflite"),
                                                       o.max_seq_length)
        return result


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadOptions(options_lib.FineTuningOptions):
    """`run_squad`'s task options: the original `run_squad_v1.py` / `run_squad_v2.py` flags (`vocab_file` and
    `use_einsum` are accepted and unused)."""

    train_file: Optional[str] = option(None, "SQuAD json for training. E.g., train-v1.1.json")
    predict_file: Optional[str] = option(None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
    train_feature_file: Optional[str] = option(None, "training feature file (TFRecord), written if it does not "
                                               "exist (default <output_dir>/train.tf_record).")
    predict_feature_file: Optional[str] = option(None, "Location of predict features. If it doesn't exist, it will "
                                                 "be written. If it does exist, it will be read (default "
                                                 "<output_dir>/predict.tf_record).")
    predict_feature_left_file: Optional[str] = option(None, "Location of predict features not passed to TPU. If it "
                                                      "doesn't exist, it will be written. If it does exist, it will "
                                                      "be read. Stored as JSON (the original's pickle is never "
                                                      "loaded; default <output_dir>/predict_left_file.json).")
    doc_stride: int = option(128, "When splitting up a long document into chunks, how much stride to take between "
                             "chunks.")
    max_query_length: int = options_lib.length_option(kind.MAX_QUERY_LENGTH)
    num_train_epochs: float = option(3.0, "Total number of training epochs to perform.")
    warmup_proportion: float = option(0.1, "Proportion of training to perform linear learning rate warmup for. "
                                      "E.g., 0.1 = 10% of training.")
    n_best_size: int = option(20, "The total number of n-best predictions to generate in the "
                              "nbest_predictions.json output file.")
    max_answer_length: int = option(30, "The maximum length of an answer that can be generated. This is needed "
                                    "because the start and end predictions are not conditioned on one another.")
    version_2_with_negative: bool = option(False, "SQuAD 2.0 (questions without answer, XLNet-style head of "
                                           "run_squad_v2.py); else SQuAD 1.1.")
    null_score_diff_threshold: Optional[float] = option(None, "SQuAD 2.0: answer \"\" when the null score diff is "
                                                        ">= this value. Unset: tuned on the predict file for the "
                                                        "best F1, as the original run_squad_v2.py.")
    start_n_top: int = option(5, "beam size for the start positions.")
    end_n_top: int = option(5, "beam size for the end positions.")
    dropout_prob: float = option(0.1, "dropout probability.")
    use_einsum: bool = option(True, "Whether to use tf.einsum or tf.reshape+tf.matmul for dense layers. Must be set "
                              "to False for TFLite compatibility (accepted for the original's flag; the Keras "
                              "layers need no switch).")
    max_seq_length: int = option(384)
    # SQuAD has no separate evaluation: `do_predict` scores every checkpoint, as the original; AdamW trains.
    do_eval: bool = constant(False)
    eval_batch_size: Optional[int] = constant(None)
    optimizer: str = constant("adamw")

    # `do_predict` scores every checkpoint by F1 and keeps them all; without checkpoints it predicts with the
    # initial weights.
    metric_key: ClassVar[str] = "f1"
    keep_best_only: ClassVar[bool] = False
    scores_initial_weights: ClassVar[bool] = False

    def stages(self):
        wanted = (("train", self.do_train), ("evaluate", self.do_predict), ("predict", self.do_predict),
                  ("export", bool(self.export_dir)))
        return tuple(stage for stage, on in wanted if on)

    def feature_path(self, name):
        """The feature file `name` (`train_feature_file`, `predict_feature_file`, `predict_feature_left_file`),
        by default in `output_dir`."""
        defaults = {"train_feature_file": "train.tf_record", "predict_feature_file": "predict.tf_record",
                    "predict_feature_left_file": "predict_left_file.json"}
        return getattr(self, name) or os.path.join(self.output_dir, defaults[name])

    def feature_files(self):
        return [self.feature_path(name) for name in ("train_feature_file", "predict_feature_file",
                                                     "predict_feature_left_file")]


def run_squad(*args, options=None, runtime=None, **kwargs):
    """Fine-tunes and/or predicts SQuAD 1.1 (default) or 2.0 (`version_2_with_negative`), as the original.

    Args:
        *args: `output_dir` (`SquadOptions.positional`), or give it by keyword.
        options: `SquadOptions`, runtime: `RuntimeOptions`; **kwargs: their fields (the flags of `run_squad.py`:
            same names, defaults and meanings), which update `options` / `runtime`.

    Returns:
        dict: `num_train_steps` and `train` (last loop scalars) when training; `eval` (the best checkpoint's
        metrics, with `best_step`) when predicting on a file with answers; `export_path` (and v1 `tflite_file`)
        when exporting.
    """
    stages = driver.run(SquadTask, *options_lib.call_options(SquadOptions, args, kwargs, options, runtime))
    result = {key: value for key, value in stages.items() if key not in ("train", "predict", "eval")}
    if "train" in stages:
        result["num_train_steps"] = stages["train"].pop("num_train_steps")
        result["train"] = stages["train"]
    if stages.get("predict"):
        result["eval"] = stages["predict"]
    return result


RUN_SQUAD_HELP = """Fine-tunes and predicts SQuAD 1.1 or, with `--version_2_with_negative`, SQuAD 2.0 with ALBERT, as the original
`run_squad_v1.py` / `run_squad_v2.py`: it reads the SQuAD JSON `--train_file` and `--predict_file`, the
model's `--albert_config_file` and `--spm_model_file` (default: those that come with `--init_checkpoint`, as
for the other runners), and the initial weights of `--init_checkpoint`; it
writes the feature files (`--train_feature_file`, `--predict_feature_file`, `--predict_feature_left_file`,
default in `--output_dir`), `model.ckpt-<step>` checkpoints in `--output_dir`, and with `--do_predict` scores
every checkpoint (`eval_results.txt`, `best_trial.txt`, `model.ckpt-best`) and writes `predictions.json`,
`nbest_predictions.json` (v2: `null_odds.json`) from the best; `--export_dir` receives a SavedModel (v1 also
`albert_model.tflite`); checkpoints written by the original code in `--output_dir` are read as well.

SQuAD 2.0 uses the XLNet-style head with `--start_n_top`, `--end_n_top`, `--dropout_prob` and the null-score
threshold. Example (the README's SQuAD command):

    python -m albert_tf.run_squad --albert_config_file=albert_base/albert_config.json \\
      --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base/model.ckpt-best \\
      --train_file=train-v1.1.json --predict_file=dev-v1.1.json --train_feature_file=train.tf_record \\
      --predict_feature_file=dev.tf_record --predict_feature_left_file=dev_left_file.json \\
      --output_dir=squad_out --do_train --do_predict --max_seq_length=384 --doc_stride=128 \\
      --max_query_length=64 --train_batch_size=48 --learning_rate=5e-5 --num_train_epochs=2.0 \\
      --warmup_proportion=.1 --n_best_size=20 --max_answer_length=30
"""


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadV2Options(SquadOptions):
    """`run_squad_v2`'s options: `run_squad`'s, SQuAD 2.0 by default (the original `run_squad_v2.py`)."""

    version_2_with_negative: bool = option(True)


def _run(options, runtime):
    run_squad(options=options, runtime=runtime)


# `run_squad` takes both versions (`--version_2_with_negative`); `run_squad_v1` and `run_squad_v2` are the
# original's two scripts, each with its version's default.
RUN_SQUAD = options_lib.Command(name="run_squad", help_text=RUN_SQUAD_HELP,
                                options=(SquadOptions, options_lib.RuntimeOptions), call=_run)
RUN_SQUAD_V1 = dataclasses.replace(RUN_SQUAD, name="run_squad_v1",
                                   help_text="SQuAD 1.1 (the original run_squad_v1.py). " + RUN_SQUAD_HELP)
RUN_SQUAD_V2 = dataclasses.replace(RUN_SQUAD, name="run_squad_v2", options=(SquadV2Options, options_lib.RuntimeOptions),
                                   help_text="SQuAD 2.0 (the original run_squad_v2.py). " + RUN_SQUAD_HELP)
