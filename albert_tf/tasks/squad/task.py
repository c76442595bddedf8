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
import os
import random
from typing import Optional

import tensorflow as tf
from absl import logging

from albert_tf.export import saved_model as export_lib
from albert_tf.export import lite
from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.tasks.squad import data as squad
from albert_tf.tasks.squad import postprocess as post
from albert_tf.errors import InputError
from albert_tf.fileio import write_bytes_atomic, write_text_atomic
from albert_tf.tasks.squad.model import AlbertSquadV1, AlbertSquadV2, squad_v1_loss, squad_v2_loss
from albert_tf.text.tokenization import FullTokenizer
from albert_tf.training import driver, loop
from albert_tf.tasks.squad import kind
from albert_tf.training import options as options_lib
from albert_tf.training.options import constant, option

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


def predict_raw_results(model, dataset, strategy, version_2_with_negative, num_features=None, jit_compile=False):
    """Runs `model(training=False)` over the predict dataset; returns `RawResult`s (v1) or `RawResultV2`s.
    `jit_compile` compiles the step with XLA."""

    @tf.function(reduce_retracing=True, jit_compile=jit_compile)
    def step(features):
        inputs = {k: features[k] for k in ("input_ids", "input_mask", "segment_ids", "p_mask") if k in features}
        outputs = model(inputs, training=False)
        if version_2_with_negative:
            out = {k: outputs[k] for k in _V2_RESULT_KEYS}
        else:
            out = {"start_logits": outputs["start_logits"], "end_logits": outputs["end_logits"]}
        out["unique_ids"] = features["unique_ids"]
        return out

    results = []
    for arrays in driver.inference_batches(step, dataset, strategy, "Predicting", num_features, unit="features"):
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


def export_tflite(model, tflite_file, max_seq_length):
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

    name = "squad"
    metric_key = "f1"
    delete_non_best = False

    def __init__(self, options, tokenizer, strategy, spm_model_file=None, seed=None):
        """`options`: `SquadOptions` (the feature files default to `output_dir/{train,predict}.tf_record` and
        `output_dir/predict_left_file.json`); `spm_model_file`: the resolved SentencePiece model."""
        out = options.output_dir
        self.options, self.output_dir, self.tokenizer, self.strategy = options, out, tokenizer, strategy
        self.v2, self.do_lower_case = options.version_2_with_negative, options.do_lower_case
        self.max_seq_length, self.max_query_length = options.max_seq_length, options.max_query_length
        self.train_feature_file = options.train_feature_file or os.path.join(out, "train.tf_record")
        self.predict_feature_file = options.predict_feature_file or os.path.join(out, "predict.tf_record")
        self.predict_feature_left_file = (options.predict_feature_left_file
                                          or os.path.join(out, "predict_left_file.json"))
        self.spm_model_file, self.seed = spm_model_file, seed
        self.score = False

    spm_missing_message = ("SQuAD needs a SentencePiece model: set `spm_model_file` (the answer alignment works on "
                           "SentencePiece pieces).")

    @classmethod
    def validate(cls, options):
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

    @classmethod
    def from_options(cls, options, runtime, strategy, spm_model_file):
        tokenizer = FullTokenizer(do_lower_case=options.do_lower_case, spm_model_file=spm_model_file)
        return cls(options, tokenizer, strategy, spm_model_file=spm_model_file, seed=runtime.random_seed)

    def build_model(self, config, **model_kwargs):
        if self.v2:
            return AlbertSquadV2(config, start_n_top=self.options.start_n_top, end_n_top=self.options.end_n_top,
                                 dropout_prob=self.options.dropout_prob, **model_kwargs)
        return AlbertSquadV1(config, **model_kwargs)

    def feature_files(self):
        return [self.train_feature_file, self.predict_feature_file, self.predict_feature_left_file]

    def prepare_training(self):
        o = self.options
        examples = squad.read_squad_examples(o.train_file, is_training=True)
        steps, warmup = num_train_steps_and_warmup(len(examples), o.train_batch_size, o.num_train_epochs,
                                                   o.warmup_proportion)
        if steps < 1:
            raise InputError(f"{len(examples)} training examples / train_batch_size {o.train_batch_size} * "
                             f"num_train_epochs {o.num_train_epochs} gives {steps} steps: nothing to train.")
        # Pre-shuffle the input, as the original, to avoid a very large shuffle buffer.
        random.Random(12345).shuffle(examples)
        if not tf.io.gfile.exists(self.train_feature_file):
            with squad.FeatureWriter(self.train_feature_file, is_training=True) as writer:
                stats = squad.convert_examples_to_features(examples, self.tokenizer, self.max_seq_length,
                                                           o.doc_stride, self.max_query_length, True,
                                                           writer.process_feature, self.do_lower_case)
            logging.info("Wrote %d training features to %s", stats.num_features, self.train_feature_file)
        else:
            logging.info("Reusing training features %s", self.train_feature_file)
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(examples))
        logging.info("  Batch size = %d", o.train_batch_size)
        logging.info("  Num steps = %d (warm-up %d)", steps, warmup)
        return steps, warmup

    def train_dataset(self, input_context, batch_size, start_batch=0):
        return squad.squad_dataset(self.train_feature_file, self.max_seq_length, True, batch_size, True,
                                   is_v2=self.v2, input_context=input_context, seed=self.seed,
                                   start_batch=start_batch)

    def loss(self, model, features, training):
        outputs = model(features, training=training)
        if self.v2:
            return squad_v2_loss(outputs, features)
        return squad_v1_loss(outputs, features), {}

    def prepare_evaluation(self):
        self.dataset_json = squad.load_squad_json(self.options.predict_file)
        self.score = squad.has_answers(self.dataset_json)
        self.examples = squad.read_squad_examples(self.options.predict_file, is_training=False,
                                                  dataset=self.dataset_json)
        self.features = prepare_eval_features(self.examples, self.tokenizer, self.options.predict_file,
                                              self.predict_feature_file, self.predict_feature_left_file,
                                              self.max_seq_length, self.options.doc_stride, self.max_query_length,
                                              self.do_lower_case)
        logging.info("***** Running predictions *****")
        logging.info("  Num orig examples = %d", len(self.examples))
        logging.info("  Num split examples = %d", len(self.features))
        logging.info("  Batch size = %d", self.options.predict_batch_size)
        if not self.score:
            logging.info("%s has no answers: writing predictions without metrics.", self.options.predict_file)

    def evaluate(self, model):
        """Predictions files of `model` on the predict file, and the official metrics when it has answers."""
        dataset = predict_dataset(self.predict_feature_file, self.max_seq_length, self.options.predict_batch_size,
                                  self.v2, len(self.features),
                                  pad_to_full_batches=self.static_batches())
        results = predict_raw_results(model, dataset, self.strategy, self.v2, len(self.features),
                                      jit_compile=self.jit_compile)
        o = self.options
        return postprocess_and_score(results, self.examples, self.features, self.dataset_json, self.output_dir,
                                     self.v2, o.n_best_size, o.max_answer_length, o.start_n_top, o.end_n_top,
                                     o.null_score_diff_threshold, score=self.score)

    def predict(self, model, checkpoint, step):
        logging.info("Predicting with %s", checkpoint)
        metrics = self.evaluate(model)
        if metrics:
            for key in sorted(metrics):
                logging.info("  %s = %s", key, metrics[key])
            write_text_atomic(os.path.join(self.output_dir, driver.EVAL_RESULTS_FILE),
                              "".join(f"{key} = {metrics[key]}\n" for key in sorted(metrics)))
        return metrics

    def prediction_stage(self, model, output_dir, init_path):
        """The original's `do_predict`: with answers, every checkpoint is scored (best by F1 to
        `model.ckpt-best`) and the final predictions and results come from `model.ckpt-best`; else the
        predictions of the best (or latest) checkpoint."""
        self.prepare_evaluation()
        if not (self.score and loop.list_checkpoints(output_dir)):
            return super().prediction_stage(model, output_dir, init_path)
        best_step, _ = loop.evaluate_checkpoints(model, output_dir, self.evaluate, self.metric_key, output_dir)
        restore_checkpoint(model, os.path.join(output_dir, loop.BEST_CHECKPOINT_NAME))
        metrics = self.evaluate(model)
        eval_path = os.path.join(output_dir, driver.EVAL_RESULTS_FILE)
        previous = tf.io.gfile.GFile(eval_path).read() if tf.io.gfile.exists(eval_path) else ""
        lines = [f"{key} = {metrics[key]}" for key in sorted(metrics)]
        lines.append(f"best perf happened at step: {best_step}")
        write_text_atomic(eval_path, previous + "\n".join(lines) + "\n")
        logging.info("***** Final Eval results (step %d) *****", best_step)
        for key in sorted(metrics):
            logging.info("  %s = %s", key, metrics[key])
        return dict(metrics, best_step=best_step)

    def results(self, stages):
        result = {key: value for key, value in stages.items() if key not in ("train", "predict")}
        if "train" in stages:
            result["num_train_steps"] = stages["train"].pop("num_train_steps")
            result["train"] = stages["train"]
        if stages.get("predict"):
            result["eval"] = stages["predict"]
        return result

    def export(self, model, export_dir):
        result = {"export_path": export_lib.export_saved_model(
            model, export_dir, spm_model_file=self.spm_model_file, do_lower_case=self.do_lower_case,
            max_seq_length=self.max_seq_length, max_query_length=self.max_query_length)}
        logging.info("Model exported to %s.", result["export_path"])
        if not self.v2:
            # As the original run_squad_v1.py: also a TFLite model with fixed [1, max_seq_length] inputs.
            result["tflite_file"] = export_tflite(model, os.path.join(export_dir, "albert_model.tflite"),
                                                  self.max_seq_length)
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

    @property
    def evaluates_checkpoints(self):
        return self.do_predict


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
    return driver.run(SquadTask, *options_lib.call_options(SquadOptions, args, kwargs, options, runtime))
