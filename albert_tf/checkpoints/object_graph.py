"""`model.ckpt-<step>` checkpoints of Keras objects under any Keras backend, in the TensorFlow runners' format.

The runs' checkpoints (`albert_tf.training.run_checkpoint`) are a graph of `Node`s over the model and its
optimizer's variables, mirrored here under JAX. Runs written before saved
`tf.train.Checkpoint(model=, optimizer=[, dropout_rng=, lora=, iterator=])`
(`albert_tf.training.loop.checkpoint_objects`): an object-based checkpoint whose keys are the shortest paths of
TensorFlow's object graph through the Keras objects (`model/encoder/pooler/_kernel`,
`optimizer/_trainable_variables/0`, `optimizer/_variables/3`, `optimizer/_iterations`, ...), each followed by
`/.ATTRIBUTES/VARIABLE_VALUE`. Under the JAX (or PyTorch) backend the Keras objects are not TensorFlow
trackables, so this module walks them as TensorFlow's object graph does and finds the same keys:

* a Keras layer's dependencies are its attributes that hold a layer or a variable, in the order they were set
  (its lists are Keras `TrackedList`s, which TensorFlow does not follow: a layer reached only through a list is
  saved under the attribute that also holds it);
* an optimizer's dependencies are its attributes that hold a variable or an optimizer, and its lists and dicts
  (`_variables`, `_trainable_variables`: `optimizer/_variables/<i>`, by position);
* a `tf.train.Checkpoint`'s dependencies are its keyword arguments in name order; each variable is saved once,
  under its shortest path (the first in that breadth-first order).

`write` builds a mirror of that graph out of `tf.Module`s and `tf.Variable`s holding the variables' values
and saves it with `tf.train.Checkpoint` (the TensorFlow tools and runners read it as one of their own);
`restore` assigns each variable the value saved under its key. `tests/training/test_jax_checkpoints.py`
compares the keys with a checkpoint of the TensorFlow backend.
"""

import collections

import keras
import numpy as np
import tensorflow as tf

from albert_tf.errors import InputError

VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def _is_variable(value):
    return isinstance(value, (keras.Variable, tf.Variable))


def _children(obj):
    """`[(name, child)]`, the TensorFlow object-graph dependencies of `obj` in their order."""
    if isinstance(obj, Node):
        return list(obj.children.items())
    if isinstance(obj, (list, tuple)):
        return [(str(i), value) for i, value in enumerate(obj)]
    if isinstance(obj, dict):
        return [(str(key), value) for key, value in obj.items()]
    if isinstance(obj, keras.layers.Layer):
        return [(name, value) for name, value in vars(obj).items()
                if isinstance(value, keras.layers.Layer) or _is_variable(value)]
    if isinstance(obj, keras.optimizers.Optimizer):
        return [(name, value) for name, value in vars(obj).items()
                if _is_variable(value) or isinstance(value, (keras.optimizers.Optimizer, list, tuple, dict))]
    return []


class Node:
    """An object of the checkpoint's graph that is no Keras object: `children` in the order `tf.train.Checkpoint`
    saves them (by name)."""

    def __init__(self, **children):
        self.children = dict(sorted(children.items()))


def _graph(root):
    """The object graph from `root` breadth-first: `(edges, keys)`, `edges` the `(object, [(name, child)])` of each
    object (no variable) in order, `keys` the `(key, variable)` of each variable under its first (shortest) path."""
    seen = {id(root)}
    queue = collections.deque([((), root)])
    edges, keys = [], []
    while queue:
        path, obj = queue.popleft()
        kept = [(name, child) for name, child in _children(obj) if _is_variable(child) or _children(child)]
        edges.append((obj, kept))
        for name, child in kept:
            if id(child) in seen:
                continue
            seen.add(id(child))
            if _is_variable(child):
                keys.append(("/".join(path + (name,)), child))
            else:
                queue.append((path + (name,), child))
    return edges, keys


def variable_keys(root):
    """`[(key, variable)]`: the checkpoint key (without `/.ATTRIBUTES/VARIABLE_VALUE`) of each variable reachable
    from `root` (a `Node`, e.g. `Node(model=model, optimizer=optimizer)`), in breadth-first order."""
    return _graph(root)[1]


def _seed_states(model):
    return [v for v in model.variables if getattr(v, "path", v.name).endswith("seed_generator_state")]


def _lora_alphas(model):
    """The `lora_alpha` of every layer of `model` with LoRA enabled (found by walking its attributes)."""
    alphas, seen, queue = set(), {id(model)}, collections.deque([model])
    while queue:
        layer = queue.popleft()
        if getattr(layer, "lora_enabled", False):
            alphas.add(float(layer.lora_alpha))
        for value in vars(layer).values():
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, keras.layers.Layer) and id(item) not in seen:
                    seen.add(id(item))
                    queue.append(item)
    return alphas


def checkpoint_root(model, optimizer=None, **extra):
    """The `Node` of the runners' checkpoint of `model` (and `optimizer`): `model`, `dropout_rng/rng_<i>` (the
    seed generators' states in the order of `model.variables`), `lora/alpha` when `model` has LoRA adapters, as
    `albert_tf.training.loop.checkpoint_objects`; `extra` are added as they are."""
    children = dict(extra, model=model)
    if optimizer is not None:
        children["optimizer"] = optimizer
    seeds = _seed_states(model)
    if seeds:
        children["dropout_rng"] = Node(**{f"rng_{i}": v for i, v in enumerate(seeds)})
    alphas = _lora_alphas(model)
    if len(alphas) > 1:
        raise ValueError(f"The LoRA adapters of {type(model).__name__} have different alphas {sorted(alphas)}: "
                         "a checkpoint holds one.")
    if alphas:
        children["lora"] = Node(alpha=tf.Variable(alphas.pop(), trainable=False, dtype=tf.float32))
    return Node(**children)


def _as_saved(value):
    """`value` in the dtype the TensorFlow backend saves: its 64-bit integers (the optimizer's `iterations`, the
    seed generators' states) are 32-bit under JAX without x64."""
    return value.astype(np.int64) if value.dtype in (np.int32, np.uint32) else value


def host_value(variable):
    """The value of a Keras variable as a NumPy array on this host (a sharded JAX array is gathered)."""
    value = variable.value if isinstance(variable, keras.Variable) else variable
    if isinstance(value, tf.Variable):
        return value.numpy()
    if keras.backend.backend() == "jax" and not getattr(value, "is_fully_addressable", True):
        if value.is_fully_replicated:
            return np.asarray(value.addressable_data(0))
        from jax.experimental import multihost_utils
        return np.asarray(multihost_utils.process_allgather(value, tiled=True))
    return keras.ops.convert_to_numpy(value)


class Mirror:
    """A `tf.train.Checkpoint` over a copy of `root`'s object graph: a `tf.Module` for each object, with every
    dependency of the object (so that `tf.train.Checkpoint(model=model).restore` finds a model's variables when
    the optimizer's lists hold them too), a `tf.Variable` for each variable (32-bit integers saved as
    TensorFlow's 64-bit). `update()` copies the variables' values into it; save it with `checkpoint` (or a
    `tf.train.CheckpointManager` over it). `extra` trackables (e.g. a `tf.data` iterator) are saved beside them."""

    def __init__(self, root, **extra):
        edges, self.keys = _graph(root)
        mirrors = {}
        for key, variable in self.keys:
            value = _as_saved(host_value(variable))
            mirrors[id(variable)] = tf.Variable(value, dtype=value.dtype, trainable=False, shape=value.shape)
        for obj, _ in edges[1:]:
            mirrors[id(obj)] = tf.Module()
        top = dict(extra)
        for obj, children in edges:
            for name, child in children:
                _attach(top if obj is root else mirrors[id(obj)], name, mirrors[id(child)])
        self.mirrors = [mirrors[id(variable)] for _, variable in self.keys]
        self.checkpoint = tf.train.Checkpoint(**top)

    def update(self):
        for (_, variable), mirror in zip(self.keys, self.mirrors):
            mirror.assign(_as_saved(host_value(variable)))


def _attach(parent, name, child):
    if isinstance(parent, dict):
        parent[name] = child
    else:
        setattr(parent, name, child)


def write(prefix, root, **extra):
    """Writes the variables of `root` (`checkpoint_root(...)`) to the checkpoint `prefix`; returns its path."""
    return Mirror(root, **extra).checkpoint.write(prefix)


def _saved_graph(reader):
    """`[{child name: node id}]` and `[checkpoint key of the node's value or None]` of a checkpoint's object graph."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    children = [{child.local_name: child.node_id for child in node.children} for node in graph.nodes]
    keys = [next((a.checkpoint_key for a in node.attributes if a.name == "VARIABLE_VALUE"), None)
            for node in graph.nodes]
    return children, keys


def _saved_key(children, keys, path):
    """The checkpoint key of the value at `path` (names from the root) in a saved object graph, or None: a path
    through the saved objects, as `tf.train.Checkpoint.restore` matches them (a model restored without its
    optimizer finds its variables saved under `optimizer/_trainable_variables/<i>`)."""
    node = 0
    for name in path.split("/"):
        node = children[node].get(name)
        if node is None:
            return None
    return keys[node]


def mismatched_shape(prefix, root):
    """`(key, shape in the checkpoint, the variable's shape)` of the first variable of `root` whose value in
    checkpoint `prefix` has another shape, or None."""
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    children, saved_keys = _saved_graph(reader)
    for key, variable in variable_keys(root):
        name = _saved_key(children, saved_keys, key)
        if name in shapes and tuple(shapes[name]) != tuple(variable.shape):
            return key, tuple(shapes[name]), tuple(variable.shape)
    return None


def restore(prefix, root, expect_partial=True):
    """Assigns each variable of `root` the value saved at its path in checkpoint `prefix` (matched through the
    checkpoint's object graph, as `tf.train.Checkpoint.restore` does); returns the paths of `root` the checkpoint
    does not hold (an `InputError` names them unless `expect_partial`). The `lora/alpha` saved is checked against
    the model's."""
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    children, saved_keys = _saved_graph(reader)
    missing, values = [], []
    for key, variable in variable_keys(root):
        name = _saved_key(children, saved_keys, key)
        if name is None or name not in shapes:
            missing.append(key)
            continue
        value = reader.get_tensor(name)
        if tuple(shapes[name]) != tuple(variable.shape):
            raise InputError(f"Checkpoint {prefix}: {key} has shape {tuple(shapes[name])}, the variable "
                             f"{getattr(variable, 'path', variable.name)} {tuple(variable.shape)}.")
        if key == "lora/alpha":
            if float(value) != float(host_value(variable)):
                raise InputError(f"Checkpoint {prefix} was trained with lora_alpha {float(value)}, the model has "
                                 f"{float(host_value(variable))}.")
            continue
        if np.issubdtype(value.dtype, np.integer):
            value = value.astype(np.dtype(keras.backend.standardize_dtype(variable.dtype)))
        values.append((variable, value))
    if missing and not expect_partial:
        raise InputError(f"Checkpoint {prefix} holds no {', '.join(missing[:5])}"
                         f"{f' ... ({len(missing)} in all)' if len(missing) > 5 else ''}.")
    # Assigned once every value was checked: a checkpoint that does not fit leaves the variables as they were.
    for variable, value in values:
        variable.assign(value)
    return missing
