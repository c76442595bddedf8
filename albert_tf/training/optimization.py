"""The original ALBERT optimizers and learning-rate schedule (`optimization.py` and `lamb_optimizer.py` of the
original), as Keras 3 objects.

* `AlbertLearningRateSchedule`: polynomial decay counted from step 0 (`tf.train.polynomial_decay`, end 0,
  no cycle) with a linear warm-up to the *undecayed* peak, optionally shifted by `start_warmup_step`.
* `AdamWeightDecay` (`optimization.AdamWeightDecayOptimizer`) and `Lamb` (`lamb_optimizer.LAMBOptimizer`):
  Adam moments without bias correction, epsilon 1e-6, decoupled weight decay 0.01 added to the update,
  exclusions by `re.search` of `LayerNorm|layer_norm|bias` on the full variable path; LAMB multiplies the
  update by the trust ratio `||w|| / ||update||` (1.0 when either norm is 0), skipped for the excluded
  variables.
* Both clip the aggregated gradients by global norm 1.0 (`tf.clip_by_global_norm`) *after* the
  cross-replica sum, as the original clips the gradients of the whole (TPU-sharded) batch. The norm is the
  original's of the device it runs on (`dense_gradient_norm`): on CPU and GPU the original looks embeddings up with
  `tf.gather`, whose `IndexedSlices` gradient counts a repeated id once per occurrence in the norm; on TPU
  (`use_one_hot_embeddings`) the lookups are one-hot matmuls, whose dense gradient sums the repeats first. So does
  TensorFlow here (per occurrence, dense under `TPUStrategy`); JAX, which has no `IndexedSlices` and runs the
  TPU VMs, takes the dense norm.

They are `keras.optimizers.Optimizer`s that write out Keras's public `apply(grads, variables)` contract on
public Keras and `tf.distribute` APIs (`build`, `add_variable_from_reference`, the `learning_rate` and
`iterations` properties, `strategy.extended.update`): `model.compile(optimizer=create_optimizer(...))`
works, slots (`<path>_adam_m`, `<path>_adam_v`) and `iterations` are saved by `tf.train.Checkpoint`. A step
reads the learning rate (the schedule at `iterations`) before incrementing `iterations`, so step k
(1-based) uses `lr(k - 1)`, as the original on TPU.
"""

import functools
import re

import keras
import tensorflow as tf

from albert_tf.errors import InputError
from albert_tf.options import OPTIMIZERS

# `optimization.create_optimizer`: exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"].
DEFAULT_EXCLUDE = ("LayerNorm", "layer_norm", "bias")


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertLearningRateSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """The original `create_optimizer` learning rate as a function of the global step.

    `lr(step) = init_lr * (1 - min(step, N) / N) ** poly_power`; while
    `s = step - start_warmup_step < num_warmup_steps` (int32 arithmetic, as the original) it is
    `init_lr * s / num_warmup_steps` instead. Steps before `start_warmup_step` give a negative rate, as in
    the original.

    Args:
        init_lr: float, the peak learning rate.
        num_train_steps: int, N, the decay horizon.
        num_warmup_steps: int, 0 for no warm-up.
        poly_power: float, power of the polynomial decay.
        start_warmup_step: int, step at which the warm-up starts.
        end_learning_rate: float, the decay's end value (0.0 in the original).
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, poly_power=1.0, start_warmup_step=0,
                 end_learning_rate=0.0, name=None):
        if int(num_train_steps) <= 0:
            raise InputError(f"`num_train_steps` must be positive. Received: num_train_steps={num_train_steps}.")
        if int(num_warmup_steps) < 0:
            raise InputError(f"`num_warmup_steps` must be >= 0. Received: num_warmup_steps={num_warmup_steps}.")
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.poly_power = float(poly_power)
        self.start_warmup_step = int(start_warmup_step)
        self.end_learning_rate = float(end_learning_rate)
        self.name = name

    def __call__(self, step):
        # keras.ops: the same TensorFlow ops under the TensorFlow backend, and a schedule that JAX can trace.
        ops = keras.ops
        step_int = ops.cast(step, "int32")
        # tf.train.polynomial_decay(cycle=False): the step is clipped to the horizon.
        decay_step = ops.cast(ops.minimum(step_int, self.num_train_steps), "float32")
        fraction = 1.0 - decay_step / float(self.num_train_steps)
        learning_rate = ((self.init_lr - self.end_learning_rate) * ops.power(fraction, self.poly_power)
                         + self.end_learning_rate)
        if self.num_warmup_steps:
            warmup_step = step_int - self.start_warmup_step
            warmup_learning_rate = (self.init_lr * ops.cast(warmup_step, "float32")
                                    / float(self.num_warmup_steps))
            is_warmup = ops.cast(warmup_step < self.num_warmup_steps, "float32")
            learning_rate = (1.0 - is_warmup) * learning_rate + is_warmup * warmup_learning_rate
        return learning_rate

    def get_config(self):
        return {"init_lr": self.init_lr, "num_train_steps": self.num_train_steps,
                "num_warmup_steps": self.num_warmup_steps, "poly_power": self.poly_power,
                "start_warmup_step": self.start_warmup_step, "end_learning_rate": self.end_learning_rate,
                "name": self.name}


def variable_path(variable):
    """The full name used for the exclusion regexes: Keras 3 `variable.path`, else the TF name without `:0`."""
    path = getattr(variable, "path", None)
    if path is None:
        path = variable.name
    match = re.match(r"^(.*):\d+$", path)
    return match.group(1) if match else path


def _matches_any(patterns, name):
    return any(re.search(pattern, name) is not None for pattern in patterns or ())


@tf.function(jit_compile=True, autograph=False)
def _adam_lamb_update(gradient, scale, weight, m, v, learning_rate, beta_1, beta_2, epsilon, weight_decay_rate,
                      layer_adaptation):
    """One variable's step of the original `AdamWeightDecayOptimizer` (`layer_adaptation=False`) or
    `LAMBOptimizer` (True): returns `(next weight, next m, next v)`.

    `gradient * scale` is the clipped gradient; `update = m / (sqrt(v) + eps) + wd * w` (no bias correction),
    times LAMB's trust ratio `||w|| / ||update||` (1.0 when either norm is 0); `w - lr * update`. One XLA
    computation, so that the step's elementwise temporaries are not each a full-size tensor.
    """
    gradient = gradient * scale
    next_m = beta_1 * m + (1.0 - beta_1) * gradient
    next_v = beta_2 * v + (1.0 - beta_2) * tf.square(gradient)
    update = next_m / (tf.sqrt(next_v) + epsilon)
    if weight_decay_rate:
        update += weight_decay_rate * weight
    if layer_adaptation:
        w_norm = tf.norm(weight, ord=2)
        g_norm = tf.norm(update, ord=2)
        ratio = tf.where(w_norm > 0, tf.where(g_norm > 0, w_norm / g_norm, 1.0), 1.0)
        update = ratio * update
    return weight - learning_rate * update, next_m, next_v


def adam_lamb_update(gradient, scale, weight, m, v, learning_rate, beta_1, beta_2, epsilon, weight_decay_rate,
                     layer_adaptation):
    """`_adam_lamb_update` in `keras.ops`, for the backends other than TensorFlow (traced inside their `jit`)."""
    ops = keras.ops
    gradient = gradient * scale
    next_m = beta_1 * m + (1.0 - beta_1) * gradient
    next_v = beta_2 * v + (1.0 - beta_2) * ops.square(gradient)
    update = next_m / (ops.sqrt(next_v) + epsilon)
    if weight_decay_rate:
        update = update + weight_decay_rate * weight
    if layer_adaptation:
        w_norm = ops.sqrt(ops.sum(ops.square(weight)))
        g_norm = ops.sqrt(ops.sum(ops.square(update)))
        ratio = ops.where(w_norm > 0, ops.where(g_norm > 0, w_norm / g_norm, 1.0), 1.0)
        update = ratio * update
    return weight - learning_rate * update, next_m, next_v


def _tf_variable(variable):
    """The `tf.Variable` behind a Keras variable (or `variable` itself)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


class _BuiltVariables:
    """The variables an optimizer is built on, held outside Keras's and TensorFlow's tracking: they belong to
    the model's checkpoint, not the optimizer's."""

    def __init__(self, variables):
        self.variables = tuple(variables)
        # A Keras variable and the `tf.Variable` behind it name the same variable.
        self.indices = {}
        for i, variable in enumerate(self.variables):
            self.indices[id(variable)] = i
            self.indices[id(_tf_variable(variable))] = i

    def index_of(self, variable):
        index = self.indices.get(id(variable), self.indices.get(id(_tf_variable(variable))))
        if index is None:
            raise InputError(f"Variable {variable_path(variable)!r} is not one the optimizer was built on.")
        return index


def _sum_across_replicas(grads):
    """The gradients summed across the replicas of the current `tf.distribute` strategy (itself with one)."""
    replica_context = tf.distribute.get_replica_context()
    if replica_context is not None and tf.distribute.has_strategy() and (
            tf.distribute.get_strategy().num_replicas_in_sync > 1):
        return replica_context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    return grads


class _AlbertAdamBase(keras.optimizers.Optimizer):
    """Shared parts of `AdamWeightDecay` and `Lamb`: slots, exclusions, clipping after aggregation."""

    _use_layer_adaptation = False

    def __init__(self, learning_rate=0.001, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 exclude_from_weight_decay=DEFAULT_EXCLUDE, exclude_from_layer_adaptation=None,
                 clip_norm=1.0, dense_gradient_norm=None, name=None, **kwargs):
        for key in ("weight_decay", "global_clipnorm", "clipnorm", "clipvalue"):
            if kwargs.get(key) is not None:
                raise InputError(f"`{key}` is not used by the ALBERT optimizers: use `weight_decay_rate` and "
                                 f"`clip_norm`. Received: {key}={kwargs[key]}.")
        if kwargs.get("gradient_accumulation_steps"):
            raise InputError("Gradient accumulation belongs to the training loop "
                             "(`run_training(gradient_accumulation_steps=...)`), which clips the accumulated "
                             "gradient once. Received: "
                             f"gradient_accumulation_steps={kwargs['gradient_accumulation_steps']}.")
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay = list(exclude_from_weight_decay or [])
        # LAMBOptimizer: "exclude_from_layer_adaptation is set to exclude_from_weight_decay if the arg is None".
        self.exclude_from_layer_adaptation = (list(exclude_from_layer_adaptation)
                                              if exclude_from_layer_adaptation
                                              else list(self.exclude_from_weight_decay))
        self.clip_norm = None if clip_norm is None else float(clip_norm)
        # The clip's norm of an embedding lookup's gradient: True sums repeated ids first (the original on TPU),
        # False counts each occurrence (the original's `tf.gather` on CPU/GPU; TensorFlow only); None: True under
        # `TPUStrategy` and on the other Keras backends, False otherwise.
        self.dense_gradient_norm = None if dense_gradient_norm is None else bool(dense_gradient_norm)

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self.built_variables = _BuiltVariables(var_list)
        self._adam_m = []
        self._adam_v = []
        self._decay_flags = []
        self._adapt_flags = []
        # The global norm of the last aggregated gradient, before clipping (for summaries).
        self.gradient_norm = self.add_variable((), initializer="zeros", dtype="float32",
                                               aggregation="only_first_replica", name="gradient_norm")
        for variable in var_list:
            self._adam_m.append(self.add_variable_from_reference(variable, "adam_m"))
            self._adam_v.append(self.add_variable_from_reference(variable, "adam_v"))
            path = variable_path(variable)
            self._decay_flags.append(self.do_use_weight_decay(path))
            self._adapt_flags.append(self.do_layer_adaptation(path))

    def do_use_weight_decay(self, path):
        """Whether the variable named `path` gets weight decay (`_do_use_weight_decay`)."""
        if not self.weight_decay_rate:
            return False
        return not _matches_any(self.exclude_from_weight_decay, path)

    def do_layer_adaptation(self, path):
        """Whether LAMB's trust ratio applies to the variable named `path` (`_do_layer_adaptation`)."""
        return self._use_layer_adaptation and not _matches_any(self.exclude_from_layer_adaptation, path)

    def slots(self, variable):
        """`(adam_m, adam_v)`, the Keras slot variables of `variable` (one the optimizer was built on)."""
        index = self.built_variables.index_of(variable)
        return self._adam_m[index], self._adam_v[index]

    def weight_decay_flags(self):
        """For each variable the optimizer was built on, in order: whether it gets weight decay."""
        return list(self._decay_flags)

    def layer_adaptation_flags(self):
        """For each variable the optimizer was built on, in order: whether LAMB's trust ratio applies."""
        return list(self._adapt_flags)

    def apply(self, grads, trainable_variables=None):
        """One step of the original optimizer: Keras's public `apply` contract, written out.

        In a replica context the gradients are summed across replicas, then clipped by their global norm
        (the original clips the gradient of the whole batch); each variable is then updated through
        `tf.distribute`'s public `extended.update`, one variable's temporaries at a time on each device;
        `iterations` goes up by one.
        """
        grads = list(grads)
        if not grads:
            return
        if trainable_variables is None:
            if not self.built:
                raise InputError("`trainable_variables` must be given to `apply` before the optimizer is built "
                                 "(`optimizer.build(variables)`).")
            trainable_variables = list(self.built_variables.variables)
        else:
            trainable_variables = list(trainable_variables)
            if not self.built:
                with keras.name_scope(self.name, caller=self):
                    self.build(trainable_variables)
                self.built = True
        if len(grads) != len(trainable_variables):
            raise InputError(f"`apply` needs one gradient per variable. Received: {len(grads)} gradients for "
                             f"{len(trainable_variables)} variables.")
        pairs = [(grad, variable) for grad, variable in zip(grads, trainable_variables) if grad is not None]
        with keras.name_scope(self.name, caller=self):
            if pairs and keras.backend.backend() == "tensorflow":
                self._apply_pairs(pairs)
            elif pairs:
                self._apply_pairs_ops(pairs)
        self.iterations.assign_add(1)

    def _apply_pairs(self, pairs):
        grads = [grad for grad, _ in pairs]
        if self.loss_scale_factor is not None:
            grads = [grad / self.loss_scale_factor for grad in grads]
        grads = _sum_across_replicas(grads)
        dense = self.dense_gradient_norm
        if dense is None:
            dense = isinstance(tf.distribute.get_strategy(), tf.distribute.TPUStrategy)
        # An `IndexedSlices` gradient's values hold one row per occurrence of an id: their norm is the original's
        # on CPU/GPU; its dense form (the repeats summed) gives the one-hot lookups' norm, as on TPU.
        norm = tf.linalg.global_norm([tf.convert_to_tensor(g) for g in grads] if dense else grads)
        # The clip of `tf.clip_by_global_norm` (the same scale, the same products), applied in each variable's
        # update rather than to a clipped copy of every gradient at once.
        scale = tf.constant(1.0, norm.dtype)
        if self.clip_norm is not None:
            clip_norm = tf.constant(self.clip_norm, norm.dtype)
            scale = clip_norm * tf.minimum(1.0 / norm, 1.0 / clip_norm)
            scale = scale + (norm - norm)                             # NaN for a non-finite norm, as there
        self.gradient_norm.assign(norm)
        learning_rate = self.learning_rate
        strategy = tf.distribute.get_strategy()
        # On each device, a variable's update starts after the previous variable's assignments there (`chain`,
        # by device), so that the temporaries of one variable's update exist at a time instead of those of
        # every variable at once. The numbers are the same in any order.
        chain = None if tf.executing_eagerly() else {}
        for grad, variable in zip(grads, (variable for _, variable in pairs)):
            index = self.built_variables.index_of(variable)
            # Only tensors go through `args` (a merge call regroups them per replica); the index and the chain
            # are the same Python objects for every copy.
            strategy.extended.update(
                _tf_variable(variable), functools.partial(self._update_one, index=index, chain=chain),
                args=(grad, learning_rate, scale), group=False)
            if variable.constraint is not None:
                variable.assign(variable.constraint(variable))

    def _apply_pairs_ops(self, pairs):
        """`_apply_pairs` in `keras.ops` (JAX, PyTorch): the same clip and update on the variables (`stateless_apply`
        traces it); the gradients are those of the whole batch already (JAX's `jit` sums the devices' parts)."""
        ops = keras.ops
        if self.dense_gradient_norm is False:
            raise InputError("`dense_gradient_norm=False` (the clip's norm counting each occurrence of an embedding "
                             "id) needs TensorFlow's IndexedSlices gradients: leave it None on "
                             f"KERAS_BACKEND={keras.backend.backend()}.")
        grads = [ops.convert_to_tensor(grad) for grad, _ in pairs]
        if self.loss_scale_factor is not None:
            grads = [grad / self.loss_scale_factor for grad in grads]
        norm = ops.sqrt(sum(ops.sum(ops.square(ops.cast(grad, "float32"))) for grad in grads))
        scale = ops.ones((), "float32")
        if self.clip_norm is not None:
            scale = self.clip_norm * ops.minimum(1.0 / norm, 1.0 / self.clip_norm)
            scale = scale + (norm - norm)                             # NaN for a non-finite norm, as there
        self.gradient_norm.assign(norm)
        learning_rate = self.learning_rate
        for grad, (_, variable) in zip(grads, pairs):
            index = self.built_variables.index_of(variable)
            m, v = self._adam_m[index], self._adam_v[index]
            next_weight, next_m, next_v = adam_lamb_update(
                ops.cast(grad, variable.dtype), ops.cast(scale, variable.dtype), variable.value, m.value, v.value,
                ops.cast(learning_rate, variable.dtype), self.beta_1, self.beta_2, self.epsilon,
                self.weight_decay_rate if self._decay_flags[index] else 0.0, self._adapt_flags[index])
            variable.assign(next_weight)
            m.assign(next_m)
            v.assign(next_v)
            if variable.constraint is not None:
                variable.assign(variable.constraint(variable))

    def _update_one(self, variable, gradient, learning_rate, scale, index, chain):
        """The update of the built variable number `index`, run by `tf.distribute` on each of its copies."""
        gradient = tf.cast(tf.convert_to_tensor(gradient), variable.dtype)  # IndexedSlices -> dense, as TF1.
        if chain and chain.get(variable.device):
            with tf.control_dependencies(chain[variable.device]):
                gradient = tf.identity(gradient)
        weight, m, v = _tf_variable(variable), _tf_variable(self._adam_m[index]), _tf_variable(self._adam_v[index])
        next_weight, next_m, next_v = _adam_lamb_update(
            gradient, tf.cast(scale, variable.dtype), *(tf.convert_to_tensor(x) for x in (weight, m, v)),
            tf.cast(learning_rate, variable.dtype), self.beta_1, self.beta_2, self.epsilon,
            self.weight_decay_rate if self._decay_flags[index] else 0.0, self._adapt_flags[index])
        assigned = [weight.assign(next_weight), m.assign(next_m), v.assign(next_v)]
        if chain is not None:
            chain[variable.device] = assigned

    def get_config(self):
        config = super().get_config()
        config.update(weight_decay_rate=self.weight_decay_rate, beta_1=self.beta_1, beta_2=self.beta_2,
                      epsilon=self.epsilon, exclude_from_weight_decay=self.exclude_from_weight_decay,
                      exclude_from_layer_adaptation=self.exclude_from_layer_adaptation,
                      clip_norm=self.clip_norm, dense_gradient_norm=self.dense_gradient_norm)
        for key in ("weight_decay", "global_clipnorm", "clipnorm", "clipvalue", "gradient_accumulation_steps"):
            config.pop(key, None)
        return config


@keras.saving.register_keras_serializable(package="albert_tf")
class AdamWeightDecay(_AlbertAdamBase):
    """The original `AdamWeightDecayOptimizer`: `w -= lr * (m / (sqrt(v) + eps) + wd * w)`, no bias correction.

    Args:
        learning_rate: float or `LearningRateSchedule`.
        weight_decay_rate: float, decoupled weight decay (0.01 in `create_optimizer`).
        beta_1, beta_2, epsilon: Adam constants (0.9, 0.999, 1e-6).
        exclude_from_weight_decay: regexes searched in the variable path.
        exclude_from_layer_adaptation: unused by AdamW (kept for a common signature).
        clip_norm: float or None, global-norm clip of the aggregated gradients (1.0 in the original).
        dense_gradient_norm: bool or None, the clip's norm of embedding lookups' gradients: True sums a repeated
            id's rows first (the original on TPU), False counts each occurrence (the original on CPU/GPU;
            TensorFlow only); None: True under `TPUStrategy` and on JAX/PyTorch, False otherwise.
    """

    def __init__(self, learning_rate=0.001, name="AdamWeightDecayOptimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)


@keras.saving.register_keras_serializable(package="albert_tf")
class Lamb(_AlbertAdamBase):
    """The original `LAMBOptimizer`: the AdamW update times the trust ratio `||w|| / ||update||`.

    The ratio is 1.0 when either norm is 0 and for variables matching `exclude_from_layer_adaptation`
    (defaults to `exclude_from_weight_decay`). Same arguments as `AdamWeightDecay`.
    """

    _use_layer_adaptation = True

    def __init__(self, learning_rate=0.001, name="LAMBOptimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)


def create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer="adamw", poly_power=1.0,
                     start_warmup_step=0, loss_scale=None):
    """The original `optimization.create_optimizer` without the loss: returns a Keras optimizer.

    Call it under `strategy.scope()`. Under the `mixed_float16` global policy (or with `loss_scale=True`)
    the optimizer is wrapped in `keras.optimizers.LossScaleOptimizer` (dynamic loss scaling); the
    original has no loss scaling because it trains in float32/bfloat16.

    Args:
        init_lr: float, peak learning rate.
        num_train_steps: int, decay horizon.
        num_warmup_steps: int, linear warm-up steps (0 for none).
        optimizer: `"adamw"` or `"lamb"`.
        poly_power: float, power of the polynomial decay.
        start_warmup_step: int, step at which the warm-up starts.
        loss_scale: None (follow the global dtype policy), True or False.
    """
    if optimizer not in OPTIMIZERS:
        raise InputError(f"`optimizer` must be one of {OPTIMIZERS}. Received: optimizer={optimizer!r}.")
    schedule = AlbertLearningRateSchedule(init_lr, num_train_steps, num_warmup_steps, poly_power=poly_power,
                                          start_warmup_step=start_warmup_step)
    cls = Lamb if optimizer == "lamb" else AdamWeightDecay
    opt = cls(learning_rate=schedule, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
              exclude_from_weight_decay=list(DEFAULT_EXCLUDE), clip_norm=1.0)
    if loss_scale is None:
        loss_scale = keras.config.dtype_policy().name == "mixed_float16"
    if loss_scale:
        opt = keras.optimizers.LossScaleOptimizer(opt)
    return opt


def inner_optimizer(optimizer):
    """The ALBERT optimizer inside a `LossScaleOptimizer`, or `optimizer` itself."""
    return getattr(optimizer, "inner_optimizer", optimizer)
