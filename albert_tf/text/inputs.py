"""Raw text as the input of a Keras model with a preprocessor: telling text from token ids, and the `tf.data`
pipelines that pack it (`PretrainedMixin.fit`, `evaluate`, `predict`; the packing itself is the
preprocessor's)."""

import keras
import numpy as np
import tensorflow as tf

from albert_tf.errors import InputError


def is_dataset(x):
    """Whether `x` is a `tf.data.Dataset`."""
    return isinstance(x, tf.data.Dataset)


def is_token_features(x):
    """Whether `x` (inputs, or a `tf.data.Dataset` of them) already holds token ids (`input_ids`)."""
    if isinstance(x, tf.data.Dataset):
        spec = x.element_spec
        x = spec[0] if isinstance(spec, tuple) and spec else spec
    return isinstance(x, dict) and "input_ids" in x


def looks_like_text(x):
    """Whether `x` holds strings (so that it needs a preprocessor)."""
    if isinstance(x, tf.data.Dataset):
        return any(spec.dtype == tf.string for spec in tf.nest.flatten(x.element_spec)
                   if isinstance(spec, tf.TensorSpec))
    for leaf in tf.nest.flatten(x):
        if isinstance(leaf, (str, bytes)):
            return True
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind in "USO":
            return True
        if isinstance(leaf, tf.Tensor) and leaf.dtype == tf.string:
            return True
    return False


def mapped(dataset, fn):
    """`dataset.map(fn)` in parallel, prefetched."""
    return dataset.map(fn, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def batched_slices(arrays, num_examples, batch_size, shuffle):
    """A dataset of batches of `batch_size` rows of the tuple `arrays` (`num_examples` texts, and labels and
    weights where given), shuffled once per epoch when `shuffle`; `InputError` when TensorFlow cannot read
    them."""
    try:
        dataset = tf.data.Dataset.from_tensor_slices(tuple(arrays))
    except (TypeError, ValueError) as e:
        raise InputError(f"Cannot read the texts or labels: {e}") from None
    if shuffle:
        dataset = dataset.shuffle(num_examples, reshuffle_each_iteration=True)
    return dataset.batch(int(batch_size))


def text_call_inputs(inputs, preprocess):
    """Raw text `inputs` of a model call as the model takes them: string tensors on TensorFlow (the model packs
    them in its graph); on JAX and PyTorch, which have no string arrays, packed here by `preprocess` (the
    preprocessor, TensorFlow) into NumPy token ids that the model runs on."""
    from albert_tf.text.preprocessor import string_tensors  # Deferred: needs tensorflow-text.
    inputs = string_tensors(inputs)
    if keras.backend.backend() == "tensorflow":
        return inputs
    return {name: value.numpy() for name, value in preprocess(inputs).items()}
