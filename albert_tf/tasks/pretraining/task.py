"""MLM + SOP pretraining: the pretraining task of the driver and the library side of `run_pretraining.py`.

`run_pretraining(...)` takes the original flags as arguments (plus the TF2 runtime ones), trains
`AlbertPretrainer` with the original LAMB/AdamW and schedule through `albert_tf.training.driver` (the custom
loop `loop.run_training`), and with `do_eval` evaluates every checkpoint (ours or the original's) on
`max_eval_steps` batches: `masked_lm_accuracy`, `masked_lm_loss`, `sentence_order_accuracy`,
`sentence_order_loss` (and `loss`, `global_step`) in `eval_results.txt`, the best `masked_lm_accuracy`
checkpoint copied to `model.ckpt-best`.
"""

import dataclasses
from typing import ClassVar

import keras
from absl import logging

from albert_tf import checkpoints
from albert_tf import options as options_lib
from albert_tf.tasks.pretraining.inputs import check_record_lengths, expand_input_files, pretraining_dataset
from albert_tf.errors import InputError
from albert_tf.options import option
from albert_tf.tasks.pretraining.model import AlbertPretrainer, pretraining_loss, pretraining_terms
from albert_tf.training import driver, inference, loop


def pretraining_loss_fn(model, features, training, sentence_loss_weight=1.0):
    """`loop.run_training` loss: the original `total_loss` and its two parts (`model_fn` of `run_pretraining.py`);
    `sentence_loss_weight` as `pretraining_loss`."""
    total_loss, masked_lm_loss, sentence_order_loss = pretraining_loss(model(features, training=training),
                                                                       features,
                                                                       sentence_loss_weight=sentence_loss_weight)
    return total_loss, {"masked_lm_loss": masked_lm_loss, "sentence_order_loss": sentence_order_loss}


def pretraining_metrics(model, dataset, num_steps, sentence_loss_weight=1.0, jit_compile=False):
    """The original `metric_fn` over `num_steps` batches of `dataset` (streaming, as `tf.metrics`); `jit_compile`
    compiles the step with XLA.

    Returns a dict of floats: `masked_lm_accuracy` and `masked_lm_loss` (weighted by `masked_lm_weights`),
    `sentence_order_accuracy`, `sentence_order_loss` (per-example means) and `loss` (mean of the batches'
    total loss, as the Estimator's `loss`, with `sentence_loss_weight` as `pretraining_loss`).
    """

    def batch_sums(features):
        ops = keras.ops
        outputs = model(features, training=False)
        terms = pretraining_terms(outputs, features)
        total_loss, _, _ = pretraining_loss(outputs, features, terms, sentence_loss_weight)
        weights, labels = terms["mlm_weights"], terms["sop_labels"]
        correct = ops.cast(ops.equal(ops.cast(ops.argmax(terms["mlm_log_probs"], axis=-1), "int32"),
                                     ops.cast(terms["mlm_ids"], "int32")), "float32")
        sop_correct = ops.cast(ops.equal(ops.cast(ops.argmax(terms["sop_log_probs"], axis=-1), "int32"),
                                         ops.cast(labels, "int32")), "float32")
        return {"mlm_correct": ops.sum(weights * correct),
                "mlm_nll": ops.sum(weights * terms["mlm_nll"]), "mlm_weight": ops.sum(weights),
                "sop_correct": ops.sum(sop_correct),
                "sop_nll": ops.sum(terms["sop_nll"]), "sop_count": ops.cast(ops.size(labels), "float32"),
                "loss": total_loss}

    step = inference.make_step(model, batch_sums, jit_compile)
    sums, batches = {}, 0
    for features in _batches(dataset.take(num_steps)):
        for key, value in step(features).items():
            sums[key] = sums.get(key, 0.0) + float(value)
        batches += 1
    if not batches:
        raise InputError("The eval dataset produced no batch.")

    def ratio(a, b):
        return sums[a] / sums[b] if sums[b] else 0.0

    return {"masked_lm_accuracy": ratio("mlm_correct", "mlm_weight"),
            "masked_lm_loss": ratio("mlm_nll", "mlm_weight"),
            "sentence_order_accuracy": ratio("sop_correct", "sop_count"),
            "sentence_order_loss": ratio("sop_nll", "sop_count"),
            "loss": sums["loss"] / batches}


def _batches(dataset):
    """The batches of `dataset`: tensors on TensorFlow, NumPy arrays elsewhere (a jitted step's input)."""
    return iter(dataset) if keras.backend.backend() == "tensorflow" else dataset.as_numpy_iterator()


def _init_model(model, init_checkpoint, init_from_group0):
    if init_from_group0:
        mapping = checkpoints.init_groups_from_group0(model, init_checkpoint)
        logging.info("Initialised %d variables from %s (groups from group_0).", len(mapping), init_checkpoint)
    else:
        result = checkpoints.init_from_checkpoint(model, init_checkpoint, allow_missing_heads=True)
        logging.info("Initialised %s from %s (%s).", ", ".join(result.loaded), init_checkpoint, result.format)


class PretrainingTask(driver.Task):
    """MLM + SOP pretraining on the TFRecords of `create_pretraining_data.py`, scored by `masked_lm_accuracy`."""

    def __init__(self, options, runtime):
        super().__init__(options, runtime)
        self.input_files = expand_input_files(options.input_file) if options.input_file else []
        self._eval_dataset = None

    def check(self):
        options = self.options
        if not options.do_train and not options.do_eval:
            raise InputError("At least one of `do_train` or `do_eval` must be True.")
        super().check()
        logging.info("*** Input Files ***")
        for path in self.input_files:
            logging.info("  %s", path)
        check_record_lengths(self.input_files, options.max_seq_length, options.max_predictions_per_seq)

    def build_model(self, init_path=None):
        model = AlbertPretrainer(self.runtime.config, **driver.model_kwargs(self.runtime))
        if init_path:
            _init_model(model, init_path, self.options.init_from_group0)
        return model

    def train_data(self):
        o = self.options
        if o.init_checkpoint and loop.list_checkpoints(o.output_dir):
            logging.info("%s has checkpoints: resuming, `init_checkpoint` not read.", o.output_dir)
        logging.info("***** Running training *****")
        if o.train_batch_size:
            logging.info("  Batch size = %d", o.train_batch_size)

        def dataset(input_context, batch_size, start_batch=0):
            return pretraining_dataset(self.input_files, o.max_seq_length, o.max_predictions_per_seq, batch_size,
                                       is_training=True, input_context=input_context,
                                       masked_lm_budget=o.masked_lm_budget, seed=self.runtime.options.random_seed,
                                       start_batch=start_batch)

        return driver.TrainData(o.num_train_steps, o.num_warmup_steps, dataset, files=tuple(self.input_files))

    def loss(self, model, features, training):
        return pretraining_loss_fn(model, features, training, self.options.sentence_loss_weight)

    def evaluate(self, model):
        o = self.options
        if self._eval_dataset is None:
            logging.info("***** Running evaluation *****")
            logging.info("  Batch size = %d", o.eval_batch_size)
            self._eval_dataset = pretraining_dataset(self.input_files, o.max_seq_length, o.max_predictions_per_seq,
                                                     o.eval_batch_size, is_training=False,
                                                     masked_lm_budget=o.masked_lm_budget)
        return pretraining_metrics(model, self._eval_dataset, o.max_eval_steps, o.sentence_loss_weight,
                                   jit_compile=self.runtime.options.jit_compile)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingOptions(options_lib.TaskOptions, options_lib.MaskedLmOptions):
    """`run_pretraining`'s task options: the original `run_pretraining.py` flags, and `sentence_loss_weight`.

    `max_seq_length` and `max_predictions_per_seq` keep the original runner's help texts (they read the records
    that `albert-create-pretraining-data` wrote with the same options)."""

    positional: ClassVar[tuple] = ("albert_config_file", "input_file", "output_dir")

    albert_config_file: str = option()
    input_file: str = option(help_text="Input TF example files (can be a glob or comma separated).")
    max_seq_length: int = option(512, "The maximum total input sequence length after WordPiece tokenization. "
                                 "Sequences longer than this will be truncated, and sequences shorter than this "
                                 "will be padded. Must match data generation.")
    max_predictions_per_seq: int = option(20, "Maximum number of masked LM predictions per sequence. Must match "
                                          "data generation.")
    optimizer: str = option("lamb")
    learning_rate: float = option(0.00176, "The initial learning rate.")
    poly_power: float = option(1.0, "The power of poly decay.")
    num_train_steps: int = option(125000, "Number of training steps.")
    num_warmup_steps: int = option(3125, "Number of warmup steps.")
    start_warmup_step: int = option(0, "The starting step of warmup.")
    keep_checkpoint_max: int = option(5, "How many checkpoints to keep.")
    max_eval_steps: int = option(100, "Maximum number of eval steps.")
    init_from_group0: bool = option(False, "Whether to initialize parameters of other groups from group 0")
    masked_lm_budget: float = option(0, "If >0, the ratio of masked ngrams to unmasked ngrams. Default 0, for "
                                     "offline masking")
    # Scales the sentence-level loss: 1.0 is the original's MLM + SOP, 0.0 MLM only (the paper's "none" row of
    # Table 5, as `benchmarks/ablations.py` runs it). A library option, not an original flag.
    sentence_loss_weight: float = option(1.0, "The weight of the sentence-level loss.", flag=False)
    # The original `run_pretraining.py`'s defaults.
    do_train: bool = option(True)
    train_batch_size: int = option(4096)
    eval_batch_size: int = option(64)
    save_checkpoints_steps: int = option(5000)

    # Pretraining has no prediction stage nor export, and no asset source: the config file is required.
    do_predict = False
    export_dir = None
    asset_source = None
    # Every checkpoint is kept and scored by the masked LM accuracy; without one, nothing is scored (as the
    # original, the initial weights are not).
    metric_key: ClassVar[str] = "masked_lm_accuracy"
    keep_best_only: ClassVar[bool] = False
    scores_initial_weights: ClassVar[bool] = False

    @property
    def checked_init_path(self):
        return self.init_checkpoint if self.do_train else None

    def train_options(self, runtime):
        return dict(super().train_options(runtime), keep_checkpoint_max=self.keep_checkpoint_max,
                    poly_power=self.poly_power, start_warmup_step=self.start_warmup_step)


def run_pretraining(*args, options=None, runtime=None, **kwargs):
    """Pretrains ALBERT (MLM + SOP) as the original `run_pretraining.py`.

    Args:
        *args: `albert_config_file, input_file, output_dir` (`PretrainingOptions.positional`), or by keyword.
        options: `PretrainingOptions`, runtime: `RuntimeOptions`; **kwargs: their fields (the flags of
            `run_pretraining.py`: same names, defaults and meanings; `seed` is also accepted for
            `random_seed`), which update `options` / `runtime`.

    `sentence_loss_weight` (no flag) scales the sentence-level term of the training loss. The sentence-level
    task is what the records hold: SOP pairs, or BERT's NSP pairs from a writer run with
    `random_next_sentence=True`; the head and the labels are the same. `train_batch_size` is the global batch:
    it must divide by replicas x `gradient_accumulation_steps`. A job restarted with the same `output_dir`
    resumes from its latest checkpoint; `init_checkpoint` (ours, or Google's TF1 checkpoint / release / TF-Hub
    module) is read only when `output_dir` has none.

    Returns:
        dict with `train` (the loop's final step and losses, or None) and `eval` (the best checkpoint's
        metrics, or None).
    """
    if "seed" in kwargs:
        kwargs["random_seed"] = kwargs.pop("seed")    # the keyword's earlier name in this function
    stages = driver.run(PretrainingTask, *options_lib.call_options(PretrainingOptions, args, kwargs, options,
                                                                   runtime))
    result = {"train": stages.get("train"), "eval": stages.get("eval")}
    if result["train"] is not None:
        result["train"].pop("num_train_steps")
    if result["eval"] is not None:
        result["eval"].pop("best_step")
    return result


RUN_PRETRAINING_HELP = """Pretrains ALBERT with the masked-LM and sentence-order losses, as the original `run_pretraining.py`: it reads
the TFRecords of `create_pretraining_data.py` (`--input_file`), the model's `--albert_config_file` and
optionally the initial weights of `--init_checkpoint`; `--do_train` writes `model.ckpt-<step>` checkpoints and
TensorBoard summaries in `--output_dir` (a restarted job resumes from the latest), and `--do_eval` scores
every checkpoint there (ours or the original's) and writes `eval_results.txt`, `best_trial.txt` and
`model.ckpt-best`.

Example (the README command, on a v3-512 TPU pod; any strategy works the same way):

    python -m albert_tf.run_pretraining --input_file=data/*.tfrecord --output_dir=out \\
      --albert_config_file=albert_base/albert_config.json --do_train --do_eval \\
      --train_batch_size=4096 --max_seq_length=512 --max_predictions_per_seq=20 --optimizer=lamb \\
      --learning_rate=0.00176 --num_train_steps=125000 --num_warmup_steps=3125 --save_checkpoints_steps=5000 \\
      --use_tpu --tpu_name=my-tpu
"""

RUN_PRETRAINING = options_lib.Command(name="run_pretraining", help_text=RUN_PRETRAINING_HELP,
                                      options=(PretrainingOptions, options_lib.RuntimeOptions),
                                      call=lambda options, runtime: run_pretraining(options=options, runtime=runtime))
