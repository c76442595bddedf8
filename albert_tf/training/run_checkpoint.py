"""The `model.ckpt-<step>` checkpoints of a training run, the same files on every Keras backend.

A checkpoint holds:

* `model/...`: every weight of the model under its path in the model (`model/encoder/pooler/_kernel`, the
  shortest path of TensorFlow's object graph through the Keras layers), so that `tf.train.list_variables` and
  any tool reading by name see what each value is;
* `optimizer/slots/<the weight's path>/<slot>`: each optimizer slot under the weight it belongs to
  (`optimizer/slots/encoder/pooler/_kernel/adam_m`), and the optimizer's other variables under their names
  (`optimizer/iteration`, `optimizer/gradient_norm`; a loss-scale optimizer's own under `optimizer/loss_scale/`);
* `dropout_rng/rng_<i>` and `lora/alpha` as `checkpoint_objects` says, and the input's `iterator` where the run
  can save it.

Runs written before this layout (`tf.train.Checkpoint(model=, optimizer=)`, which keys the trainable weights
as `optimizer/_trainable_variables/<i>`: the optimizer's list is the shorter path) keep resuming: their layout
is recognised and restored as it was written.

Under TensorFlow the checkpoint is a `tf.train.Checkpoint` over the variables themselves; under JAX a mirror of
the same graph (`checkpoints.object_graph.Mirror`) into which the values are copied before each save.
"""

import keras
import tensorflow as tf

from albert_tf.checkpoints import object_graph
from albert_tf.layers.base import sublayers
from albert_tf.training.checkpoint_dir import CHECKPOINT_NAME, shape_mismatch_line
from albert_tf.training.optimization import inner_optimizer

_LEGACY_PREFIXES = ("optimizer/_trainable_variables/", "optimizer/_variables/")


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


def _slot_lists(optimizer, trainable):
    """`{slot name: [variable per trainable weight]}`: the optimizer's lists of one variable per weight, in the
    order of `trainable` (`_adam_m` -> `adam_m`, Keras' `_momentums` -> `momentums`)."""
    slots = {}
    for name, value in vars(optimizer).items():
        if (isinstance(value, (list, tuple)) and len(value) == len(trainable) and value
                and name.lstrip("_") != "trainable_variables"
                and all(isinstance(v, keras.Variable) and tuple(v.shape) == tuple(w.shape)
                        for v, w in zip(value, trainable))):
            slots[name.lstrip("_")] = list(value)
    return slots


def _named(variables, taken):
    tree = {}
    for variable in variables:
        name = variable.name.split("/")[-1]
        key, number = name, 1
        while key in tree or key in taken:
            number += 1
            key = f"{name}_{number}"
        tree[key] = variable
    return tree


def optimizer_tree(optimizer, model):
    """The optimizer's variables as a nested dict: `slots/<weight path>/<slot>`, the others by name."""
    inner = inner_optimizer(optimizer)
    trainable = list(model.trainable_variables)
    slot_lists = _slot_lists(inner, trainable)
    model_keys = {id(v): key for key, v in object_graph.variable_keys(object_graph.Node(model=model))}
    in_slots, slots = set(), {}
    for slot, variables in slot_lists.items():
        for weight, variable in zip(trainable, variables):
            node = slots
            for part in model_keys[id(weight)].split("/")[1:]:
                node = node.setdefault(part, {})
            node[slot] = variable
            in_slots.add(id(variable))
    inner_ids = {id(v) for v in inner.variables}
    tree = {"slots": slots} if slots else {}
    tree.update(_named([v for v in inner.variables if id(v) not in in_slots], tree))
    own = [v for v in optimizer.variables if id(v) not in inner_ids]
    if own:
        tree["loss_scale"] = _named(own, {})
    return tree


def _as_modules(tree):
    module = tf.Module()
    for name, value in tree.items():
        setattr(module, name, _as_modules(value) if isinstance(value, dict) else value)
    return module


def _as_nodes(tree):
    return object_graph.Node(**{name: _as_nodes(value) if isinstance(value, dict) else value
                                for name, value in tree.items()})


def is_legacy(prefix):
    """Whether checkpoint `prefix` has the layout of the runs written before weights were keyed by their paths."""
    return any(name.startswith(_LEGACY_PREFIXES) for name, _ in tf.train.list_variables(prefix))


class RunCheckpoint:
    """The checkpoint of a run's `model` and `optimizer` (built): `restore(prefix)` (either layout),
    `shape_mismatch(prefix)`, `saver(directory, keep, iterator, writes)`."""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.mirrored = keras.backend.backend() != "tensorflow"
        tree = optimizer_tree(optimizer, model)
        self.root = object_graph.checkpoint_root(model, optimizer=_as_nodes(tree))
        if not self.mirrored:
            self.objects = dict(checkpoint_objects(model), optimizer=_as_modules(tree))

    def _legacy_root(self):
        return object_graph.checkpoint_root(self.model, self.optimizer)

    def shape_mismatch(self, prefix):
        """The line for the first variable whose shape in `prefix` is not the run's, or None."""
        # The former layout's model weights are found through the model's paths (the optimizer's lists of it
        # are matched by position, which a shape check need not walk).
        root = object_graph.checkpoint_root(self.model) if is_legacy(prefix) else self.root
        found = object_graph.mismatched_shape(prefix, root)
        return None if found is None else shape_mismatch_line(prefix, *found)

    def restore(self, prefix):
        if self.mirrored:
            object_graph.restore(prefix, self._legacy_root() if is_legacy(prefix) else self.root)
        elif is_legacy(prefix):
            tf.train.Checkpoint(**checkpoint_objects(self.model), optimizer=self.optimizer).restore(
                prefix).expect_partial()
        else:
            tf.train.Checkpoint(**self.objects).restore(prefix).expect_partial()

    def saver(self, directory, keep, iterator=None, writes=True):
        """A `Saver` writing `model.ckpt-<step>` in `directory`, `keep` kept; `writes=False` (a JAX process other
        than the chief) only takes part in gathering the values."""
        extra = {"iterator": iterator} if iterator is not None else {}
        if self.mirrored:
            mirror = object_graph.Mirror(self.root, **extra)
            return Saver(mirror.checkpoint, directory, keep, mirror.update, writes)
        return Saver(tf.train.Checkpoint(**self.objects, **extra), directory, keep, None, writes)


class Saver:
    """`save(step)`: the run's checkpoint of `step` (its path; None where this process does not write)."""

    def __init__(self, checkpoint, directory, keep, before_save, writes):
        self.manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep,
                                                  checkpoint_name=CHECKPOINT_NAME)
        self.before_save, self.writes = before_save, writes

    def save(self, step):
        if self.before_save is not None:
            self.before_save()
        return self.manager.save(checkpoint_number=step) if self.writes else None
