"""The training step under KERAS_BACKEND=jax, for the loop of every backend (`loop.run_training`).

* One `jax.jit` step: the task's loss on the model's variables as values (a `keras.StatelessScope`, as
  `model.stateless_call` does), `jax.value_and_grad`, the micro-batches of gradient accumulation summed inside
  (`jax.lax.scan`), then `optimizer.stateless_apply` (the original's AdamW/LAMB, `optimization.py`): the global
  batch is one array split over the devices (`jax_distribution`), so the gradient is that of the global-batch
  mean, as the TensorFlow step's sum over replicas. Only the trainable variables get gradients (LoRA: the
  adapters and the head). The step compiles once per input shape (`compilations` in the loop's result).
* The step number is the optimizer's `iterations` after the step: a step that the loss scaler of
  `mixed_float16` skips (a gradient overflow) is not counted, as under TensorFlow.
* The input stays the task's `tf.data` pipeline, read as NumPy: each process reads the global batch's rows of
  its own (`Dataset.rebatch` + `shard`: process i takes the i-th part of each batch), so N processes read
  what one reads; one process can also save its `tf.data` iterator in the checkpoint.
* The values live in the step's state between checkpoints; before a save they are written back into the Keras
  variables, which every process gathers (sharded values) and process 0 writes (`run_checkpoint`).
"""

import keras
import numpy as np
import tensorflow as tf

from albert_tf.errors import InputError
from albert_tf.training import interrupt, run_checkpoint
from albert_tf.training.jax_distribution import AbortLine, data_sharding
from albert_tf.training.optimization import inner_optimizer


class JaxTrainer:
    """The step of `loop.run_training` on a `jax_distribution.JaxDevices` (see the module's docstring)."""

    def __init__(self, model, optimizer, loss_fn, devices, accumulation, jit_compile):
        del jit_compile         # the step is always compiled
        self.model, self.optimizer, self.loss_fn, self.devices = model, optimizer, loss_fn, devices
        self.accumulation = accumulation
        with devices.scope():       # the slots laid out as their variables
            optimizer.build(model.trainable_variables)
        self.is_chief = devices.is_chief
        self.saves_iterator = devices.process_count == 1
        self.checkpoint = run_checkpoint.RunCheckpoint(model, optimizer)
        self.trainable = list(model.trainable_variables)
        self.non_trainable = list(model.non_trainable_variables)
        self.compilations = 0
        self.global_batch = None
        self.state = None
        self._step_now = None
        self._saved = None
        # Several processes: an abort by XLA's collectives says in one line what happened (`AbortLine`).
        self.abort_line = AbortLine() if devices.process_count > 1 else None
        albert = inner_optimizer(optimizer)
        norm = getattr(albert, "gradient_norm", None)
        self.norm_index = next((i for i, v in enumerate(optimizer.variables) if v is norm), None)
        self.iterations_index = next(i for i, v in enumerate(optimizer.variables) if v is optimizer.iterations)

    def describe(self):
        return self.devices.describe()

    def global_step(self):
        if self._step_now is None:
            return int(np.asarray(self.optimizer.iterations.numpy()))
        return self._step_now

    def request_stop(self, signum):
        del signum              # the steps' loop reads `interrupt.requested()` before each step

    def restore(self, prefix):
        self.checkpoint.restore(prefix)

    def shape_mismatch(self, prefix):
        return self.checkpoint.shape_mismatch(prefix)

    def start_input(self, dataset_fn, start_step):
        """The iterator of this process's part of the input from step `start_step` (`dataset_fn(input_context,
        start_batch)`: one pipeline of the global batch / accumulation); builds the step."""
        devices = self.devices
        dataset = dataset_fn(tf.distribute.InputContext(), start_step * self.accumulation)
        batch = tf.nest.flatten(dataset.element_spec)[0].shape[0]
        if devices.process_count > 1:
            if batch is None or batch % devices.process_count:
                raise InputError(f"The batch of {batch} rows does not split over {devices.process_count} processes.")
            # Process i reads the i-th part of each batch: the processes together read the one-process batch.
            dataset = dataset.rebatch(batch // devices.process_count).shard(devices.process_count,
                                                                           devices.process_index)
        if self.accumulation > 1:
            dataset = dataset.batch(self.accumulation, drop_remainder=True)
        self.global_batch = None if batch is None else batch * self.accumulation
        self._saved = self.global_step() or None           # the checkpoint resumed from
        self._build()
        return iter(dataset.prefetch(tf.data.AUTOTUNE))

    def _build(self):
        import jax

        self.state = ([v.value for v in self.trainable], [v.value for v in self.non_trainable],
                      [v.value for v in self.optimizer.variables])
        # The new state keeps the layout of the state it replaces (the variables' own): the second call then
        # finds the first call's trace, whatever layout Keras gave the variables on a mesh of one device.
        state_layout = jax.tree_util.tree_map(lambda value: value.sharding, self.state)
        self.state = jax.device_put(self.state, state_layout)       # committed to it, as the step's outputs
        replicated = jax.sharding.NamedSharding(data_sharding(self.devices, 0, 1).mesh, jax.sharding.PartitionSpec())
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
                   "metrics": metrics, "iterations": optimizer_values[self.iterations_index]}
        return (trainable, non_trainable, optimizer_values), outputs

    def _run(self, batch):
        import jax

        arrays = {}
        axis = 1 if self.accumulation > 1 else 0
        for name, value in batch.items():
            value = np.asarray(value)
            sharding = data_sharding(self.devices, axis, value.ndim)
            arrays[name] = jax.make_array_from_process_local_data(sharding, value)
        self.state, outputs = self.step(self.state, arrays)
        return outputs

    def run_steps(self, iterator, num_steps):
        """Up to `num_steps` steps (fewer after a signal), read by the host after the last one (the host prepares
        the next batch while the devices run a step): `{loss_sum, metric_sums, steps, finite, gradient_norm,
        learning_rate}`, `steps` ending at the first non-finite one."""
        import jax

        if self.abort_line is not None:
            self.abort_line.say_step(self.devices.process_index, self.global_step(), self._saved)
            self.abort_line.install()
        outputs = []
        for _ in range(num_steps):
            if interrupt.requested() is not None:
                break
            outputs.append(self._run({name: value.numpy() for name, value in next(iterator).items()}))
        outputs = jax.device_get(outputs)       # waits for the last step: the loop's time is the steps' time
        kept = []
        for out in outputs:
            kept.append(out)
            if not (np.isfinite(float(out["loss"])) and np.isfinite(float(out["gradient_norm"]))):
                break
        if kept:
            self._step_now = int(kept[-1]["iterations"])
        last = kept[-1] if kept else {"gradient_norm": 0.0, "learning_rate": 0.0, "metrics": {}}
        return {"loss_sum": sum(float(out["loss"]) for out in kept),
                "metric_sums": {name: sum(float(out["metrics"][name]) for out in kept) for name in last["metrics"]},
                "steps": len(kept), "finite": len(kept) == len(outputs) and all(
                    np.isfinite(float(out["loss"])) and np.isfinite(float(out["gradient_norm"])) for out in kept),
                "gradient_norm": float(last["gradient_norm"]), "learning_rate": float(last["learning_rate"])}

    def open_saver(self, model_dir, keep, iterator):
        self._sync()
        self._saver = self.checkpoint.saver(model_dir, keep, iterator if self.saves_iterator else None,
                                            writes=self.is_chief)

    def _sync(self):
        """Writes the step's values back into the Keras variables."""
        if self.state is None:
            return
        trainable, non_trainable, optimizer_values = self.state
        for variables, values in ((self.trainable, trainable), (self.non_trainable, non_trainable),
                                  (self.optimizer.variables, optimizer_values)):
            for variable, value in zip(variables, values):
                variable.assign(value)

    def finish(self):
        """Leaves the trained values in the model's variables."""
        if self.abort_line is not None:
            self.abort_line.remove()
        self._sync()

    def save(self, step):
        self._sync()
        path = self._saver.save(step)       # every process: gathering sharded values is collective
        self._saved = step
        return path

    def extras(self):
        return {"compilations": self.compilations}
