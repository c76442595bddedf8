"""The training loop of every runner: `strategy.run` inside a `tf.function`, checkpoints, resume, summaries.

Keras 3 `model.fit` fails under `MultiWorkerMirroredStrategy` and under `MirroredStrategy` with
`steps_per_execution > 1`, so training is a custom loop that plays the part of the
original `TPUEstimator`:

* `iterations_per_loop` optimizer steps per `tf.function` call (a `tf.range` loop over the distributed
  iterator), cut at checkpoint boundaries so checkpoints land on multiples of `save_checkpoints_steps`;
* per-replica loss divided by `num_replicas_in_sync` (each replica's loss is its own batch mean, as the
  original), gradients summed across replicas, clipped by global norm 1.0 and applied by the optimizer
  (`optimization.py`), so N replicas with batch B/N equal one device with batch B;
* `gradient_accumulation_steps` micro-batches per step: their gradients are summed before that single
  all-reduce / clip / update;
* `model.ckpt-<step>` checkpoints of `tf.train.Checkpoint(model=, optimizer=[, iterator=])` kept
  `keep_checkpoint_max` at a time; a restarted job resumes from the latest (weights, optimizer slots, step,
  and the input position): on one device the checkpoint holds the input iterator; under the other
  strategies (whose iterators TF 2.20 cannot save) a seeded positional input (`positional_input`,
  `albert_tf.data.record_stream`) is rebuilt from the restored step's position, and an unseeded one restarts;
* SIGINT / SIGTERM (`interrupt`): the step in flight finishes, a checkpoint of that step is written and
  `interrupt.Interrupted(signal, step)` is raised (the commands exit 130 / 143 with one line);
* TensorBoard scalars in `model_dir` and one log line per loop; a NaN/Inf loss or gradient stops the run
  with `FloatingPointError` before anything is saved, so the last good checkpoint is left as it was.
"""

import math
import os
import re
import time

import keras
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints.reader import CheckpointReader
from albert_tf.checkpoints.restore import check_readable, restore_checkpoint
from albert_tf.checkpoints.sources import list_checkpoints, state_file_target
from albert_tf.checkpoints.table import lora_adapters
from albert_tf.errors import InputError, tf_error_text
from albert_tf.fileio import copy_atomic, write_text_atomic
from albert_tf.layers.base import sublayers
from albert_tf.training import interrupt
from albert_tf.training.distribution import worker_info
from albert_tf.training.optimization import inner_optimizer

CHECKPOINT_NAME = "model.ckpt"
BEST_CHECKPOINT_NAME = "model.ckpt-best"
EVAL_RESULTS_FILE = "eval_results.txt"


def checkpoint_objects(model):
    """`tf.train.Checkpoint` keyword arguments that save every variable of `model`: `{"model": model}`,
    `"dropout_rng"` when `model` draws random numbers (its dropout layers' seed generators), and `"lora"` when it
    has LoRA adapters (`enable_lora`).

    The adapters (`lora_kernel_a`, `lora_kernel_b` of each `Dense`) are saved with the model, under their layers;
    `lora/alpha` holds the adapters' `lora_alpha` (no variable of the model), so that a reader without adapters
    merges them into the kernels with the same scale (`albert_tf.checkpoints.reader`).

    The seed generators' states are saved under their order in `model.variables` (`dropout_rng/rng_<i>`), not
    under their auto-numbered paths (`seed_generator_5/...`, which depend on what the process built before): a
    run resumed from a checkpoint draws the same dropout masks as the uninterrupted run, so it ends with the
    same weights.

    Raises `ValueError` naming a variable that the TF object graph of `model` does not reach (a layer held
    where Keras does not track it), which the checkpoint would silently leave out.
    """
    reachable = {id(obj) for obj in tf.train.TrackableView(model).descendants()}
    seed_states = []
    for variable in model.variables:
        path = getattr(variable, "path", variable.name)
        if path.endswith("seed_generator_state"):
            seed_states.append(variable)
        elif id(variable) not in reachable:
            raise ValueError(f"Variable {path!r} of {type(model).__name__} is not tracked by its TF object graph "
                             "and would be left out of the checkpoint.")
    objects = {"model": model}
    alphas = {float(layer.lora_alpha) for layer in sublayers(model) if getattr(layer, "lora_enabled", False)}
    if len(alphas) > 1:
        raise ValueError(f"The LoRA adapters of {type(model).__name__} have different alphas {sorted(alphas)}: "
                         "a checkpoint holds one.")
    if alphas:
        objects["lora"] = tf.train.Checkpoint(alpha=tf.Variable(alphas.pop(), trainable=False, name="lora_alpha"))
    if seed_states:
        objects["dropout_rng"] = tf.train.Checkpoint(**{f"rng_{i}": v for i, v in enumerate(seed_states)})
    return objects


def _chief_checkpoint_dir(model_dir, strategy):
    task_type, task_id, is_chief = worker_info(strategy)
    if is_chief:
        return model_dir, True
    # Non-chief workers take part in the save (it may run collectives) but write to a scratch directory.
    return os.path.join(model_dir, f".tmp_{task_type}_{task_id}"), False


def _single_device(strategy):
    return isinstance(strategy, tf.distribute.OneDeviceStrategy) or (
        strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy())


def _iterator_is_checkpointable(strategy):
    # tf.distribute's distributed iterators are not trackable in TF 2.20 (and TPU iterators never are), so
    # the input position is saved only on one device; elsewhere a resumed job restarts its input pipeline,
    # as the original TPUEstimator did on every `train()` call.
    return _single_device(strategy)


def _has_iterator_state(prefix):
    return any(name.startswith("iterator/") for name, _ in tf.train.list_variables(prefix))


def _global_batch_size(element_spec, num_replicas, accumulation):
    specs = tf.nest.flatten(element_spec)
    if not specs or specs[0].shape.rank is None:
        return None
    shape = specs[0].shape
    if accumulation > 1:
        if shape.rank < 2 or shape[0] is None or shape[1] is None:
            return None
        return shape[0] * shape[1] * num_replicas
    return None if shape[0] is None else shape[0] * num_replicas


def _format_seconds(seconds):
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def run_training(model, optimizer, loss_fn, train_dataset_fn, strategy, model_dir, num_train_steps,
                 iterations_per_loop=1000, save_checkpoints_steps=1000, keep_checkpoint_max=5,
                 gradient_accumulation_steps=1, jit_compile=False, checkpoint_iterator=True, loop_callback=None,
                 positional_input=False):
    """Trains `model` to `num_train_steps` optimizer steps, resuming from the latest checkpoint in `model_dir`.

    Args:
        model: a Keras model created under `strategy.scope()`.
        optimizer: a Keras optimizer created under `strategy.scope()` (`optimization.create_optimizer`).
        loss_fn: `loss_fn(model, features, training) -> (loss, {name: scalar})`: the mean loss over the
            replica's batch and extra scalars to log.
        train_dataset_fn: `train_dataset_fn(input_context) -> tf.data.Dataset` of per-replica batches
            (`input_context.get_per_replica_batch_size(global_batch)`; with gradient accumulation, batches of
            `global_batch / (replicas * gradient_accumulation_steps)`), repeated, static shapes. With
            `positional_input`, `train_dataset_fn(input_context, start_batch)`: the same dataset without its
            first `start_batch` batches.
        strategy: the `tf.distribute.Strategy`.
        model_dir: directory of the checkpoints and TensorBoard summaries.
        num_train_steps: int, the last global step (optimizer updates).
        iterations_per_loop: int, steps per `tf.function` call (and per log line).
        save_checkpoints_steps: int, checkpoint every this many steps (and at the end); 0 or None = end only.
        keep_checkpoint_max: int, checkpoints kept.
        gradient_accumulation_steps: int, micro-batches summed per optimizer step.
        jit_compile: bool, compile the forward/backward pass with XLA.
        checkpoint_iterator: bool, save the input position in the checkpoints (where the strategy allows).
        loop_callback: optional `fn(stats)` called after each loop with a dict: `global_step`, `loss`, `learning_rate`,
            `gradient_norm`, `step_time` (s), `examples_per_second`, `seconds`, and the `loss_fn` scalars.
        positional_input: bool, `train_dataset_fn` can start at a batch (a seeded positional input): a
            resumed run whose checkpoint holds no iterator state starts each input pipeline at batch
            `step * gradient_accumulation_steps * replicas per pipeline`, so it reads what an uninterrupted
            run reads after that step, under every strategy.

    Returns:
        dict with `global_step`, `loss` (mean over the last loop) and the mean of each `loss_fn` scalar.
    """
    for name, value in (("num_train_steps", num_train_steps), ("iterations_per_loop", iterations_per_loop),
                        ("gradient_accumulation_steps", gradient_accumulation_steps),
                        ("keep_checkpoint_max", keep_checkpoint_max)):
        if value is None or int(value) < 1:
            raise InputError(f"`{name}` must be a positive integer. Received: {name}={value}.")
    accumulation = int(gradient_accumulation_steps)
    tf.io.gfile.makedirs(model_dir)
    dataset_fn = _step_dataset_fn(train_dataset_fn, accumulation, positional_input)
    trainable_variables = model.trainable_variables
    with strategy.scope():
        optimizer.build(trainable_variables)

    # The weights and the step are restored before the input is built: a positional input starts at the step.
    checkpoint_dir, is_chief = _chief_checkpoint_dir(model_dir, strategy)
    objects = dict(checkpoint_objects(model), optimizer=optimizer)
    latest = _restore_newest_intact(objects, model_dir, is_chief)
    step = int(optimizer.iterations.numpy())
    if step >= num_train_steps:
        logging.info("Global step %d >= num_train_steps %d: nothing to train.", step, num_train_steps)
        return {"global_step": step}

    iterator, global_batch = _input_iterator(strategy, dataset_fn, objects, latest, step, accumulation,
                                             checkpoint_iterator, positional_input)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(**objects), checkpoint_dir,
                                         max_to_keep=keep_checkpoint_max, checkpoint_name=CHECKPOINT_NAME)
    gradient_fn = _gradient_fn(model, optimizer, loss_fn, trainable_variables,
                               strategy.num_replicas_in_sync * accumulation, accumulation, jit_compile)
    # The metric names are known after one trace of the loss on a replica's element spec.
    metric_names = _metric_names(loss_fn, model, dataset_fn, strategy.num_replicas_in_sync, accumulation, strategy)
    stop = tf.Variable(False, trainable=False, name="interrupt_requested")   # set by SIGINT/SIGTERM (`interrupt`)
    train_loop = _train_loop_fn(strategy, optimizer, gradient_fn, trainable_variables, metric_names, stop)
    logging.info("***** Running training: steps %d -> %d, %d replica(s), global batch %s *****", step,
                 num_train_steps, strategy.num_replicas_in_sync, global_batch)
    writer = tf.summary.create_file_writer(model_dir) if is_chief else tf.summary.create_noop_writer()
    try:   # a signal lets the step in flight finish and starts no other
        with interrupt.listening(lambda signum: stop.assign(True)):
            return _train_loops(train_loop, iterator, optimizer, manager, writer, num_train_steps,
                                iterations_per_loop, int(save_checkpoints_steps or 0), global_batch, model_dir,
                                None if is_chief else checkpoint_dir, loop_callback)
    finally:
        writer.close()


DAMAGED_SUFFIX = "-damaged"
_ORPHAN_DATA = re.compile(r"^(model\.ckpt-\d+)\.data-\d{5}-of-\d{5}$")


def _restore_newest_intact(objects, model_dir, is_chief):
    """Restores `objects` from the newest intact `model.ckpt-<step>` of `model_dir`; returns its prefix, or None
    when `model_dir` has no checkpoint.

    Checkpoints are found from their own files (`list_checkpoints`), not from the `checkpoint` state file, which
    a cut write can damage (TensorFlow then ignores it and a run would start again from step 0 over intact
    checkpoints); a damaged state file is written again from what is on disk. A damaged checkpoint (a truncated
    `.data-*` file, a checksum that does not match) is moved aside to `model.ckpt-<step>-damaged.*` (never
    deleted) by the chief, with a warning naming both, and the one before it is restored: a job preempted while
    writing its last checkpoint goes on from the one before. When every checkpoint is damaged the run stops
    (`InputError`): the variables may hold a part of a damaged checkpoint.
    """
    moved = _move_orphans_aside(model_dir) if is_chief else []
    checkpoints = list_checkpoints(model_dir)
    for step, prefix in reversed(checkpoints):
        try:
            check_readable(prefix)
            # Checked before the restore, which would assign the optimizer's slots to other variables.
            mismatch = adapter_mismatch(objects["model"], prefix)
            if mismatch is None:
                tf.train.Checkpoint(**objects).restore(prefix).expect_partial()
        except (InputError, tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:
            reason = str(e).splitlines()[0] if isinstance(e, InputError) else tf_error_text(e)
            aside = move_aside(prefix) if is_chief else prefix
            moved.append(prefix)
            logging.warning("Checkpoint %s is damaged (%s): moved aside to %s; trying the one before it.",
                            prefix, reason, aside)
            continue
        if mismatch is not None:
            raise InputError(mismatch)
        logging.info("Resuming from %s.", prefix)
        named = state_file_latest(model_dir) if is_chief else prefix
        if named != prefix:
            if named not in moved:   # a state file naming a checkpoint moved aside just now is not to blame
                logging.warning("The `checkpoint` state file of %s does not name %s (damaged or stale): writing it "
                                "again from the checkpoints on disk.", model_dir, prefix)
            write_state_file(model_dir, [p for s_, p in checkpoints if s_ <= step])
        return prefix
    if checkpoints:
        raise InputError(f"Every checkpoint in {model_dir} is damaged (moved aside to model.ckpt-<step>"
                         f"{DAMAGED_SUFFIX}.*): the same command now starts again from the initial weights; or "
                         "copy intact checkpoints back.")
    return None


def _move_orphans_aside(model_dir):
    """Moves aside (`move_aside`) the `model.ckpt-<step>.data-*` files whose `.index` is gone (a deleted index,
    a copy that left it out), with a warning: the run would otherwise write that step again over them. Returns
    their prefixes."""
    if not tf.io.gfile.isdir(model_dir):
        return []
    names = tf.io.gfile.listdir(model_dir)
    prefixes = sorted({os.path.join(model_dir, match.group(1)) for match in map(_ORPHAN_DATA.match, names)
                       if match and match.group(1) + ".index" not in names})
    for prefix in prefixes:
        aside = move_aside(prefix)
        logging.warning("Checkpoint %s has no index (%s.index is missing): its data moved aside to %s.*; resuming "
                        "from the newest checkpoint before it.", prefix, os.path.basename(prefix), aside)
    return prefixes


def adapter_mismatch(model, prefix):
    """The error text when checkpoint `prefix` and `model` have LoRA adapters on a different number of layers or
    of another rank (resuming would leave the adapters out, start them again, or fail on their shapes), else
    None."""
    reader = CheckpointReader(prefix)
    saved = reader.tf2_adapters("model") if reader.is_tf2 else []   # TF1 names hold no adapters
    held = lora_adapters(model)
    if len(saved) != len(held) // 2:
        return (f"Checkpoint {prefix} holds LoRA adapters on {len(saved)} layers, the model on {len(held) // 2}: "
                "resume with the `lora_rank` and `lora_targets` of the run that wrote it, or train in another "
                "output directory.")
    if not saved:
        return None
    shape = reader.tf2_shape(f"model/{saved[0]}/lora_kernel_a")
    saved_rank, held_rank = (int(shape[-1]) if shape else None), int(held[0].shape[-1])
    if saved_rank == held_rank:
        return None
    return (f"Checkpoint {prefix} holds LoRA adapters of rank {saved_rank}, the model of rank {held_rank} "
            f"(--lora_rank={held_rank}): resume with --lora_rank={saved_rank}, or train in another output "
            "directory.")


def write_state_file(model_dir, prefixes):
    """Writes the `checkpoint` state file naming `prefixes` (the last one the latest) that still have their index:
    the `CheckpointState` text proto `tf.train.CheckpointManager` writes, with relative paths."""
    names = [os.path.basename(p) for p in prefixes if tf.io.gfile.exists(p + ".index")]
    write_text_atomic(os.path.join(model_dir, "checkpoint"), f'model_checkpoint_path: "{names[-1]}"\n'
                      + "".join(f'all_model_checkpoint_paths: "{name}"\n' for name in names))


def state_file_latest(model_dir):
    """The checkpoint the `checkpoint` state file names, or None (no file, or one that does not parse)."""
    return state_file_target(model_dir)


def move_aside(prefix):
    """Renames every file of checkpoint `prefix` to `<prefix>-damaged<suffix>` (the index first, so that the
    checkpoint is no longer listed), or to `<prefix>-damaged-2<suffix>`, `-3`, ... when an earlier damage of the
    same step was moved aside there (nothing moved aside is ever replaced); returns the new prefix."""
    directory, base = os.path.split(prefix)
    names = tf.io.gfile.listdir(directory)
    target, number = prefix + DAMAGED_SUFFIX, 1
    while any(name.startswith(os.path.basename(target) + ".") for name in names):
        number += 1
        target = f"{prefix}{DAMAGED_SUFFIX}-{number}"
    suffixes = sorted((name[len(base):] for name in names if name.startswith(base + ".")),
                      key=lambda suffix: suffix != ".index")
    for suffix in suffixes:
        tf.io.gfile.rename(prefix + suffix, target + suffix, overwrite=False)
    return target


def _train_loops(train_loop, iterator, optimizer, manager, writer, num_train_steps, iterations_per_loop, every,
                 global_batch, model_dir, scratch_dir, loop_callback):
    """Calls `train_loop` until `num_train_steps`, logging each call and checkpointing every `every` steps
    (0: at the end only); a non-chief worker's checkpoint goes to `scratch_dir`, removed after each save."""
    step = saved_step = start_step = int(optimizer.iterations.numpy())
    start_time = time.time()
    result = {"global_step": step}
    while step < num_train_steps and interrupt.requested() is None:
        loop_steps = min(iterations_per_loop, num_train_steps - step)
        if every > 0:
            loop_steps = min(loop_steps, (step // every + 1) * every - step)
        loop_start = time.time()
        outputs = train_loop(iterator, tf.constant(loop_steps, tf.int32))
        new_step = int(optimizer.iterations.numpy())
        if new_step == step:   # interrupted before the loop's first step
            break
        stats = _loop_stats(outputs, step, new_step, time.time() - loop_start, global_batch, model_dir)
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
            path = manager.save(checkpoint_number=step)
            saved_step = step
            logging.info("Saved checkpoint %s.", path)
            if scratch_dir is not None:
                tf.io.gfile.rmtree(scratch_dir)
    signum = interrupt.requested()
    if signum is not None:
        raise interrupt.Interrupted(signum, saved_step)
    return result


def _step_dataset_fn(train_dataset_fn, accumulation, positional_input):
    """`dataset_fn(input_context, start_step=0)`: the per-replica input with one element per optimizer step."""
    def dataset_fn(input_context, start_step=0):
        if positional_input:
            # Each step takes `accumulation` batches for each replica this pipeline feeds.
            replicas_per_pipeline = max(input_context.num_replicas_in_sync // input_context.num_input_pipelines, 1)
            dataset = train_dataset_fn(input_context, start_step * accumulation * replicas_per_pipeline)
        else:
            dataset = train_dataset_fn(input_context)
        if accumulation > 1:
            # [accumulation, micro_batch, ...]: one element per optimizer step.
            dataset = dataset.batch(accumulation, drop_remainder=True)
        return dataset
    return dataset_fn


def _input_iterator(strategy, dataset_fn, objects, latest, step, accumulation, checkpoint_iterator,
                    positional_input):
    """The training input's iterator, positioned after `step` where it can be, and the global batch size.

    Adds the iterator to the checkpoint `objects` where the strategy can save it, restoring its position
    from `latest`.
    """
    num_replicas = strategy.num_replicas_in_sync
    save_iterator = checkpoint_iterator and _iterator_is_checkpointable(strategy)
    restore_iterator = save_iterator and latest is not None and _has_iterator_state(latest)
    input_step = 0
    if step > 0 and not restore_iterator:
        if positional_input:
            input_step = step
            logging.info("Resuming the input by position: each input pipeline starts after the batches of %d "
                         "step(s).", step)
        else:
            logging.info("%s: the checkpoint holds no input position and the input is not positional (no seed): "
                         "the resumed job restarts the input pipeline.", type(strategy).__name__)
    if _single_device(strategy):
        # A plain tf.data iterator: `tf.train.Checkpoint` can save its position (distributed ones cannot).
        dataset = dataset_fn(tf.distribute.InputContext(), input_step).prefetch(tf.data.AUTOTUNE)
        iterator = iter(dataset)
        element_spec = dataset.element_spec
    else:
        distributed_dataset = strategy.distribute_datasets_from_function(
            lambda input_context: dataset_fn(input_context, input_step))
        iterator = iter(distributed_dataset)
        element_spec = dataset_fn(tf.distribute.InputContext(num_replicas_in_sync=num_replicas)).element_spec
    if save_iterator:
        objects["iterator"] = iterator
        if restore_iterator:
            tf.train.Checkpoint(iterator=iterator).restore(latest).expect_partial()
    elif checkpoint_iterator:
        logging.info("%s cannot checkpoint its input iterator: a resumed job %s.", type(strategy).__name__,
                     "rebuilds its seeded input at the restored step" if positional_input
                     else "restarts the input pipeline (unseeded input)")
    return iterator, _global_batch_size(element_spec, num_replicas, accumulation)


def _gradient_fn(model, optimizer, loss_fn, trainable_variables, loss_divisor, accumulation, jit_compile):
    """`fn(features) -> (loss, metrics, grads)` of one replica's step (its micro-batches summed).

    Replica losses are batch means: dividing each by `loss_divisor` (replicas x micro-batches) makes the sum
    of the gradients over replicas and micro-batches the gradient of the global-batch mean.
    """
    scale_loss = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)

    def compute_gradients(features):
        with tf.GradientTape() as tape:
            loss, metrics = loss_fn(model, features, True)
            scaled_loss = loss / float(loss_divisor)
            if scale_loss:
                scaled_loss = optimizer.scale_loss(scaled_loss)
        grads = tape.gradient(scaled_loss, trainable_variables)
        return loss, dict(metrics), grads

    def compute_accumulated(features):
        def micro_batch(i):
            return tf.nest.map_structure(lambda t: t[i], features)

        loss0, metrics0, grads0 = compute_gradients(micro_batch(0))
        grads0 = [tf.convert_to_tensor(g) for g in grads0]

        def body(i, loss_sum, metric_sums, grad_sums):
            loss, metrics, grads = compute_gradients(micro_batch(i))
            grad_sums = [s + tf.convert_to_tensor(g) for s, g in zip(grad_sums, grads)]
            metric_sums = {k: metric_sums[k] + tf.cast(metrics[k], tf.float32) for k in metric_sums}
            return i + 1, loss_sum + loss, metric_sums, grad_sums

        _, loss_sum, metric_sums, grads = tf.while_loop(
            lambda i, *_: i < accumulation, body,
            (tf.constant(1), loss0, {k: tf.cast(v, tf.float32) for k, v in metrics0.items()}, grads0))
        return (loss_sum / accumulation, {k: v / accumulation for k, v in metric_sums.items()}, grads)

    gradient_fn = compute_accumulated if accumulation > 1 else compute_gradients
    return tf.function(gradient_fn, jit_compile=True) if jit_compile else gradient_fn


def _train_loop_fn(strategy, optimizer, gradient_fn, trainable_variables, metric_names, stop):
    """The `tf.function` `train_loop(iterator, num_steps)`: up to `num_steps` steps, stopping after a
    non-finite one and before a step when the variable `stop` is set; returns `(loss_sum, metric_sums, steps,
    finite, last gradient norm, last learning rate)`."""
    albert_optimizer = inner_optimizer(optimizer)
    records_norm = hasattr(albert_optimizer, "gradient_norm")
    scale_loss = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)

    def replica_step(features):
        loss, metrics, grads = gradient_fn(features)
        if not records_norm:
            # Other Keras optimizers: the norm of this replica's gradient, for the logs only.
            norm = tf.linalg.global_norm([g for g in grads if g is not None])
            if scale_loss:
                norm = norm / tf.cast(optimizer.dynamic_scale, norm.dtype)
        # The rate this step uses: the schedule at the optimizer's `iterations` before the update.
        learning_rate = tf.cast(optimizer.learning_rate, tf.float32)
        optimizer.apply_gradients(zip(grads, trainable_variables))
        if records_norm:
            # The optimizer's pre-clip norm of the cross-replica gradient sum.
            norm = tf.identity(albert_optimizer.gradient_norm.value)
        return loss, metrics, tf.cast(norm, tf.float32), learning_rate

    def reduce_mean(value):
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None)

    @tf.function
    def train_loop(iterator, num_steps):
        loss_sum = tf.constant(0.0)
        metric_sums = {name: tf.constant(0.0) for name in metric_names}
        steps = tf.constant(0)
        finite = tf.constant(True)
        grad_norm = tf.constant(0.0)
        learning_rate = tf.constant(0.0)
        for _ in tf.range(num_steps):
            if stop.read_value():
                break
            loss, metrics, grad_norm, learning_rate = strategy.run(replica_step, args=(next(iterator),))
            loss = tf.cast(reduce_mean(loss), tf.float32)
            grad_norm = reduce_mean(grad_norm)
            learning_rate = reduce_mean(learning_rate)
            metric_sums = {name: metric_sums[name] + tf.cast(reduce_mean(metrics[name]), tf.float32)
                           for name in metric_names}
            loss_sum += loss
            steps += 1
            finite = tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(grad_norm))
            if not finite:
                break
        return loss_sum, metric_sums, steps, finite, grad_norm, learning_rate

    return train_loop


def _loop_stats(outputs, step, new_step, elapsed, global_batch, model_dir):
    """The statistics of one `train_loop` call from `step` to `new_step`; raises `FloatingPointError` after a
    non-finite step."""
    loss_sum, metric_sums, steps_run, finite, grad_norm, learning_rate = outputs
    steps_run = max(int(steps_run), 1)
    if not bool(finite):
        raise FloatingPointError(
            f"Non-finite loss or gradient at global step {new_step} (loss sum {float(loss_sum)}, gradient "
            f"norm {float(grad_norm)}). Training stopped; nothing was saved "
            f"after step {step}. Last checkpoint: {tf.train.latest_checkpoint(model_dir)}.")
    return {"loss": float(loss_sum) / steps_run,
            "metrics": {name: float(value) / steps_run for name, value in metric_sums.items()},
            "learning_rate": float(learning_rate), "gradient_norm": float(grad_norm),
            "step_time": elapsed / steps_run, "seconds": elapsed,
            "examples_per_second": (global_batch * int(outputs[2]) / elapsed if global_batch and elapsed > 0
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


def _metric_names(loss_fn, model, dataset_fn, num_replicas, accumulation, strategy):
    """Names of the scalars `loss_fn` returns, found by tracing it once on a replica's element spec."""
    context = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                         num_replicas_in_sync=num_replicas)
    spec = dataset_fn(context).element_spec
    if accumulation > 1:
        spec = tf.nest.map_structure(lambda s: tf.TensorSpec(s.shape[1:], s.dtype), spec)
    names = []

    def trace(features):
        _, metrics = loss_fn(model, features, False)
        names.extend(sorted(metrics))
        return tf.constant(0)

    with strategy.scope():
        tf.function(trace).get_concrete_function(spec)
    return names


def _copy_checkpoint(prefix, target_prefix):
    """Copies every file of checkpoint `prefix` to `target_prefix`, each atomically, the index last."""
    directory = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    suffixes = sorted((filename[len(base):] for filename in tf.io.gfile.listdir(directory)
                       if filename.startswith(base + ".")), key=lambda suffix: suffix == ".index")
    for suffix in suffixes:
        copy_atomic(prefix + suffix, target_prefix + suffix)
    return [target_prefix + suffix for suffix in suffixes]


def _remove_checkpoint(prefix):
    directory = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    for filename in tf.io.gfile.listdir(directory):
        if filename.startswith(base + "."):
            tf.io.gfile.remove(os.path.join(directory, filename))


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
            for target in _copy_checkpoint(prefix, os.path.join(output_dir, BEST_CHECKPOINT_NAME)):
                logging.info("saved %s", target)
        lines.append("=" * 50)
        write_text_atomic(eval_path, "\n".join(lines) + "\n")
        write_text_atomic(best_path, f"{step}:{best_step}:{best_value}")
    if delete_non_best:
        latest_step = checkpoints[-1][0]
        for step, prefix in checkpoints:
            if step not in (best_step, latest_step):
                logging.info("removing %s", prefix)
                _remove_checkpoint(prefix)
        # The `checkpoint` state file names only what is left (a later resume or `latest_checkpoint` reads it).
        if len(checkpoints) > 2 and tf.io.gfile.exists(os.path.join(model_dir, "checkpoint")):
            write_state_file(model_dir, [prefix for step, prefix in checkpoints if step in (best_step, latest_step)])
    return best_step, best_metrics
