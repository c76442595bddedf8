"""One driver for every task: train, evaluate every checkpoint and keep the best, predict, export.

In the spirit of Model Garden's `base_task.Task` + `train_lib.run_experiment`: a task module subclasses
`Task` and says only what differs (its model, training data and loss, how it scores a model on its
evaluation data, what its predictions files are, how it exports); `train`, `evaluate`,
`restore_for_inference` and `run_stages` do the rest the same way for every task (pretraining, GLUE, SQuAD, RACE),
as the original `run_pretraining.py`, `run_classifier.py`, `run_squad_v*.py` and `run_race.py` mains do.
`run(task_class, options, runtime)` is the whole run from typed options (`albert_tf.training.options`):
the checks, the runtime (`prepare_runtime`), the model, then `run_stages`'s stages:

* `do_train`: initial weights from `init_checkpoint` / the TF-Hub module unless `output_dir` already has a
  `model.ckpt-<step>` (then training resumes), the original optimizer and schedule, a checkpoint every
  `save_checkpoints_steps`, every checkpoint kept (the original's `keep_checkpoint_max=0`) for evaluation;
* `do_eval`: every `model.ckpt-<step>` in `output_dir` is scored in step order, the best copied to
  `model.ckpt-best`, `eval_results.txt` and `best_trial.txt` written as the original (`loop.evaluate_checkpoints`);
  without checkpoints, the initial weights are scored;
* `do_predict`: the task's predictions from `model.ckpt-best` (else the latest checkpoint, else the initial
  weights);
* `export_dir`: a SavedModel of the same weights.

Checkpoints in `output_dir` may be our own (object-based) or written by the original code (TF1 names):
`albert_tf.checkpoints.restore.restore_checkpoint` reads either. Bad inputs (a SentencePiece model whose
size differs from the config's `vocab_size`, a damaged checkpoint) are found by `resolve_sources` and
`check_checkpoints` before anything is written to `output_dir`.
"""

import abc
import contextlib
import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.text import tokenization
from albert_tf.checkpoints import init_from_checkpoint, resolve_source
from albert_tf.checkpoints.restore import check_readable, restore_checkpoint
from albert_tf.checkpoints.sources import FOREIGN_KINDS
from albert_tf import config as config_lib
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError
from albert_tf.fileio import write_text_atomic
from albert_tf.training import distribution, loop, optimization
from albert_tf.training import options as options_lib

EVAL_RESULTS_FILE = loop.EVAL_RESULTS_FILE
BEST_TRIAL_FILE = "best_trial.txt"


class Task(abc.ABC):
    """What one task says to the driver. Subclasses set the attributes and implement the abstract methods.

    Attributes:
        name: str, shown in logs.
        metric_key: str, the evaluation metric that picks `model.ckpt-best` (higher is better).
        checkpoint_iterator: bool, save the training input position in the checkpoints (on one device, where
            `tf.train.Checkpoint` can save a `tf.data` iterator: a resumed run, seeded or not, reads on from
            the exact input position).
        delete_non_best: bool, after evaluation remove the checkpoints other than the best and the latest.
        seed: int or None, the run's `random_seed`. A seeded task reads a positional training input
            (`albert_tf.data.record_stream`): `train_dataset` then takes `start_batch`, so a resumed run goes on
            where the checkpoint was written under every strategy.
        strategy: the `tf.distribute.Strategy` the task runs under (None: the default one).
        jit_compile: bool, the eval/predict steps are compiled with XLA too (`RuntimeOptions.jit_compile`; `run`
            sets it from the runtime before the model is built), on batches of one static shape.
    """

    name = "task"
    metric_key = None
    checkpoint_iterator = True
    delete_non_best = True
    seed = None
    strategy = None
    jit_compile = False

    @abc.abstractmethod
    def build_model(self, config, **model_kwargs):
        """The task's Keras model for `config` (built under the strategy's scope by the driver)."""

    def init_weights(self, model, path):
        """Initial weights from any checkpoint source (pretraining checkpoints lack the task head)."""
        logging.info("Initialising from %s", path)
        return init_from_checkpoint(model, path, allow_missing_heads=True)

    @abc.abstractmethod
    def prepare_training(self):
        """Writes (or reuses) the training features; returns `(num_train_steps, num_warmup_steps)`."""

    @abc.abstractmethod
    def train_dataset(self, input_context, batch_size):
        """The repeated, shuffled training `tf.data.Dataset` of one input pipeline, per-replica `batch_size`.

        A seeded task (`seed` set) also takes `start_batch=0`: the same dataset without its first `start_batch`
        batches.
        """

    @abc.abstractmethod
    def loss(self, model, features, training):
        """`(mean loss over the batch, {name: scalar to log})`."""

    @abc.abstractmethod
    def evaluate(self, model):
        """Scores `model` on the evaluation data; returns `{metric: value}` with `metric_key`."""

    def prepare_evaluation(self):
        """Writes (or reuses) the evaluation features, before the first checkpoint is scored."""

    def feature_files(self):
        """Paths of the feature caches the task writes (`removed_on_failure` removes those a failed run made)."""
        return []

    def predict(self, model, checkpoint, step):
        """Writes the task's predictions files for `model` (restored from `checkpoint`, `step` or None).

        Optional: a task without a prediction stage (pretraining) keeps this refusal.
        """
        raise InputError(f"The {self.name} task has no prediction stage (`do_predict`).")

    def export(self, model, export_dir):
        """Exports `model`; returns a dict of what was written (`export_path`, ...).

        Optional: a task without a serving export keeps this refusal.
        """
        raise InputError(f"The {self.name} task has no SavedModel export (`export_dir`).")

    # --- what `run` asks of a task class, and the stages a task may run its own way ---------------------

    # A run without a SentencePiece model is an error with this message (None: a WordPiece vocab may do).
    spm_missing_message = None

    @classmethod
    def validate(cls, options):
        """Checks the task's options alone, before any file is read; raises `InputError`. Optional."""

    @classmethod
    def check_inputs(cls, options, config, spm_model_file):
        """Checks, before any work, what only this task reads (data, vocabulary); raises `InputError`. Optional."""

    @classmethod
    def from_options(cls, options, runtime, strategy, spm_model_file):
        """The task of `options` (its dataclass of `albert_tf.training.options`) under `strategy`.

        Optional: a task built by its own code and given to `run_stages` keeps this refusal.
        """
        raise InputError(f"The {cls.__name__} task is not built from options: build it and call `driver.run_stages`.")

    def static_batches(self):
        """Whether every eval/predict batch has the same static shape (the last one padded with examples that
        weigh nothing): on a TPU, whose compiled programs take fixed shapes, and under XLA, which compiles once
        per shape."""
        return static_batches(self.strategy, self.jit_compile)

    def evaluation_stage(self, model, output_dir, init_path):
        """`do_eval`: every checkpoint scored and the best kept (`evaluate`)."""
        return evaluate(self, model, output_dir, init_path)

    def prediction_stage(self, model, output_dir, init_path):
        """`do_predict`: the predictions of the inference checkpoint (`restore_for_inference`), left in `model`."""
        checkpoint, step = restore_for_inference(self, model, output_dir, init_path)
        return self.predict(model, checkpoint, step)

    def results(self, stages):
        """What `run` returns, from the dict of `run_stages`'s stages (default: that dict)."""
        return stages


def results_after_training(stages):
    """`stages` without `train`, the evaluation's `best_step` 0 when the initial weights were scored (no
    checkpoint): the result of the RACE and NER tasks."""
    result = {key: value for key, value in stages.items() if key != "train"}
    if "eval" in result and result["eval"]["best_step"] is None:
        result["eval"]["best_step"] = 0      # the initial weights were scored
    return result


# --- sources, runtime and checks -------------------------------------------------------------------------


@contextlib.contextmanager
def removed_on_failure(paths):
    """Removes the files of `paths` that did not exist on entry when the block raises (or is interrupted).

    A run that fails after writing a feature cache leaves nothing new behind, so the next run never mistakes
    a cache made for a failed run (other flags, other data) for its own; a run that succeeds keeps them.
    """
    paths = [path for path in paths if path]
    existed = {path for path in paths if tf.io.gfile.exists(path)}
    try:
        yield
    except BaseException:
        for path in paths:
            if path not in existed and tf.io.gfile.exists(path):
                logging.info("Removing %s, written by this failed run.", path)
                tf.io.gfile.remove(path)
        raise


def resolve_sources(stack, albert_config_file, spm_model_file, asset_source=None, spm_missing_message=None):
    """The config, SentencePiece model and config path of a run, taking what is missing from `asset_source`.

    Args:
        stack: `contextlib.ExitStack` that keeps a resolved source (possibly an extracted archive) alive.
        albert_config_file: str or None, `albert_config.json`; None takes the asset source's.
        spm_model_file: str or None; None or "from_tf_hub" takes the asset source's when it has one.
        asset_source: str or None, a TF-Hub module, release directory or archive (`resolve_source`).
        spm_missing_message: str or None; when set, a missing SentencePiece model is an error with it.

    Returns:
        `(AlbertConfig, spm_model_file or None, albert_config_file)`.
    """
    if spm_model_file == "from_tf_hub" and not asset_source:
        raise InputError("`spm_model_file=from_tf_hub` needs `albert_hub_module_handle`.")
    needs_spm = not spm_model_file or spm_model_file == "from_tf_hub"
    if asset_source and (not albert_config_file or needs_spm):
        source = stack.enter_context(resolve_source(asset_source))
        if not albert_config_file:
            if not source.config_file:
                raise InputError(f"{asset_source!r} has no `albert_config.json` asset: pass `albert_config_file`.")
            albert_config_file = source.config_file
        if needs_spm:
            if source.spm_model_file:
                spm_model_file = source.spm_model_file
            elif spm_model_file == "from_tf_hub":
                raise InputError(f"`albert_hub_module_handle={asset_source!r}` has no SentencePiece model asset: "
                                 "pass `spm_model_file`.")
    if not albert_config_file:
        raise InputError("`albert_config_file` must be set (or `albert_hub_module_handle` / a release directory "
                         "with a config asset).")
    if not tf.io.gfile.exists(albert_config_file):
        raise InputError(f"`albert_config_file` {albert_config_file!r} not found.")
    if not spm_model_file and spm_missing_message:
        raise InputError(spm_missing_message)
    if spm_model_file and not tf.io.gfile.exists(spm_model_file):
        raise InputError(f"`spm_model_file` {spm_model_file!r} not found.")
    config = AlbertConfig.from_json_file(albert_config_file)
    if spm_model_file:
        check_vocab_size(spm_model_file, config, albert_config_file)
    return config, spm_model_file or None, albert_config_file


def check_vocab_size(spm_model_file, config, albert_config_file):
    """Raises `InputError` naming both files unless the SentencePiece model has `config.vocab_size` pieces."""
    tokenization.check_spm_vocab_size(spm_model_file, config.vocab_size, spm_model_file, albert_config_file)


def check_max_seq_length(max_seq_length, config, albert_config_file=None):
    """Raises `InputError` unless `max_seq_length` fits `config.max_position_embeddings`."""
    config_lib.check_max_seq_length(max_seq_length, config.max_position_embeddings, albert_config_file)


def prepare_runtime(runtime=None, **fields):
    """Seeds the run (None: unseeded, as the original), sets the dtype policy (None leaves it as it is) and
    returns the `tf.distribute` strategy. `num_tpu_cores` is checked against the TPU only with `use_tpu`.

    Args:
        runtime: `RuntimeOptions`, or None to build one from `fields` (`random_seed=3`, ...).
    """
    runtime = runtime if runtime is not None else options_lib.RuntimeOptions(**fields)
    if runtime.random_seed is not None:
        # Python, NumPy, TensorFlow and Keras generators: weight initialisation, dropout and input shuffles.
        tf.keras.utils.set_random_seed(int(runtime.random_seed))
    if runtime.mixed_precision:
        distribution.set_mixed_precision(runtime.mixed_precision)
    strategy = "tpu" if runtime.use_tpu and runtime.strategy == "one_device" else runtime.strategy
    return distribution.get_strategy(strategy=strategy, use_tpu=runtime.use_tpu, tpu_name=runtime.tpu_name,
                                     tpu_zone=runtime.tpu_zone, gcp_project=runtime.gcp_project,
                                     master=runtime.master,
                                     num_tpu_cores=runtime.num_tpu_cores if runtime.use_tpu else None)


def model_kwargs(recompute=False):
    """Constructor arguments shared by every task model: `recompute` only when set."""
    return {"recompute": True} if recompute else {}


def check_checkpoints(output_dir, do_eval, do_inference, init_path=None):
    """Checks, before any work, that the checkpoints a run will read are complete files.

    `do_eval` reads every `model.ckpt-<step>` of `output_dir`; `do_inference` (predict / export) reads
    `model.ckpt-best`, else the latest one; `init_path` (the initial weights) is read when `output_dir` has no
    checkpoint yet. A TF checkpoint is checked for truncated files (`check_readable`); other sources are only
    resolved here (an archive is checked when it is extracted).
    """
    if init_path and not loop.list_checkpoints(output_dir) and not os.path.isfile(os.path.expanduser(init_path)):
        with resolve_source(init_path) as source:
            if source.kind not in FOREIGN_KINDS:
                check_readable(source.checkpoint_prefix)
    prefixes = []
    if do_eval:
        prefixes.extend(prefix for _, prefix in loop.list_checkpoints(output_dir))
    if do_inference:
        prefix = inference_checkpoint(output_dir)
        if prefix and prefix not in prefixes:
            prefixes.append(prefix)
    for prefix in prefixes:
        check_readable(prefix)


def static_batches(strategy, jit_compile):
    """Whether eval/predict batches must all have one static shape: under a `TPUStrategy` or with XLA."""
    return bool(jit_compile) or isinstance(strategy, tf.distribute.TPUStrategy)


def inference_batches(step, dataset, strategy, what, total=None, unit="examples"):
    """Runs `step` (a `tf.function` of one replica's batch -> dict of tensors) over `dataset` under `strategy`;
    yields one dict of NumPy arrays per global batch, the replicas' parts concatenated in order (each replica
    gets a consecutive slice of the global batch). Logs the progress every 30 s.

    Args:
        step: the per-replica inference function (traced once by the caller, reused per checkpoint).
        dataset: batched `tf.data.Dataset` (global batch size).
        strategy: the `tf.distribute.Strategy` the model was built under.
        what: str, name in the progress log.
        total: int or None, the number of rows to come, for the log's ETA.
        unit: str, what a row is, in the log.
    """
    done = 0
    start = last_log = time.time()
    for features in strategy.experimental_distribute_dataset(dataset):
        out = strategy.run(step, args=(features,))
        arrays = {key: np.concatenate([t.numpy() for t in strategy.experimental_local_results(value)])
                  for key, value in out.items()}
        yield arrays
        done += len(next(iter(arrays.values()))) if arrays else 0
        if time.time() - last_log > 30:
            last_log = time.time()
            rate = done / (last_log - start)
            eta = f", ETA {(total - done) / rate:.0f} s" if total and rate else ""
            logging.info("%s: %d %s (%.1f %s/s%s)", what, done, unit, rate, unit, eta)


# --- the stages -------------------------------------------------------------------------------------------


def train(task, model, strategy, output_dir, init_path, learning_rate, train_batch_size, optimizer="adamw",
          save_checkpoints_steps=1000, iterations_per_loop=1000, jit_compile=False, gradient_accumulation_steps=1,
          keep_checkpoint_max=None, **optimizer_kwargs):
    """Trains `model` on `task` in `output_dir` (resuming from its latest checkpoint); returns the loop's result
    with `num_train_steps`.

    A seeded task (`task.seed`) resumes its training input at the restored step under every strategy.
    `keep_checkpoint_max` None keeps every checkpoint, as the fine-tuning scripts of the original do so that
    each one is evaluated; `optimizer_kwargs` go to `optimization.create_optimizer` (`poly_power`, ...).
    """
    num_train_steps, num_warmup_steps = task.prepare_training()
    replicas = strategy.num_replicas_in_sync
    micro_batches = replicas * int(gradient_accumulation_steps)
    if train_batch_size % micro_batches:
        raise InputError(f"`train_batch_size={train_batch_size}` must be divisible by the {replicas} replica(s) "
                         f"times `gradient_accumulation_steps={gradient_accumulation_steps}`.")
    # A resumed run restores its own checkpoint; the initial weights matter only for a fresh one.
    if init_path and not loop.list_checkpoints(output_dir):
        task.init_weights(model, init_path)
    with strategy.scope():
        opt = optimization.create_optimizer(learning_rate, num_train_steps, num_warmup_steps, optimizer=optimizer,
                                            **optimizer_kwargs)
    per_replica = train_batch_size // micro_batches

    positional = task.seed is not None

    def train_dataset_fn(input_context=None, start_batch=0):
        if positional:
            return task.train_dataset(input_context, per_replica, start_batch=start_batch)
        return task.train_dataset(input_context, per_replica)

    if keep_checkpoint_max is None:
        # The original keeps every checkpoint (RunConfig keep_checkpoint_max=0) so that each one is evaluated.
        keep_checkpoint_max = num_train_steps // max(save_checkpoints_steps or num_train_steps, 1) + 2
    result = loop.run_training(
        model, opt, task.loss, train_dataset_fn, strategy, output_dir, num_train_steps,
        iterations_per_loop=int(min(iterations_per_loop, save_checkpoints_steps or iterations_per_loop)),
        save_checkpoints_steps=save_checkpoints_steps, keep_checkpoint_max=keep_checkpoint_max,
        gradient_accumulation_steps=gradient_accumulation_steps, jit_compile=jit_compile,
        checkpoint_iterator=task.checkpoint_iterator, positional_input=positional)
    return dict(result, num_train_steps=num_train_steps)


def evaluate(task, model, output_dir, init_path, scorer=None):
    """Scores every checkpoint of `output_dir` with `scorer` (default `task.evaluate`) and keeps the best.

    Without checkpoints, the initial weights (`init_path`) are scored and written to `eval_results.txt`.

    Returns:
        the best checkpoint's metrics with `best_step` (None when the initial weights were scored).
    """
    scorer = scorer or task.evaluate
    task.prepare_evaluation()
    if loop.list_checkpoints(output_dir):
        best_step, best_metrics = loop.evaluate_checkpoints(
            model, output_dir, scorer, task.metric_key, output_dir, higher_is_better=True,
            delete_non_best=task.delete_non_best)
        return dict(best_metrics, best_step=best_step)
    if not init_path:
        raise InputError(f"No model.ckpt-<step> checkpoint to evaluate in `output_dir` {output_dir!r}: train first "
                         "(`do_train`) or give `init_checkpoint`.")
    # Nothing trained here: score the initial weights (e.g. a checkpoint fine-tuned elsewhere) as they are.
    task.init_weights(model, init_path)
    metrics = dict(scorer(model), global_step=0)
    write_text_atomic(os.path.join(output_dir, EVAL_RESULTS_FILE),
                      "".join(f"{key} = {metrics[key]}\n" for key in sorted(metrics)))
    return dict(metrics, best_step=None)


def inference_checkpoint(output_dir):
    """`output_dir/model.ckpt-best` if present, else the latest `model.ckpt-<step>`, else None."""
    best = os.path.join(output_dir, loop.BEST_CHECKPOINT_NAME)
    if tf.io.gfile.exists(best + ".index"):
        return best
    checkpoints = loop.list_checkpoints(output_dir)
    return checkpoints[-1][1] if checkpoints else None


def best_step(output_dir):
    """The best step recorded in `best_trial.txt` (`global_step:best_step:best_value`), or None."""
    path = os.path.join(output_dir, BEST_TRIAL_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        fields = f.read().split()
    try:
        return int(fields[-1].split(":")[1])
    except (IndexError, ValueError):
        return None


def restore_for_inference(task, model, output_dir, init_path):
    """Restores `model.ckpt-best`, else the latest checkpoint, else the initial weights.

    Returns:
        `(source, step)`: the checkpoint or init path used and its global step (None when unknown).
    """
    checkpoint = inference_checkpoint(output_dir)
    if checkpoint is not None:
        if checkpoint.endswith(loop.BEST_CHECKPOINT_NAME):
            step = best_step(output_dir)
        else:
            logging.warning("No model.ckpt-best in %s (run the evaluation first): using the latest checkpoint %s.",
                            output_dir, checkpoint)
            step = loop.list_checkpoints(output_dir)[-1][0]
        logging.info("Restoring %s", checkpoint)
        restore_checkpoint(model, checkpoint)
        return checkpoint, step
    if init_path:
        logging.warning("No checkpoint in %s: using `init_checkpoint` %s.", output_dir, init_path)
        task.init_weights(model, init_path)
        return init_path, None
    raise InputError(f"No checkpoint in `output_dir` {output_dir!r} (model.ckpt-best or model.ckpt-<step>) and no "
                     "`init_checkpoint`: nothing to run. Train first (`do_train`) or give `init_checkpoint`.")


def run_stages(task, model, strategy, output_dir, init_path=None, do_train=False, do_eval=False, do_predict=False,
               export_dir=None, train_options=None):
    """Runs the stages of `task` in the original's order: train, evaluate, predict, export.

    Args:
        task: a `Task`.
        model: the task's model, built under `strategy.scope()`.
        strategy: the `tf.distribute.Strategy`.
        output_dir: str, checkpoints and result files.
        init_path: str or None, initial weights (any `init_from_checkpoint` source).
        do_train, do_eval, do_predict: bool.
        export_dir: str or None.
        train_options: dict of `train` keyword arguments (learning rate, batch size, optimizer, ...).

    Returns:
        dict with `train`, `eval`, `predict` and the export's entries for the stages run.
    """
    result = {}
    if do_train:
        result["train"] = train(task, model, strategy, output_dir, init_path, **(train_options or {}))
    if do_eval:
        result["eval"] = task.evaluation_stage(model, output_dir, init_path)
    if do_predict:
        result["predict"] = task.prediction_stage(model, output_dir, init_path)
    if export_dir:
        if not do_predict:
            restore_for_inference(task, model, output_dir, init_path)
        result.update(task.export(model, export_dir))
    return result


def run(task_class, options, runtime=None):
    """Runs a task from its typed options: checks, runtime, model, then `run_stages`'s stages.

    The config and SentencePiece model not given come from the weights' source (a release, a hub module, a
    keras-hub or HF directory), as `from_pretrained` takes them; every check (options, sources, sequence
    length, the task's inputs, the checkpoints to read) is made before anything is written to `output_dir`;
    the feature files a failed run wrote are removed (`removed_on_failure`).

    Args:
        task_class: a `Task` subclass with `from_options`.
        options: the task's options (`albert_tf.training.options`: `ClassifierOptions`, `SquadOptions`, ...).
        runtime: `RuntimeOptions` (None: the defaults).

    Returns:
        `task.results(...)` of the stages run.
    """
    runtime = runtime if runtime is not None else options_lib.RuntimeOptions()
    task_class.validate(options)
    with contextlib.ExitStack() as stack:
        config, spm_model_file, config_file = resolve_sources(
            stack, options.albert_config_file, getattr(options, "spm_model_file", None),
            asset_source=options.asset_source, spm_missing_message=task_class.spm_missing_message)
        check_max_seq_length(options.max_seq_length, config, config_file)
        task_class.check_inputs(options, config, spm_model_file)
        check_checkpoints(options.output_dir, options.evaluates_checkpoints, options.runs_inference,
                          init_path=options.checked_init_path)
        # The strategy first: a missing TPU stops the run before `output_dir` is made.
        strategy = prepare_runtime(runtime)
        tf.io.gfile.makedirs(options.output_dir)
        task = task_class.from_options(options, runtime, strategy, spm_model_file)
        task.jit_compile = bool(runtime.jit_compile)
        with strategy.scope():
            model = task.build_model(config, **model_kwargs(runtime.recompute))
        stack.enter_context(removed_on_failure(task.feature_files()))
        stages = run_stages(task, model, strategy, options.output_dir, options.init_path,
                            train_options=options.train_options(runtime), **options.stages())
        return task.results(stages)
