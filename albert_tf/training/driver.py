"""One driver for every task: check, train, evaluate every checkpoint and keep the best, predict, export.

In the spirit of Model Garden's `base_task.Task` + Orbit: a task says only what it alone knows (`Task`: its
checks, its model, its training data and loss, how it scores a model, its predictions files, its export), and
the driver owns the run: `run(task_class, options, runtime_options)` builds the task in one step from its typed
options (`albert_tf.options`), lets it refuse what it must before any work (`Task.check`), and then runs the
stages that the options name (`options.stages()`: plain data), as the original `run_pretraining.py`,
`run_classifier.py`, `run_squad_v*.py` and `run_race.py` mains do:

* `train`: initial weights from `init_checkpoint` / the TF-Hub module unless `output_dir` already has a
  `model.ckpt-<step>` (then training resumes), the original optimizer and schedule, a checkpoint every
  `save_checkpoints_steps`, every checkpoint kept (the original's `keep_checkpoint_max=0`) for evaluation;
* `evaluate`: every `model.ckpt-<step>` in `output_dir` is scored in step order, the best copied to
  `model.ckpt-best`, `eval_results.txt` and `best_trial.txt` written as the original (`loop.evaluate_checkpoints`);
  without checkpoints, the initial weights are scored (`options.scores_initial_weights`);
* `predict`: the task's predictions from `model.ckpt-best` (else the latest checkpoint, else the initial
  weights);
* `export`: a SavedModel of the same weights.

The run's return is `{stage: result}` for the stages run (`train`, `eval`, `predict`, and the export's entries).
Checkpoints in `output_dir` may be our own (object-based) or written by the original code (TF1 names):
`albert_tf.checkpoints.restore.restore_checkpoint` reads either.
"""

import abc
import contextlib
import dataclasses
import functools
import os
from typing import Callable

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf import config as config_lib
from albert_tf import options as options_lib
from albert_tf.checkpoints import resolve_source
from albert_tf.checkpoints.restore import check_readable, restore_checkpoint
from albert_tf.checkpoints.sources import FOREIGN_KINDS
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError, check_export_backend, tf_error_text
from albert_tf.fileio import check_directory, output_lock, write_text_atomic
from albert_tf.text import tokenization
from albert_tf.training import distribution, export_process, jax_distribution, loop, optimization, run_record

EVAL_RESULTS_FILE = loop.EVAL_RESULTS_FILE
BEST_TRIAL_FILE = "best_trial.txt"


@dataclasses.dataclass(frozen=True)
class TrainData:
    """A task's training input: the schedule's lengths and `dataset(input_context, batch_size, start_batch)`, the
    repeated, shuffled `tf.data.Dataset` of one input pipeline at the per-replica `batch_size`, without its first
    `start_batch` batches. `positional`: the dataset honours `start_batch`, so that a seeded run resumes its input
    where the checkpoint was written under every strategy (else `start_batch` is always 0, and a resumed run on one
    device reads on from the input position saved in the checkpoint). `files`: the TFRecord files it reads, named
    when one of them turns out damaged (`damaged_record_file`)."""

    num_train_steps: int
    num_warmup_steps: int
    dataset: Callable
    positional: bool = True
    files: tuple = ()


class Runtime:
    """What a task runs with: the runtime options, the model's config and SentencePiece model (resolved on first
    use, from the task's options or the weights' source: `resolve_sources`), and the `tf.distribute` strategy
    (set by the driver once the task's checks passed)."""

    def __init__(self, options, task_options, stack):
        self.options = options
        self.strategy = None
        self._task_options = task_options
        self._stack = stack

    @functools.cached_property
    def _sources(self):
        o = self._task_options
        return resolve_sources(self._stack, o.albert_config_file, getattr(o, "spm_model_file", None),
                               asset_source=o.asset_source)

    @property
    def config(self):
        """The `AlbertConfig` of the run."""
        return self._sources[0]

    @property
    def spm_model_file(self):
        """The SentencePiece model of the run, or None (a WordPiece vocabulary, or none)."""
        return self._sources[1]

    @property
    def config_file(self):
        """The path `config` was read from."""
        return self._sources[2]

    @property
    def static_batches(self):
        """Whether every eval/predict batch has the same static shape (the last one padded with examples that
        weigh nothing): on a TPU, whose compiled programs take fixed shapes, and under XLA, which compiles once
        per shape."""
        return bool(self.options.jit_compile) or isinstance(self.strategy, tf.distribute.TPUStrategy)


class Task(abc.ABC):
    """What one task tells the driver: built in one step from its options and the run's `Runtime`; the rest is
    the options' plain data (`stages()`, `metric_key`, `keep_best_only`, `scores_initial_weights`,
    `feature_files()`), which the driver reads.

    Attributes:
        options: the task's options dataclass (`ClassifierOptions`, ...).
        runtime: the `Runtime`.
    """

    def __init__(self, options, runtime):
        self.options = options
        self.runtime = runtime

    def check(self):
        """Raises `InputError` for anything that can be refused before work. The base checks `max_seq_length`
        against the config and that the checkpoints the stages read are complete (resolving the sources on the
        way); a task checks its options before calling it and its own inputs (data, vocabulary) after."""
        runtime = self.runtime
        config_lib.check_max_seq_length(self.options.max_seq_length, runtime.config.max_position_embeddings,
                                        runtime.config_file)
        self.options.check_optimizer()
        if hasattr(self.options, "check_lora"):
            self.options.check_lora()
        check_directory(getattr(self.options, "export_dir", None), "export_dir")
        check_checkpoints(self.options)

    def label_names(self):
        """The names of the model's labels (index order), recorded with a run (`run_record`); None: none."""
        return None

    @abc.abstractmethod
    def build_model(self, init_path=None):
        """The task's Keras model for `runtime.config` (built under the strategy's scope by the driver), with the
        initial weights of `init_path` when given (any checkpoint source; a pretraining checkpoint lacks the
        task's head)."""

    @abc.abstractmethod
    def train_data(self):
        """Writes (or reuses) the training features; returns the `TrainData`."""

    @abc.abstractmethod
    def loss(self, model, features, training):
        """`(mean loss over the batch, {name: scalar to log})`."""

    @abc.abstractmethod
    def evaluate(self, model):
        """Scores `model` on the evaluation data (written on the first call); returns `{metric: value}` with
        `options.metric_key`, or None when the data has nothing to score."""

    def predict(self, model, step):
        """Writes the task's predictions files for `model` (restored from the checkpoint of `step`, None when
        unknown); returns what it wrote or scored. Only a task whose options have a `predict` stage needs it."""
        raise InputError(f"{type(self).__name__} has no prediction stage.")

    def export(self, model, export_dir):
        """Exports `model`; returns a dict of what was written (`export_path`, ...). Only a task whose options
        have an `export` stage needs it."""
        raise InputError(f"{type(self).__name__} has no SavedModel export.")


# --- sources and checks ------------------------------------------------------------------------------------


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


def resolve_sources(stack, albert_config_file, spm_model_file, asset_source=None):
    """The config, SentencePiece model and config path of a run, taking what is missing from `asset_source`.

    Args:
        stack: `contextlib.ExitStack` that keeps a resolved source (possibly an extracted archive) alive.
        albert_config_file: str or None, `albert_config.json`; None takes the asset source's.
        spm_model_file: str or None; None or "from_tf_hub" takes the asset source's when it has one.
        asset_source: str or None, a TF-Hub module, release directory or archive (`resolve_source`).

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
    if spm_model_file == "from_tf_hub":
        spm_model_file = None
    if spm_model_file and not tf.io.gfile.exists(spm_model_file):
        raise InputError(f"`spm_model_file` {spm_model_file!r} not found.")
    config = AlbertConfig.from_json_file(albert_config_file)
    if spm_model_file:
        tokenization.check_spm_vocab_size(spm_model_file, config.vocab_size, spm_model_file, albert_config_file)
    return config, spm_model_file or None, albert_config_file


def prepare_runtime(runtime=None, **fields):
    """Seeds the run (None: unseeded, as the original), sets the dtype policy (None leaves it as it is) and
    returns the `tf.distribute` strategy. `num_tpu_cores` is checked against the TPU only with `use_tpu`.

    Args:
        runtime: `RuntimeOptions`, or None to build one from `fields` (`random_seed=3`, ...).
    """
    runtime = runtime if runtime is not None else options_lib.RuntimeOptions(**fields)
    if keras.backend.backend() == "jax":
        jax_distribution.initialize_processes()     # before any JAX computation (the seed's included)
    if runtime.random_seed is not None:
        # Python, NumPy, TensorFlow and Keras generators: weight initialisation, dropout and input shuffles.
        tf.keras.utils.set_random_seed(int(runtime.random_seed))
    if runtime.mixed_precision:
        distribution.set_mixed_precision(runtime.mixed_precision)
    if keras.backend.backend() == "jax":
        jax_distribution.check_tpu(runtime.use_tpu, runtime.strategy)
        if runtime.strategy not in ("one_device", "tpu"):
            logging.warning("KERAS_BACKEND=jax: `strategy=%s` names a tf.distribute strategy; JAX uses every "
                            "device it finds (`model_parallel_devices` for a model axis).", runtime.strategy)
        return jax_distribution.jax_devices(runtime.model_parallel_devices)
    strategy = "tpu" if runtime.use_tpu and runtime.strategy == "one_device" else runtime.strategy
    return distribution.get_strategy(strategy=strategy, use_tpu=runtime.use_tpu, tpu_name=runtime.tpu_name,
                                     tpu_zone=runtime.tpu_zone, gcp_project=runtime.gcp_project,
                                     master=runtime.master,
                                     num_tpu_cores=runtime.num_tpu_cores if runtime.use_tpu else None)


def apply_lora(model, options):
    """`model.enable_lora(options.lora_rank, options.lora_targets)` when the options ask for LoRA (a rank > 0):
    the encoder frozen but the adapters and their layers' biases, the head trainable; with `freeze_encoder`, the
    whole encoder frozen; logs the trainable fraction. Returns `model`."""
    rank = getattr(options, "lora_rank", 0)
    if getattr(options, "freeze_encoder", False):
        model.encoder.trainable = False
        logging.info("Encoder frozen: %d of %d weights trainable (the head's).",
                     sum(int(np.prod(v.shape)) for v in model.trainable_weights),
                     sum(int(np.prod(v.shape)) for v in model.weights))
    if rank:
        model.enable_lora(rank, target_names=options.lora_targets or None)
        trainable = sum(int(np.prod(v.shape)) for v in model.trainable_weights)
        total = sum(int(np.prod(v.shape)) for v in model.weights)
        logging.info("LoRA rank %d on %s: %d of %d weights trainable (%.3f%%).", rank,
                     ",".join(options.lora_targets or options_lib.LORA_DEFAULT_TARGETS), trainable, total,
                     100.0 * trainable / total)
    return model


def model_kwargs(runtime):
    """Constructor arguments that the runtime gives every task model: `recompute` only when set."""
    return {"recompute": True} if runtime.options.recompute else {}


def check_checkpoints(options):
    """Checks, before any work, that the checkpoints the stages of `options` will read are complete files.

    The `evaluate` stage reads every `model.ckpt-<step>` of `output_dir`; `predict` and `export` read
    `model.ckpt-best`, else the latest one; the initial weights (`options.checked_init_path`) are read when
    `output_dir` has no checkpoint yet. With a `train` stage, the checkpoints of `output_dir` are left to
    training, which goes on past a damaged newest one. A TF checkpoint is checked for truncated files (`check_readable`); other
    sources are only resolved here (an archive is checked when it is extracted).
    """
    output_dir, init_path = options.output_dir, options.checked_init_path
    checkpoints = loop.list_checkpoints(output_dir)
    if "train" in options.stages():
        # Training restores the newest intact checkpoint and moves damaged ones aside (`loop.run_training`);
        # the stages after it read what training leaves.
        checkpoints = []
    if init_path and not checkpoints and not os.path.isfile(os.path.expanduser(init_path)):
        with resolve_source(init_path) as source:
            if source.kind not in FOREIGN_KINDS:
                check_readable(source.checkpoint_prefix)
    prefixes = [prefix for _, prefix in checkpoints] if options.evaluates_checkpoints else []
    if options.runs_inference:
        prefix = inference_checkpoint(output_dir, checkpoints)
        if prefix and prefix not in prefixes:
            prefixes.append(prefix)
    for prefix in prefixes:
        check_readable(prefix)


def inference_checkpoint(output_dir, checkpoints):
    """`output_dir/model.ckpt-best` if present, else the latest of `checkpoints` (`loop.list_checkpoints`), else
    None."""
    best = os.path.join(output_dir, loop.BEST_CHECKPOINT_NAME)
    if tf.io.gfile.exists(best + ".index"):
        return best
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


# --- the stages -------------------------------------------------------------------------------------------


def train(task, model, runtime, output_dir):
    """Trains `model` on `task` in `output_dir` (resuming from its latest checkpoint); returns the loop's result
    with `num_train_steps`. A seeded run reads a positional training input (`albert_tf.data.record_stream`) and
    resumes it at the restored step under every strategy."""
    strategy, options = runtime.strategy, task.options
    settings = options.train_options(runtime.options)
    data = task.train_data()
    replicas = strategy.num_replicas_in_sync
    accumulation = int(settings.pop("gradient_accumulation_steps"))
    batch_size = settings.pop("train_batch_size")
    if batch_size % (replicas * accumulation):
        raise InputError(f"`train_batch_size={batch_size}` must be divisible by the {replicas} replica(s) "
                         f"times `gradient_accumulation_steps={accumulation}`.")
    save_every, per_loop = settings.pop("save_checkpoints_steps"), settings.pop("iterations_per_loop")
    keep = settings.pop("keep_checkpoint_max", None)
    if keep is None:
        # The original keeps every checkpoint (RunConfig keep_checkpoint_max=0) so that each one is evaluated.
        keep = data.num_train_steps // max(save_every or data.num_train_steps, 1) + 2
    jit_compile = settings.pop("jit_compile")
    with strategy.scope():
        opt = optimization.create_optimizer(settings.pop("learning_rate"), data.num_train_steps,
                                            data.num_warmup_steps, **settings)
    per_replica = batch_size // (replicas * accumulation)
    if isinstance(strategy, jax_distribution.JaxDevices):
        per_replica = batch_size // accumulation      # one input pipeline, split over the devices by the loop

    def dataset_fn(input_context=None, start_batch=0):
        return data.dataset(input_context, per_replica, start_batch)

    try:
        result = loop.run_training(
            model, opt, task.loss, dataset_fn, strategy, output_dir, data.num_train_steps,
            iterations_per_loop=int(min(per_loop, save_every or per_loop)), save_checkpoints_steps=save_every,
            keep_checkpoint_max=keep, gradient_accumulation_steps=accumulation, jit_compile=jit_compile,
            positional_input=data.positional and runtime.options.random_seed is not None)
    except tf.errors.DataLossError as e:
        error = data_loss_error(data.files, output_dir)
        if error is None:
            raise
        raise error from e
    return dict(result, num_train_steps=data.num_train_steps)


def data_loss_error(files, output_dir):
    """The `InputError` for a `DataLossError` met while reading the TFRecord `files`: one line naming the first
    damaged file and TensorFlow's words with the offset ("truncated record at 464"); None when every file reads
    to its end (the error came from elsewhere)."""
    damaged = damaged_record_file([path for path in files if tf.io.gfile.exists(path)])
    if damaged is None:
        return None
    return InputError(f"{damaged[0]}: {damaged[1]} (a cut or damaged TFRecord file: write it again, or remove a "
                      f"runner's cached feature file and it is written again; the checkpoints in {output_dir} are "
                      "kept and the same command resumes).")


def damaged_record_file(files):
    """`(path, TensorFlow's words: "truncated record at 464: ...")` of the first of the TFRecord `files` that cannot
    be read to its end, or None. Each file is read once, in a graph (fast): only after reading failed."""
    for path in files:
        logging.info("Reading failed: checking %s.", path)
        try:
            tf.data.TFRecordDataset(path).reduce(tf.constant(0, tf.int64), lambda count, _: count + 1)
        except tf.errors.DataLossError as e:
            return path, tf_error_text(e)
    return None


def evaluate(task, model, output_dir, init_path):
    """Scores every checkpoint of `output_dir` with `task.evaluate` and keeps the best; without checkpoints,
    the initial weights `model` holds (when the options score them), written to `eval_results.txt`.

    Returns:
        the best checkpoint's metrics with `best_step` (None when the initial weights were scored); None when
        nothing was scored.
    """
    options = task.options
    if loop.list_checkpoints(output_dir):
        best, metrics = loop.evaluate_checkpoints(model, output_dir, task.evaluate, options.metric_key, output_dir,
                                                  delete_non_best=options.keep_best_only)
        return None if metrics is None else dict(metrics, best_step=best)
    if not options.scores_initial_weights:
        logging.warning("No checkpoint in %s to evaluate.", output_dir)
        return None
    if not init_path:
        raise InputError(f"No model.ckpt-<step> checkpoint to evaluate in `output_dir` {output_dir!r}: train first "
                         "(`do_train`) or give `init_checkpoint`.")
    # Nothing trained here: score the initial weights (e.g. a checkpoint fine-tuned elsewhere) as they are.
    metrics = dict(task.evaluate(model), global_step=0)
    write_text_atomic(os.path.join(output_dir, EVAL_RESULTS_FILE),
                      "".join(f"{key} = {metrics[key]}\n" for key in sorted(metrics)))
    return dict(metrics, best_step=None)


def restore_for_inference(model, output_dir, init_path):
    """Restores `model.ckpt-best`, else the latest checkpoint; without one, `model` keeps the initial weights it
    was built with.

    Returns:
        the global step of the weights restored (None when unknown or the initial weights).
    """
    checkpoints = loop.list_checkpoints(output_dir)
    checkpoint = inference_checkpoint(output_dir, checkpoints)
    if checkpoint is None:
        if not init_path:
            raise InputError(f"No checkpoint in `output_dir` {output_dir!r} (model.ckpt-best or model.ckpt-<step>) "
                             "and no `init_checkpoint`: nothing to run. Train first (`do_train`) or give "
                             "`init_checkpoint`.")
        logging.warning("No checkpoint in %s: using `init_checkpoint` %s.", output_dir, init_path)
        return None
    if checkpoint.endswith(loop.BEST_CHECKPOINT_NAME):
        step = best_step(output_dir)
    else:
        logging.warning("No model.ckpt-best in %s (run the evaluation first): using the latest checkpoint %s.",
                        output_dir, checkpoint)
        step = checkpoints[-1][0]
    logging.info("Restoring %s", checkpoint)
    restore_checkpoint(model, checkpoint)
    return step


def run_stages(task, model, stages, init_path=None):
    """Runs `stages` (names among `train`, `evaluate`, `predict`, `export`, in order) of `task` on `model`.

    Returns:
        dict with `train`, `eval`, `predict` and the export's entries for the stages run.
    """
    options, result = task.options, {}
    output_dir = options.output_dir
    for stage in stages:
        if stage == "train":
            result["train"] = train(task, model, task.runtime, output_dir)
        elif stage in ("evaluate", "predict"):
            try:
                if stage == "evaluate":
                    result["eval"] = evaluate(task, model, output_dir, init_path)
                else:
                    result["predict"] = task.predict(model, restore_for_inference(model, output_dir, init_path))
            except tf.errors.DataLossError as e:   # a damaged feature file: named, with the offset
                error = data_loss_error(options.feature_files(), output_dir)
                if error is None:
                    raise
                raise error from e
        elif stage == "export":
            if "predict" not in stages:
                restore_for_inference(model, output_dir, init_path)
            result.update(task.export(model, options.export_dir))
        else:
            raise InputError(f"Unknown stage {stage!r}: the stages are train, evaluate, predict and export.")
    return result


def results_after_training(stages):
    """`stages` without `train`, the evaluation's `best_step` 0 when the initial weights were scored (no
    checkpoint): the result of the RACE and NER runners."""
    result = {key: value for key, value in stages.items() if key != "train"}
    if result.get("eval") is not None and result["eval"]["best_step"] is None:
        result["eval"]["best_step"] = 0      # the initial weights were scored
    return result


def run(task_class, options, runtime_options=None):
    """Runs a task from its typed options: the task built and checked, the runtime, the model, then the stages
    of `options.stages()`.

    Every check (the task's options, the sources, the sequence length, the task's inputs, the checkpoints to
    read) is made before anything is written to `output_dir`; the feature files a failed run wrote are removed
    (`removed_on_failure`). `output_dir` is held by this run (`fileio.output_lock`): a second run there is
    refused. The model starts from the initial weights (`options.checked_init_path`) when
    `output_dir` has no checkpoint yet; otherwise the stages restore their checkpoints.

    Args:
        task_class: a `Task` subclass.
        options: the task's options (`ClassifierOptions`, `SquadOptions`, ...).
        runtime_options: `RuntimeOptions` (None: the defaults).

    Returns:
        `{stage: result}` of the stages run (see `run_stages`).
    """
    runtime_options = runtime_options if runtime_options is not None else options_lib.RuntimeOptions()
    with contextlib.ExitStack() as stack:
        runtime = Runtime(runtime_options, options, stack)
        task = task_class(options, runtime)
        task.check()
        stages = options.stages()
        # A SavedModel is a TensorFlow graph: under another backend the export stage runs last, in a TensorFlow
        # process of its own (`export_process`), on the checkpoint this run wrote.
        export_elsewhere = "export" in stages and keras.backend.backend() != "tensorflow"
        stages = tuple(stage for stage in stages if not (export_elsewhere and stage == "export"))
        if keras.backend.backend() == "jax":
            jax_distribution.check_model_parallel(runtime.config, runtime_options.model_parallel_devices,
                                                  runtime.config_file)
        # The strategy after the checks: a missing TPU stops the run before `output_dir` is made.
        runtime.strategy = prepare_runtime(runtime_options)
        # One run per output directory: a second one would write its checkpoints over this one's. The chief holds it.
        chief = (runtime.strategy.is_chief if isinstance(runtime.strategy, jax_distribution.JaxDevices)
                 else distribution.worker_info(runtime.strategy)[2])
        stack.enter_context(output_lock(options.output_dir, hold=chief))
        init_path = None if loop.list_checkpoints(options.output_dir) else options.checked_init_path
        with runtime.strategy.scope():
            model = task.build_model(init_path)
            if "train" in stages and chief and hasattr(options, "lora_rank"):
                # What a multi-task export needs to rebuild the run's model (`albert_tf.training.run_record`).
                run_record.write(options.output_dir, run_record.describe(model, options, runtime,
                                                                         task.label_names()))
            model = apply_lora(model, options)
        stack.enter_context(removed_on_failure(options.feature_files()))
        result = run_stages(task, model, stages, init_path)
        if export_elsewhere and chief:
            result.update(export_process.export_in_tensorflow(task_class, options, runtime_options))
        return result


def export_stage(task_class, options, runtime_options):
    """The export stage of a run alone, on Keras' TensorFlow backend, without taking the output directory's lock:
    the child process of `export_process`, whose parent run holds it. Returns the export's entries."""
    with contextlib.ExitStack() as stack:
        runtime = Runtime(runtime_options, options, stack)
        task = task_class(options, runtime)
        task.check()
        check_export_backend()
        runtime.strategy = prepare_runtime(runtime_options)
        init_path = None if loop.list_checkpoints(options.output_dir) else options.checked_init_path
        with runtime.strategy.scope():
            model = apply_lora(task.build_model(init_path), options)
        return run_stages(task, model, ("export",), init_path)
