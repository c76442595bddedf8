"""The training loop under KERAS_BACKEND=jax, beside the TensorFlow one (`loop.py`), with the same contract.

* One `jax.jit` step: the task's loss on the model's variables as values (a `keras.StatelessScope`, as
  `model.stateless_call` does), `jax.value_and_grad`, the micro-batches of gradient accumulation summed inside
  (`jax.lax.scan`), then `optimizer.stateless_apply` (the original's AdamW/LAMB, `optimization.py`): the global
  batch is one array split over the devices (`jax_distribution`), so the gradient is that of the global-batch
  mean, as the TensorFlow loop's sum over replicas. Only the trainable variables get gradients (LoRA: the
  adapters and the head). The step compiles once per input shape (`result["compilations"]`).
* The input stays the task's `tf.data` pipeline, read as NumPy: each process reads the global batch's rows of
  its own (`Dataset.rebatch` + `shard`: process i takes the i-th part of each batch), so N processes read
  what one reads; seeded inputs resume by position, and one process also saves its `tf.data` iterator in the
  checkpoint, as the TensorFlow loop on one device.
* Checkpoints `model.ckpt-<step>` in the TensorFlow runners' format (`checkpoints.object_graph`: same keys,
  so either backend resumes the other's run), every `save_checkpoints_steps` and at the end, `keep_checkpoint_max`
  kept; resume from the newest intact one, a damaged one moved aside (`loop`'s helpers); SIGINT/SIGTERM finish the
  step in flight, save and raise `interrupt.Interrupted`; the progress line and TensorBoard scalars of `loop.py`;
  a non-finite loss stops the run before anything is saved. Process 0 writes; every process takes part in
  gathering sharded values.
"""

import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from albert_tf.checkpoints import object_graph
from albert_tf.checkpoints.restore import check_readable
from albert_tf.errors import InputError, tf_error_text
from albert_tf.training import interrupt, loop
from albert_tf.training.jax_distribution import data_sharding
from albert_tf.training.optimization import inner_optimizer


def run_training(model, optimizer, loss_fn, train_dataset_fn, devices, model_dir, num_train_steps,
                 iterations_per_loop=1000, save_checkpoints_steps=1000, keep_checkpoint_max=5,
                 gradient_accumulation_steps=1, checkpoint_iterator=True, positional_input=False,
                 loop_callback=None):
    """Trains `model` to `num_train_steps` under JAX, resuming from the newest intact checkpoint of `model_dir`.

    Arguments as `loop.run_training`, but `devices` (`jax_distribution.JaxDevices`) in place of the strategy, and
    `train_dataset_fn(input_context, start_batch)` gives batches of the global batch / accumulation (one input
    pipeline, `input_context` of one pipeline). Returns `global_step`, `loss`, the loss's scalars and
    `compilations` (how many times the step was traced).
    """
    for name, value in (("num_train_steps", num_train_steps), ("iterations_per_loop", iterations_per_loop),
                        ("gradient_accumulation_steps", gradient_accumulation_steps),
                        ("keep_checkpoint_max", keep_checkpoint_max)):
        if value is None or int(value) < 1:
            raise InputError(f"`{name}` must be a positive integer. Received: {name}={value}.")
    accumulation = int(gradient_accumulation_steps)
    tf.io.gfile.makedirs(model_dir)
    with devices.scope():       # the slots laid out as their variables
        optimizer.build(model.trainable_variables)
    root = object_graph.checkpoint_root(model, optimizer)
    latest = _restore_newest_intact(root, model, model_dir, devices.is_chief)
    step = int(optimizer.iterations.numpy())
    if step >= num_train_steps:
        logging.info("Global step %d >= num_train_steps %d: nothing to train.", step, num_train_steps)
        return {"global_step": step}
    iterator, extra = _input(train_dataset_fn, devices, latest, step, accumulation, checkpoint_iterator,
                             positional_input)
    mirror = object_graph.Mirror(root, **extra)
    manager = tf.train.CheckpointManager(mirror.checkpoint, model_dir, max_to_keep=keep_checkpoint_max,
                                         checkpoint_name=loop.CHECKPOINT_NAME)
    trainer = _Trainer(model, optimizer, loss_fn, accumulation, devices)
    logging.info("***** Running training under JAX: steps %d -> %d, %s *****", step, num_train_steps,
                 devices.describe())
    writer = tf.summary.create_file_writer(model_dir) if devices.is_chief else tf.summary.create_noop_writer()
    try:
        with interrupt.listening(lambda signum: None):
            result = _train_loops(trainer, iterator, mirror, manager, writer, num_train_steps,
                                  iterations_per_loop, int(save_checkpoints_steps or 0), devices, model_dir,
                                  loop_callback)
    finally:
        writer.close()
    return dict(result, compilations=trainer.compilations)


def _restore_newest_intact(root, model, model_dir, is_chief):
    """`loop._restore_newest_intact` for the JAX loop: the newest readable checkpoint restored (through
    `object_graph.restore`, which assigns nothing from a checkpoint it cannot read whole), damaged ones moved
    aside by the chief; returns the prefix restored, or None."""
    checkpoints = loop.list_checkpoints(model_dir)
    for step, prefix in reversed(checkpoints):
        try:
            check_readable(prefix)
            mismatch = loop.adapter_mismatch(model, prefix)
            if mismatch is None:
                object_graph.restore(prefix, root)
        except (InputError, tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:
            reason = str(e).splitlines()[0] if isinstance(e, InputError) else tf_error_text(e)
            aside = loop.move_aside(prefix) if is_chief else prefix
            logging.warning("Checkpoint %s is damaged (%s): moved aside to %s; trying the one before it.",
                            prefix, reason, aside)
            continue
        if mismatch is not None:
            raise InputError(mismatch)
        logging.info("Resuming from %s.", prefix)
        if is_chief and loop.state_file_latest(model_dir) != prefix:
            logging.warning("The `checkpoint` state file of %s does not name %s (damaged or stale): writing it "
                            "again from the checkpoints on disk.", model_dir, prefix)
            loop.write_state_file(model_dir, [p for s_, p in checkpoints if s_ <= step])
        return prefix
    if checkpoints:
        raise InputError(f"Every checkpoint in {model_dir} is damaged (moved aside to model.ckpt-<step>"
                         f"{loop.DAMAGED_SUFFIX}.*): the same command now starts again from the initial weights; "
                         "or copy intact checkpoints back.")
    return None


def _input(train_dataset_fn, devices, latest, step, accumulation, checkpoint_iterator, positional_input):
    """The iterator of this process's part of the input, positioned after `step` where it can be, and the extra
    objects of the checkpoint (`iterator` with one process)."""
    save_iterator = checkpoint_iterator and devices.process_count == 1
    restore_iterator = (save_iterator and latest is not None
                        and any(name.startswith("iterator/") for name, _ in tf.train.list_variables(latest)))
    start_batch = 0
    if step > 0 and not restore_iterator:
        if positional_input:
            start_batch = step * accumulation
            logging.info("Resuming the input by position: it starts after the batches of %d step(s).", step)
        else:
            logging.info("The checkpoint holds no input position and the input is not positional (no seed): the "
                         "resumed job restarts the input pipeline.")
    dataset = train_dataset_fn(tf.distribute.InputContext(), start_batch)
    if devices.process_count > 1:
        batch = tf.nest.flatten(dataset.element_spec)[0].shape[0]
        if batch is None or batch % devices.process_count:
            raise InputError(f"The batch of {batch} rows does not split over {devices.process_count} processes.")
        # Process i reads the i-th part of each batch: the processes together read the one-process batch.
        dataset = dataset.rebatch(batch // devices.process_count).shard(devices.process_count,
                                                                       devices.process_index)
    if accumulation > 1:
        dataset = dataset.batch(accumulation, drop_remainder=True)
    iterator = iter(dataset.prefetch(tf.data.AUTOTUNE))
    if restore_iterator:
        tf.train.Checkpoint(iterator=iterator).restore(latest).expect_partial()
    return iterator, ({"iterator": iterator} if save_iterator else {})


class _Trainer:
    """The jitted step over the variables' values: `run(batch)` makes one optimizer step; `sync()` writes the
    values back into the Keras variables (for a checkpoint)."""

    def __init__(self, model, optimizer, loss_fn, accumulation, devices):
        import jax

        self.model, self.optimizer, self.devices = model, optimizer, devices
        self.trainable = list(model.trainable_variables)
        self.non_trainable = list(model.non_trainable_variables)
        self.compilations = 0
        self.accumulation = accumulation
        self.state = ([v.value for v in self.trainable], [v.value for v in self.non_trainable],
                      [v.value for v in optimizer.variables])
        albert = inner_optimizer(optimizer)
        norm = getattr(albert, "gradient_norm", None)
        self.norm_index = next((i for i, v in enumerate(optimizer.variables) if v is norm), None)
        self.loss_fn = loss_fn
        self.global_batch = None
        # The new state keeps the layout of the state it replaces (the variables' own): the second call then
        # finds the first call's trace, whatever layout Keras gave the variables on a mesh of one device.
        state_layout = jax.tree_util.tree_map(lambda value: value.sharding, self.state)
        self.state = jax.device_put(self.state, state_layout)       # committed to it, as the step's outputs
        replicated = jax.sharding.NamedSharding(data_sharding(devices, 0, 1).mesh, jax.sharding.PartitionSpec())
        self.step = jax.jit(self._step, donate_argnums=(0,), out_shardings=(state_layout, replicated))

    def _loss(self, trainable, non_trainable, optimizer_values, features):
        mapping = (list(zip(self.trainable, trainable)) + list(zip(self.non_trainable, non_trainable))
                   + list(zip(self.optimizer.variables, optimizer_values)))
        with keras.StatelessScope(state_mapping=mapping) as scope:
            loss, metrics = self.loss_fn(self.model, features, True)
            scaled = loss / float(self.accumulation)
            if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
                scaled = self.optimizer.scale_loss(scaled)
        non_trainable = [scope.get_current_value(v) for v in self.non_trainable]
        metrics = {name: keras.ops.cast(value, "float32") for name, value in dict(metrics).items()}
        return scaled, (keras.ops.cast(loss, "float32"), metrics, non_trainable)

    def _step(self, state, batch):
        import jax

        self.compilations += 1                    # runs only while tracing
        trainable, non_trainable, optimizer_values = state
        grad_fn = jax.value_and_grad(self._loss, has_aux=True)
        if self.accumulation == 1:
            (_, (loss, metrics, non_trainable)), grads = grad_fn(trainable, non_trainable, optimizer_values, batch)
        else:
            def micro(carry, features):
                grads_sum, non_trainable_now = carry
                (_, (loss, metrics, non_trainable_next)), grads = grad_fn(trainable, non_trainable_now,
                                                                          optimizer_values, features)
                return ([a + b for a, b in zip(grads_sum, grads)], non_trainable_next), (loss, metrics)

            zeros = [jax.numpy.zeros_like(v) for v in trainable]
            (grads, non_trainable), (losses, metric_rows) = jax.lax.scan(micro, (zeros, non_trainable), batch)
            loss = losses.mean()
            metrics = {name: value.mean() for name, value in metric_rows.items()}
        # The rate this step uses: the schedule at `iterations` before the update.
        with keras.StatelessScope(state_mapping=list(zip(self.optimizer.variables, optimizer_values))):
            learning_rate = keras.ops.cast(inner_optimizer(self.optimizer).learning_rate, "float32")
        trainable, optimizer_values = self.optimizer.stateless_apply(optimizer_values, grads, trainable)
        if self.norm_index is not None:
            norm = optimizer_values[self.norm_index]
        else:
            norm = jax.numpy.sqrt(sum(jax.numpy.sum(jax.numpy.square(g)) for g in grads))
        outputs = {"loss": loss, "gradient_norm": norm.astype("float32"), "learning_rate": learning_rate,
                   "metrics": metrics}
        return (trainable, non_trainable, optimizer_values), outputs

    def run(self, batch):
        import jax

        arrays = {}
        axis = 1 if self.accumulation > 1 else 0
        for name, value in batch.items():
            value = np.asarray(value)
            self.global_batch = value.shape[axis] * self.devices.process_count * self.accumulation
            sharding = data_sharding(self.devices, axis, value.ndim)
            arrays[name] = jax.make_array_from_process_local_data(sharding, value)
        self.state, outputs = self.step(self.state, arrays)
        return outputs

    def sync(self):
        trainable, non_trainable, optimizer_values = self.state
        for variables, values in ((self.trainable, trainable), (self.non_trainable, non_trainable),
                                  (self.optimizer.variables, optimizer_values)):
            for variable, value in zip(variables, values):
                variable.assign(value)


def _run_steps(trainer, iterator, count):
    """Up to `count` steps (fewer after a signal): their outputs, read by the host after the last step (not after
    each: the host prepares the next batch while the devices run a step)."""
    outputs = []
    for _ in range(count):
        if interrupt.requested() is not None:
            break
        batch = {name: value.numpy() for name, value in next(iterator).items()}
        outputs.append(trainer.run(batch))
    import jax

    return jax.device_get(outputs)       # waits for the last step: the loop's time is the steps' time


def _loop_stats(outputs, step, elapsed, global_batch, model_dir):
    """The statistics of the loop's steps after `step`; raises `FloatingPointError` naming the first step with a
    non-finite loss or gradient norm (nothing of that loop is saved)."""
    losses = [float(out["loss"]) for out in outputs]
    norms = [float(out["gradient_norm"]) for out in outputs]
    for index, (loss, norm) in enumerate(zip(losses, norms)):
        if not (np.isfinite(loss) and np.isfinite(norm)):
            raise FloatingPointError(
                f"Non-finite loss or gradient at global step {step + index + 1} (loss {loss}, gradient norm "
                f"{norm}). Training stopped; nothing was saved after step {step}. Last checkpoint: "
                f"{tf.train.latest_checkpoint(model_dir)}.")
    count = len(outputs)
    return {"loss": sum(losses) / count,
            "metrics": {name: sum(float(out["metrics"][name]) for out in outputs) / count
                        for name in outputs[-1]["metrics"]},
            "learning_rate": float(outputs[-1]["learning_rate"]), "gradient_norm": norms[-1],
            "step_time": elapsed / count, "seconds": elapsed,
            "examples_per_second": global_batch * count / elapsed if global_batch and elapsed > 0 else float("nan")}


def _train_loops(trainer, iterator, mirror, manager, writer, num_train_steps, iterations_per_loop, every, devices,
                 model_dir, loop_callback):
    """`loop._train_loops` for the JAX step: loops of `iterations_per_loop` steps cut at checkpoint boundaries,
    a line and the scalars after each, a checkpoint every `every` steps (0: at the end) written by process 0."""
    step = saved_step = start_step = int(trainer.optimizer.iterations.numpy())
    start_time = time.time()
    result = {"global_step": step}
    while step < num_train_steps and interrupt.requested() is None:
        loop_steps = min(iterations_per_loop, num_train_steps - step)
        if every > 0:
            loop_steps = min(loop_steps, (step // every + 1) * every - step)
        loop_start = time.time()
        outputs = _run_steps(trainer, iterator, loop_steps)
        if not outputs:    # interrupted before the loop's first step
            break
        new_step = step + len(outputs)
        stats = _loop_stats(outputs, step, time.time() - loop_start, trainer.global_batch, model_dir)
        loop.report_loop(writer, stats, new_step, num_train_steps, (time.time() - start_time)
                          / max(new_step - start_step, 1) * (num_train_steps - new_step))
        step = new_step
        result = {"global_step": step, "loss": stats["loss"], "gradient_norm": stats["gradient_norm"],
                  **stats["metrics"]}
        if loop_callback is not None:
            loop_callback(dict(result, learning_rate=stats["learning_rate"], step_time=stats["step_time"],
                               examples_per_second=stats["examples_per_second"], seconds=stats["seconds"]))
        if (every > 0 and step % every == 0) or step >= num_train_steps or interrupt.requested() is not None:
            trainer.sync()
            mirror.update()                        # every process: gathering sharded values is collective
            if devices.is_chief:
                path = manager.save(checkpoint_number=step)
                logging.info("Saved checkpoint %s.", path)
            saved_step = step
    trainer.sync()
    signum = interrupt.requested()
    if signum is not None:
        raise interrupt.Interrupted(signum, saved_step)
    return result
