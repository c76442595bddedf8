"""The training loop of every runner on every Keras backend: a controller owns the loop, a trainer the step.

In the shape of Model Garden's Orbit, `run_training` owns everything a run does between its steps, once for
every backend, and plays the part of the original `TPUEstimator`:

* `iterations_per_loop` optimizer steps per call of the trainer, cut at checkpoint boundaries so checkpoints land
  on multiples of `save_checkpoints_steps`; the step number is the optimizer's `iterations` (a step that the
  loss scaler of `mixed_float16` skips is not counted), so a finished run's command trains nothing;
* `model.ckpt-<step>` checkpoints (`run_checkpoint`: every weight under its model path) kept
  `keep_checkpoint_max` at a time; a restarted job resumes from the newest intact one (`checkpoint_dir`: damaged
  ones and orphaned data moved aside, the state file written again, a checkpoint of other shapes or other LoRA
  adapters refused in one line with nothing renamed): the weights, optimizer slots, step, and the input
  position: where the trainer can save the input's iterator (one device, one process) the checkpoint holds
  it; elsewhere a seeded positional input (`positional_input`, `albert_tf.data.record_stream`) is rebuilt from
  the restored step's position, and an unseeded one restarts;
* SIGINT / SIGTERM (`interrupt`): the step in flight finishes, a checkpoint of that step is written and
  `interrupt.Interrupted(signal, step)` is raised (the commands exit 130 / 143 with one line);
* TensorBoard scalars in `model_dir` and one log line per loop; a NaN/Inf loss or gradient stops the run
  with `FloatingPointError` before anything is saved, so the last good checkpoint is left as it was;
* `evaluate_checkpoints`: every checkpoint scored, the best kept.

Each backend's trainer supplies only what differs: the step (`tf_trainer.TfTrainer`: a `tf.function` under a
`tf.distribute` strategy; `jax_trainer.JaxTrainer`: a `jax.jit` over `stateless_apply` with a
`keras.distribution` layout), the restore and save of its variables and the input's placement.
"""

import math
import os
import time

import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.restore import restore_checkpoint
from albert_tf.errors import InputError
from albert_tf.fileio import write_text_atomic
from albert_tf.training import interrupt
from albert_tf.training.checkpoint_dir import (CHECKPOINT_NAME, DAMAGED_SUFFIX, adapter_mismatch, copy_checkpoint,
                                               list_checkpoints, move_aside, remove_checkpoint,
                                               restore_newest_intact, state_file_latest, write_state_file)
from albert_tf.training.jax_distribution import JaxDevices
from albert_tf.training.run_checkpoint import checkpoint_objects
from albert_tf.training.tf_trainer import TfTrainer

BEST_CHECKPOINT_NAME = "model.ckpt-best"
EVAL_RESULTS_FILE = "eval_results.txt"

__all__ = ["BEST_CHECKPOINT_NAME", "CHECKPOINT_NAME", "DAMAGED_SUFFIX", "EVAL_RESULTS_FILE", "adapter_mismatch",
           "checkpoint_objects", "evaluate_checkpoints", "list_checkpoints", "move_aside", "report_loop",
           "run_training", "state_file_latest", "write_state_file"]


def _trainer(model, optimizer, loss_fn, strategy, accumulation, jit_compile):
    """The backend's trainer for `strategy` (a `tf.distribute` strategy or `jax_distribution.JaxDevices`)."""
    if isinstance(strategy, JaxDevices):
        from albert_tf.training.jax_trainer import JaxTrainer   # pylint: disable=import-outside-toplevel
        return JaxTrainer(model, optimizer, loss_fn, strategy, accumulation, jit_compile)
    return TfTrainer(model, optimizer, loss_fn, strategy, accumulation, jit_compile)


def _format_seconds(seconds):
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def run_training(model, optimizer, loss_fn, train_dataset_fn, strategy, model_dir, num_train_steps,
                 iterations_per_loop=1000, save_checkpoints_steps=1000, keep_checkpoint_max=5,
                 gradient_accumulation_steps=1, jit_compile=False, checkpoint_iterator=True, loop_callback=None,
                 positional_input=False):
    """Trains `model` to `num_train_steps` optimizer steps, resuming from the newest intact checkpoint in
    `model_dir`, on any Keras backend.

    Args:
        model: a Keras model created under `strategy.scope()`.
        optimizer: a Keras optimizer created under `strategy.scope()` (`optimization.create_optimizer`).
        loss_fn: `loss_fn(model, features, training) -> (loss, {name: scalar})`: the mean loss over the
            replica's batch and extra scalars to log.
        train_dataset_fn: `train_dataset_fn(input_context) -> tf.data.Dataset` of per-replica batches
            (`input_context.get_per_replica_batch_size(global_batch)`; with gradient accumulation, batches of
            `global_batch / (replicas * gradient_accumulation_steps)`), repeated, static shapes. With
            `positional_input`, `train_dataset_fn(input_context, start_batch)`: the same dataset without its
            first `start_batch` batches. Under JAX one pipeline gives the global batch (/ accumulation), which
            the trainer splits over the devices and processes.
        strategy: the `tf.distribute.Strategy`, or under JAX the `jax_distribution.JaxDevices`.
        model_dir: directory of the checkpoints and TensorBoard summaries.
        num_train_steps: int, the last global step (optimizer updates).
        iterations_per_loop: int, steps per call of the trainer (and per log line).
        save_checkpoints_steps: int, checkpoint every this many steps (and at the end); 0 or None = end only.
        keep_checkpoint_max: int, checkpoints kept.
        gradient_accumulation_steps: int, micro-batches summed per optimizer step.
        jit_compile: bool, compile the forward/backward pass with XLA (TensorFlow; JAX always compiles).
        checkpoint_iterator: bool, save the input position in the checkpoints (where the trainer can).
        loop_callback: optional `fn(stats)` called after each loop with a dict: `global_step`, `loss`, `learning_rate`,
            `gradient_norm`, `step_time` (s), `examples_per_second`, `seconds`, and the `loss_fn` scalars.
        positional_input: bool, `train_dataset_fn` can start at a batch (a seeded positional input): a
            resumed run whose checkpoint holds no iterator state starts each input pipeline at batch
            `step * gradient_accumulation_steps * replicas per pipeline`, so it reads what an uninterrupted
            run reads after that step, under every strategy.

    Returns:
        dict with `global_step`, `loss` (mean over the last loop) and the mean of each `loss_fn` scalar; under
        JAX also `compilations` (how many times the step was traced).
    """
    for name, value in (("num_train_steps", num_train_steps), ("iterations_per_loop", iterations_per_loop),
                        ("gradient_accumulation_steps", gradient_accumulation_steps),
                        ("keep_checkpoint_max", keep_checkpoint_max)):
        if value is None or int(value) < 1:
            raise InputError(f"`{name}` must be a positive integer. Received: {name}={value}.")
    tf.io.gfile.makedirs(model_dir)
    trainer = _trainer(model, optimizer, loss_fn, strategy, int(gradient_accumulation_steps), jit_compile)
    # The weights and the step are restored before the input is built: a positional input starts at the step.
    latest = restore_newest_intact(trainer.restore, model, model_dir, trainer.is_chief, trainer.shape_mismatch)
    step = trainer.global_step()
    if step >= num_train_steps:
        logging.info("Global step %d >= num_train_steps %d: nothing to train.", step, num_train_steps)
        return {"global_step": step}
    save_iterator = checkpoint_iterator and trainer.saves_iterator
    restore_iterator = save_iterator and latest is not None and any(
        name.startswith("iterator/") for name, _ in tf.train.list_variables(latest))
    input_step = step if step > 0 and not restore_iterator and positional_input else 0
    _log_input_position(step, restore_iterator, positional_input, checkpoint_iterator and not save_iterator)
    if positional_input:
        iterator = trainer.start_input(train_dataset_fn, input_step)
    else:
        iterator = trainer.start_input(lambda input_context, start_batch: train_dataset_fn(input_context), 0)
    if restore_iterator:
        tf.train.Checkpoint(iterator=iterator).restore(latest).expect_partial()
    trainer.open_saver(model_dir, keep_checkpoint_max, iterator if save_iterator else None)
    logging.info("***** Running training: steps %d -> %d, %s, global batch %s *****", step, num_train_steps,
                 trainer.describe(), trainer.global_batch)
    writer = tf.summary.create_file_writer(model_dir) if trainer.is_chief else tf.summary.create_noop_writer()
    try:   # a signal lets the step in flight finish and starts no other
        with interrupt.listening(trainer.request_stop):
            result = _train_loops(trainer, iterator, writer, num_train_steps, iterations_per_loop,
                                  int(save_checkpoints_steps or 0), model_dir, loop_callback)
    finally:
        writer.close()
    return dict(result, **trainer.extras())


def _log_input_position(step, restore_iterator, positional_input, cannot_save):
    if step > 0 and not restore_iterator:
        if positional_input:
            logging.info("Resuming the input by position: each input pipeline starts after the batches of %d "
                         "step(s).", step)
        else:
            logging.info("The checkpoint holds no input position and the input is not positional (no seed): the "
                         "resumed job restarts the input pipeline.")
    elif cannot_save:
        logging.info("The input iterator cannot be checkpointed here (several devices or processes): a resumed job "
                     "%s.", "rebuilds its seeded input at the restored step" if positional_input
                     else "restarts the input pipeline (unseeded input)")


def _train_loops(trainer, iterator, writer, num_train_steps, iterations_per_loop, every, model_dir, loop_callback):
    """Runs the trainer's steps until `num_train_steps`, logging each loop and checkpointing every `every` steps
    (0: at the end only)."""
    step = saved_step = start_step = trainer.global_step()
    start_time = time.time()
    result = {"global_step": step}
    try:
        while step < num_train_steps and interrupt.requested() is None:
            loop_steps = min(iterations_per_loop, num_train_steps - step)
            if every > 0:
                loop_steps = min(loop_steps, (step // every + 1) * every - step)
            loop_start = time.time()
            outputs = trainer.run_steps(iterator, loop_steps)
            new_step = trainer.global_step()
            if outputs["steps"] == 0:   # interrupted before the loop's first step
                break
            stats = _loop_stats(outputs, step, time.time() - loop_start, trainer.global_batch, model_dir)
            report_loop(writer, stats, new_step, num_train_steps, (time.time() - start_time)
                        / max(new_step - start_step, 1) * (num_train_steps - new_step))
            step = new_step
            result = {"global_step": step, "loss": stats["loss"], "gradient_norm": stats["gradient_norm"],
                      **stats["metrics"]}
            if loop_callback is not None:
                loop_callback(dict(result, learning_rate=stats["learning_rate"], step_time=stats["step_time"],
                                   examples_per_second=stats["examples_per_second"], seconds=stats["seconds"]))
            if ((every > 0 and step % every == 0) or step >= num_train_steps
                    or interrupt.requested() is not None):
                path = trainer.save(step)
                saved_step = step
                if path is not None:
                    logging.info("Saved checkpoint %s.", path)
    finally:
        trainer.finish()
    signum = interrupt.requested()
    if signum is not None:
        raise interrupt.Interrupted(signum, saved_step)
    return result


def _loop_stats(outputs, step, elapsed, global_batch, model_dir):
    """The statistics of one loop of the trainer after `step`; raises `FloatingPointError` after a non-finite
    step (nothing of that loop is saved)."""
    steps_run = max(outputs["steps"], 1)
    if not outputs["finite"]:
        raise FloatingPointError(
            f"Non-finite loss or gradient at global step {step + steps_run} (loss sum {outputs['loss_sum']}, "
            f"gradient norm {outputs['gradient_norm']}). Training stopped; nothing was saved after step {step}. "
            f"Last checkpoint: {tf.train.latest_checkpoint(model_dir)}.")
    return {"loss": outputs["loss_sum"] / steps_run,
            "metrics": {name: value / steps_run for name, value in outputs["metric_sums"].items()},
            "learning_rate": outputs["learning_rate"], "gradient_norm": outputs["gradient_norm"],
            "step_time": elapsed / steps_run, "seconds": elapsed,
            "examples_per_second": (global_batch * outputs["steps"] / elapsed if global_batch and elapsed > 0
                                    else float("nan"))}


def report_loop(writer, stats, new_step, num_train_steps, eta):
    """One log line and the TensorBoard scalars of a loop."""
    logging.info("step %d/%d loss %.4f lr %.3g grad_norm %.3f %.1f examples/s %.3f s/step ETA %s%s",
                 new_step, num_train_steps, stats["loss"], stats["learning_rate"], stats["gradient_norm"],
                 stats["examples_per_second"], stats["step_time"], _format_seconds(eta),
                 "".join(f" {k} {v:.4f}" for k, v in sorted(stats["metrics"].items())))
    with writer.as_default(step=new_step):
        tf.summary.scalar("loss", stats["loss"])
        tf.summary.scalar("learning_rate", stats["learning_rate"])
        tf.summary.scalar("gradient_norm", stats["gradient_norm"])
        tf.summary.scalar("step_time", stats["step_time"])
        if not math.isnan(stats["examples_per_second"]):
            tf.summary.scalar("examples_per_second", stats["examples_per_second"])
        for name, value in stats["metrics"].items():
            tf.summary.scalar(name, value)
    writer.flush()


def evaluate_checkpoints(model, model_dir, eval_fn, metric_key, output_dir, higher_is_better=True,
                         delete_non_best=False):
    """Evaluates every `model.ckpt-<step>` in `model_dir` in step order and keeps the best, as the original.

    For each checkpoint: restore into `model`, `metrics = eval_fn(model)` (None: nothing to score, stop), append `key = value` lines (sorted,
    with `global_step`), `best = <best so far>` and a `=====` line to `output_dir/eval_results.txt`,
    rewrite `output_dir/best_trial.txt` as `global_step:best_step:best_value`; a strictly better checkpoint
    is copied to `output_dir/model.ckpt-best.*`. With `delete_non_best`, checkpoints other than the best
    and the latest are removed at the end (the original `run_classifier.py` prunes them while evaluating) and
    `model_dir`'s `checkpoint` state file is rewritten to name the ones left.

    Returns:
        `(best_step, best_metrics)`; `(None, None)` when `model_dir` has no checkpoint.
    """
    checkpoints = list_checkpoints(model_dir)
    if not checkpoints:
        logging.warning("No model.ckpt-<step> checkpoint in %s: nothing to evaluate.", model_dir)
        return None, None
    tf.io.gfile.makedirs(output_dir)
    eval_path = os.path.join(output_dir, EVAL_RESULTS_FILE)
    best_path = os.path.join(output_dir, "best_trial.txt")
    lines = []
    best_step, best_value, best_metrics = None, None, None
    for step, prefix in checkpoints:
        restore_checkpoint(model, prefix)
        metrics = eval_fn(model)
        if metrics is None:   # The evaluation data has nothing to score (e.g. a SQuAD file without answers).
            logging.info("Nothing to score in the evaluation data: no checkpoint is chosen.")
            return None, None
        metrics = dict(metrics)
        metrics["global_step"] = step
        if metric_key not in metrics:
            raise InputError(f"`eval_fn` returned no `{metric_key}` (metric_key). Keys: {sorted(metrics)}.")
        logging.info("***** Eval results of %s *****", prefix)
        for key in sorted(metrics):
            logging.info("  %s = %s", key, metrics[key])
            lines.append(f"{key} = {metrics[key]}")
        lines.append(f"best = {best_value if best_value is not None else -1}")
        value = float(metrics[metric_key])
        better = best_value is None or (value > best_value if higher_is_better else value < best_value)
        if better:
            best_step, best_value, best_metrics = step, value, metrics
            for target in copy_checkpoint(prefix, os.path.join(output_dir, BEST_CHECKPOINT_NAME)):
                logging.info("saved %s", target)
        lines.append("=" * 50)
        write_text_atomic(eval_path, "\n".join(lines) + "\n")
        write_text_atomic(best_path, f"{step}:{best_step}:{best_value}")
    if delete_non_best:
        latest_step = checkpoints[-1][0]
        for step, prefix in checkpoints:
            if step not in (best_step, latest_step):
                logging.info("removing %s", prefix)
                remove_checkpoint(prefix)
        # The `checkpoint` state file names only what is left (a later resume or `latest_checkpoint` reads it).
        if len(checkpoints) > 2 and tf.io.gfile.exists(os.path.join(model_dir, "checkpoint")):
            write_state_file(model_dir, [prefix for step, prefix in checkpoints if step in (best_step, latest_step)])
    return best_step, best_metrics
