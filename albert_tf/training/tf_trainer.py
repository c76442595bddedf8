"""The training step under Keras' TensorFlow backend, for the loop of every backend (`loop.run_training`).

Keras 3 `model.fit` fails under `MultiWorkerMirroredStrategy` and under `MirroredStrategy` with
`steps_per_execution > 1`, so the step is `strategy.run` inside a `tf.function` that plays the part of the
original `TPUEstimator`'s:

* up to `num_steps` optimizer steps per call (a `tf.range` loop over the distributed iterator), stopping
  before a step once a signal set the stop flag and after a non-finite one;
* per-replica loss divided by `num_replicas_in_sync` (each replica's loss is its own batch mean, as the
  original), gradients summed across replicas, clipped by global norm 1.0 and applied by the optimizer
  (`optimization.py`), so N replicas with batch B/N equal one device with batch B;
* `gradient_accumulation_steps` micro-batches per step: their gradients are summed before that single
  all-reduce / clip / update;
* the input: one `tf.data` pipeline per worker (`distribute_datasets_from_function`); on one device a plain
  iterator, which a checkpoint can hold (TF 2.20 cannot save distributed iterators);
* the variables saved and restored with `tf.train.Checkpoint` (`run_checkpoint`); non-chief workers of a
  multi-worker strategy take part in the save (it may run collectives) but write to a scratch directory.
"""

import os

import keras
import tensorflow as tf

from albert_tf.training import run_checkpoint
from albert_tf.training.distribution import worker_info
from albert_tf.training.optimization import inner_optimizer


def single_device(strategy):
    """Whether `strategy` runs on one device (a plain iterator, which a checkpoint can hold)."""
    return isinstance(strategy, tf.distribute.OneDeviceStrategy) or (
        strategy is tf.distribute.get_strategy() and not tf.distribute.has_strategy())


class TfTrainer:
    """The step of `loop.run_training` under a `tf.distribute` strategy (see the module's docstring)."""

    def __init__(self, model, optimizer, loss_fn, strategy, accumulation, jit_compile):
        self.model, self.optimizer, self.loss_fn, self.strategy = model, optimizer, loss_fn, strategy
        self.accumulation = accumulation
        self.jit_compile = jit_compile
        self.trainable_variables = model.trainable_variables
        with strategy.scope():
            optimizer.build(self.trainable_variables)
        task_type, task_id, self.is_chief = worker_info(strategy)
        self.scratch_dir = None if self.is_chief else f".tmp_{task_type}_{task_id}"
        self.saves_iterator = single_device(strategy)
        self.checkpoint = run_checkpoint.RunCheckpoint(model, optimizer)
        self.stop = tf.Variable(False, trainable=False, name="interrupt_requested")
        self.global_batch = None
        self._train_loop = None

    def describe(self):
        return f"{self.strategy.num_replicas_in_sync} replica(s)"

    def global_step(self):
        return int(self.optimizer.iterations.numpy())

    def request_stop(self, signum):
        del signum
        self.stop.assign(True)

    def restore(self, prefix):
        self.checkpoint.restore(prefix)

    def shape_mismatch(self, prefix):
        return self.checkpoint.shape_mismatch(prefix)

    def start_input(self, dataset_fn, start_step):
        """The iterator of the input from step `start_step`: `dataset_fn(input_context, start_batch)` gives a
        pipeline's per-replica batches. Sets `global_batch` and builds the step on the input's spec."""
        num_replicas = self.strategy.num_replicas_in_sync
        step_dataset_fn = self._step_dataset_fn(dataset_fn, start_step)
        if single_device(self.strategy):
            dataset = step_dataset_fn(tf.distribute.InputContext()).prefetch(tf.data.AUTOTUNE)
            iterator = iter(dataset)
            element_spec = dataset.element_spec
        else:
            iterator = iter(self.strategy.distribute_datasets_from_function(step_dataset_fn))
            element_spec = step_dataset_fn(tf.distribute.InputContext(num_replicas_in_sync=num_replicas)).element_spec
        self.global_batch = _global_batch_size(element_spec, num_replicas, self.accumulation)
        self._train_loop = self._build(element_spec, iterator)
        return iterator

    def _step_dataset_fn(self, dataset_fn, start_step):
        accumulation = self.accumulation

        def step_dataset_fn(input_context):
            # Each step takes `accumulation` batches for each replica this pipeline feeds.
            replicas_per_pipeline = max(input_context.num_replicas_in_sync // input_context.num_input_pipelines, 1)
            dataset = dataset_fn(input_context, start_step * accumulation * replicas_per_pipeline)
            if accumulation > 1:
                # [accumulation, micro_batch, ...]: one element per optimizer step.
                dataset = dataset.batch(accumulation, drop_remainder=True)
            return dataset
        return step_dataset_fn

    def _build(self, element_spec, iterator):
        del iterator
        gradient_fn = _gradient_fn(self.model, self.optimizer, self.loss_fn, self.trainable_variables,
                                   self.strategy.num_replicas_in_sync * self.accumulation, self.accumulation,
                                   self.jit_compile)
        # The metric names are known after one trace of the loss on a replica's element spec.
        metric_names = _metric_names(self.loss_fn, self.model, element_spec, self.accumulation, self.strategy)
        return _train_loop_fn(self.strategy, self.optimizer, gradient_fn, self.trainable_variables, metric_names,
                              self.stop)

    def run_steps(self, iterator, num_steps):
        """Up to `num_steps` steps: `{loss_sum, metric_sums, steps, finite, gradient_norm, learning_rate}`."""
        loss_sum, metric_sums, steps, finite, grad_norm, learning_rate = self._train_loop(
            iterator, tf.constant(num_steps, tf.int32))
        return {"loss_sum": float(loss_sum), "metric_sums": {k: float(v) for k, v in metric_sums.items()},
                "steps": int(steps), "finite": bool(finite), "gradient_norm": float(grad_norm),
                "learning_rate": float(learning_rate)}

    def open_saver(self, model_dir, keep, iterator):
        directory = model_dir if self.is_chief else os.path.join(model_dir, self.scratch_dir)
        self._saver = self.checkpoint.saver(directory, keep, iterator if self.saves_iterator else None)
        self._scratch = None if self.is_chief else directory

    def finish(self):
        """The variables are the model's own: nothing to write back."""

    def save(self, step):
        path = self._saver.save(step)
        if self._scratch is not None:
            tf.io.gfile.rmtree(self._scratch)
            return None
        return path

    def extras(self):
        return {}


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


def _metric_names(loss_fn, model, element_spec, accumulation, strategy):
    """Names of the scalars `loss_fn` returns, found by tracing it once on a replica's element spec."""
    spec = element_spec
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
