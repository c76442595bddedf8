"""The TensorFlow backend's fast path: the one module of `layers/` and `models/` that imports TensorFlow or asks
which backend Keras runs on.

The layers and the encoder are plain Keras 3 (`keras.ops`, Keras' own `Dense`, `LayerNormalization`,
`Dropout`); they call the functions below at the few points where TensorFlow training has a faster or leaner
form. Each function is the plain Keras form (or None, "use your own") on JAX and PyTorch, and on TensorFlow where
its condition (`training=True`, a graph) does not hold. Why each piece exists:

* `training_form("gelu" | "layer_norm" | "softmax", training)`: autodiff of the composite GELU and LayerNorm
  makes a dozen separate elementwise passes over `[batch*seq, I]` (resp. `[batch*seq, H]`) per layer in the
  backward pass. Each fused form is one XLA cluster forward and one backward (only the elementwise work and the
  row reductions; the matmuls around them stay outside) with the analytic gradient; XLA compiles for CPU, GPU
  and TPU alike. The math is the original's.
* `dropout`, `fold_in`, `dropout_seed`: dropout drawn statelessly from a seed (`stateless_dropout`), so that a
  recomputed forward (`run_layers(recompute=True)`) draws the masks of the first one. Keras' `Dropout` draws
  from a seed generator, whose state a second forward advances.
* `run_layers`: the layer-by-layer backward of ALBERT's shared blocks (`layer_stack`), which sums the shared
  weights' gradients as it goes instead of holding one full-size gradient per layer application, and its
  recompute form (activation memory of one layer). The other backends differentiate the stack as written and
  recompute with `keras.remat`.
* `check_sequence_length`: a graph-time check of a dynamic sequence length (the other backends trace static
  shapes, checked in Python).
* `argmax`: `tf.argmax` itself; Keras' TensorFlow `argmax` adds a sign-bit test (`BitwiseAnd`, for -0.0) that
  LiteRT has no builtin kernel for.
* `compile_forward`: a `tf.function` of a model for repeated inference calls (the pipelines).
"""

import math

import keras
import tensorflow as tf


def active():
    """Whether Keras runs on the TensorFlow backend (where the functions below take their TensorFlow forms)."""
    return keras.backend.backend() == "tensorflow"


# --- Fused elementwise training forms ------------------------------------------------------------------------

_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


@tf.function(jit_compile=True, autograph=False)
def _gelu_forward(x):
    t = tf.tanh(_GELU_C * (x + _GELU_A * x * x * x))
    return 0.5 * x * (1.0 + t), t


@tf.function(jit_compile=True, autograph=False)
def _gelu_backward(dy, x, t):
    # d/dx 0.5x(1 + t) = 0.5(1 + t) + 0.5x(1 - t^2) * c(1 + 3a x^2)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * (_GELU_C * (1.0 + 3.0 * _GELU_A * x * x)))


@tf.custom_gradient
def gelu_fused(x):
    """The original's GELU (tanh approximation) with a fused forward and analytic backward, for training."""
    y, t = _gelu_forward(x)

    def grad(dy):
        return _gelu_backward(dy, x, t)

    return y, grad


def _layer_norm(x, gamma, beta, epsilon):
    """The original's two-pass LayerNorm over the last axis: (output, normalized input, 1/std)."""
    mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    centered = x - mean
    inv = tf.math.rsqrt(tf.reduce_mean(centered * centered, axis=-1, keepdims=True) + epsilon)
    normalized = centered * inv
    return normalized * gamma + beta, normalized, inv


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_forward(x, gamma, beta, epsilon):
    return _layer_norm(x, gamma, beta, epsilon)


@tf.function(jit_compile=True, autograph=False)
def _layer_norm_backward(dy, normalized, inv, gamma):
    reduce_axes = list(range(len(dy.shape) - 1))
    d_gamma = tf.reduce_sum(dy * normalized, axis=reduce_axes)
    d_beta = tf.reduce_sum(dy, axis=reduce_axes)
    d_normalized = dy * gamma
    dx = inv * (d_normalized - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
                - normalized * tf.reduce_mean(d_normalized * normalized, axis=-1, keepdims=True))
    return dx, d_gamma, d_beta


def layer_norm_fused(x, gamma, beta, epsilon):
    """LayerNorm over the last axis of float32 `x` (`(x - mean) * rsqrt(var + eps) * gamma + beta`), with a
    fused forward and analytic backward, for training. Gradients for `x`, `gamma` and `beta`."""
    epsilon = tf.constant(epsilon, x.dtype)

    @tf.custom_gradient
    def fn(x, gamma, beta):
        y, normalized, inv = _layer_norm_forward(x, gamma, beta, epsilon)

        def grad(dy):
            return _layer_norm_backward(dy, normalized, inv, gamma)

        return y, grad

    return fn(x, gamma, beta)


@tf.function(jit_compile=True, autograph=False)
def _softmax_backward(dp, p):
    return p * (dp - tf.reduce_sum(dp * p, axis=-1, keepdims=True))


@tf.custom_gradient
def softmax_fused(logits):
    """`tf.nn.softmax` over the last axis with a fused XLA backward, for training."""
    p = tf.nn.softmax(logits, axis=-1)

    def grad(dp):
        return _softmax_backward(dp, p)

    return p, grad


def training_form(name, training):
    """The fused training form of `"gelu"` (`gelu_fused(x)`), `"layer_norm"` (`layer_norm_fused(x, gamma, beta,
    epsilon)`) or `"softmax"` (`softmax_fused(logits)`, last axis) when `training is True` on TensorFlow; None
    otherwise (the layer uses its plain `keras.ops` form, the same math)."""
    if training is not True or not active():
        return None
    return {"gelu": gelu_fused, "layer_norm": layer_norm_fused, "softmax": softmax_fused}[name]


# --- Stateless dropout ---------------------------------------------------------------------------------------


def dropout(layer, x, training, seed=None):
    """`layer` (a `keras.layers.Dropout`) applied to `x`; with a `seed` (int `[2]` tensor) and `training=True`,
    the same dropout drawn statelessly from that seed instead (`stateless_dropout`), so that calling again with
    the seed (a recomputed forward) draws the same mask. Seeds exist on TensorFlow only (`dropout_seed`)."""
    if seed is None or training is not True or not active():
        return layer(x, training=training)
    return tf.nn.experimental.stateless_dropout(x, rate=layer.rate, seed=seed)


def fold_in(seed, index):
    """`seed` (int `[2]` tensor or None) folded with `index` (TensorFlow's stateless fold-in), None for None."""
    if seed is None:
        return None
    return tf.random.experimental.stateless_fold_in(seed, index)


def dropout_seed(training, seed, generator):
    """The seed of a training call's stateless dropout: `seed` when given, else one drawn from `generator` (a
    `keras.random.SeedGenerator`, so that `keras.utils.set_random_seed` governs it; None: no dropout). None
    when not training or not on TensorFlow: the Keras `Dropout` layers draw then."""
    if training is not True or not active():
        return None
    if seed is None and generator is not None:
        seed = keras.random.randint([2], 0, 2**31 - 1, dtype="int32", seed=generator)
    return seed


# --- Small graph forms ---------------------------------------------------------------------------------------


def check_sequence_length(seq_len, maximum):
    """Raises (Python `ValueError`, or on TensorFlow a graph assertion for a dynamic length) when `seq_len`
    exceeds `maximum` (`max_position_embeddings`)."""
    message = f"sequence length exceeds max_position_embeddings={maximum}"
    if active():
        tf.debugging.assert_less_equal(seq_len, maximum, message=message)
    elif isinstance(seq_len, int) and seq_len > maximum:
        raise ValueError(f"sequence length {seq_len} exceeds max_position_embeddings={maximum}")


def argmax(x):
    """int32 index of the largest entry over the last axis: `tf.argmax` on TensorFlow (LiteRT has every op of
    it), `keras.ops.argmax` elsewhere."""
    if active():
        return tf.argmax(x, axis=-1, output_type=tf.int32)
    return keras.ops.cast(keras.ops.argmax(x, axis=-1), "int32")


def compile_forward(model, jit_compile=None, training=False):
    """A `tf.function` of `model` for fast repeated calls: `fn(inputs) -> outputs` (same dicts as `model`).

    Tracing once per input signature (`reduce_retracing=True`, so changing sequence lengths share a trace)
    removes the Python of the layer stack from the loop; what runs is the graph that grappler's oneDNN
    remapper has fused (`MatMul + BiasAdd (+ GELU)`). Works for any of the package's models and for their
    `mixed_bfloat16` variants.

    Args:
        model: a Keras model taking the dict inputs of `AlbertModel`.
        jit_compile: True to compile with XLA, False for plain `tf.function`; None (default) picks XLA only
            when a GPU or TPU is visible: on CPU, XLA's dot kernels are slower than oneDNN's in float32 and
            do not use the BF16/AMX instructions for `mixed_bfloat16` (see `benchmarks/RESULTS.md`).
        training: bool, passed to the model (dropout on when True).
    """
    if jit_compile is None:
        jit_compile = default_jit_compile()

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def forward(inputs):
        return model(inputs, training=training)

    return forward


def default_jit_compile():
    """`compile_forward`'s default: XLA only where a GPU or TPU is visible (XLA then compiles once per input
    shape, so its callers round lengths coarser: `albert_tf.data.lengths.length_multiple`)."""
    return bool(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))


# --- The layer stack's backward ------------------------------------------------------------------------------


def run_layers(layers, x, params, training, recompute):
    """Every output of `layers` (functions `(x, params) -> [outputs]`, the last output feeding the next layer)
    through `layer_stack` in a TensorFlow training call (a graph, or `recompute`); None where that does not
    apply (the encoder runs the stack as written then)."""
    if training is True and active() and (recompute or not tf.executing_eagerly()):
        return layer_stack(layers, x, params, recompute=recompute)
    return None


def _after(x, deps):
    """`x`, made to depend on the values of the tensors `deps` (one element of each is read), with `x`'s value:
    the data-dependency form of `tf.recompute_grad`, which graphs and XLA both keep (a control dependency is
    dropped by XLA's clustering, and grappler may reorder it)."""
    firsts = tf.concat([tf.cast(tf.reshape(d, [-1])[:1], tf.float32) for d in deps], axis=0)
    flag = tf.cast(tf.reduce_max(firsts), tf.bool)
    zero = tf.where(tf.equal(flag, flag), 0.0, float("nan"))
    return x + tf.cast(zero, x.dtype)


def _layer_backward(layer, x, structured, flat, dys, running, recompute, tape, outputs):
    """One layer's `(tape, its input, its outputs, dys)` for the backward pass: with `recompute`, its forward
    run again on its input made to wait for the running gradient sums; else the forward's own tape, with the
    upstream gradient made to wait for them."""
    if recompute:
        with tf.GradientTape() as tape:
            xi = _after(x, [dys[-1]] + running)
            tape.watch([xi] + list(flat))
            outputs = layer(xi, structured)
        return tape, xi, outputs, dys
    if running:
        dys[-1] = _after(dys[-1], running)
    return tape, x, outputs, dys


def layer_stack(layers, x, params=(), recompute=False):
    """Applies `layers` (functions `(x, params) -> [outputs]`) to `x` with a backward pass that goes one layer
    at a time and sums the gradients of shared weights as it goes.

    ALBERT applies its shared blocks many times. Plain autodiff makes one full-size gradient of the shared
    weights per application and sums them when all exist (an `AddN`); at xxlarge width those gradients weigh as
    much as the activations. Here each layer's weight gradients are added into one running total before the
    layer below it starts its backward pass, so at most one application's gradients exist beside the total.
    Reading the running sums before a layer's backward (`_after`) also keeps grappler from merging the chain of
    sums into one `AddN` that would hold every layer's gradients at once. The sum is the same.

    Args:
        layers: the layer functions, in order.
        x: the input of the first layer.
        params: a nested structure of tensors every layer reads (the blocks' prepared weights, made once per
            forward outside): inputs of the stack, so their gradients are summed like the variables' and
            flow on to the variables they were made from.
        recompute: False keeps every layer's activations for the backward pass (each layer is recorded on its
            own tape in the forward pass); True keeps only each layer's input and runs the layer's forward again
            in the backward pass, one layer at a time.

    Returns:
        the list of every layer's outputs, in order.
    """
    flat_params = tf.nest.flatten(params)

    @tf.custom_gradient
    def run(x, *flat):
        structured = tf.nest.pack_sequence_as(params, list(flat))
        inputs, outputs, tapes = [], [], []
        for layer in layers:
            inputs.append(x)
            with tf.GradientTape() if not recompute else _NoTape() as tape:
                if not recompute:
                    tape.watch([x] + list(flat))
                outputs.extend(layer(x, structured))
            tapes.append(tape)
            x = outputs[-1]
        per_layer = len(outputs) // len(layers)

        def grad(*output_grads, variables=None):
            sources = list(flat) + list(variables or [])
            output_grads = [tf.zeros_like(o) if d is None else d for o, d in zip(outputs, output_grads)]
            totals, dx = [None] * len(sources), None
            for i in reversed(range(len(layers))):
                dys = output_grads[i * per_layer:(i + 1) * per_layer]
                if dx is not None:
                    dys[-1] = dys[-1] + tf.cast(dx, dys[-1].dtype)
                tape, xi, layer_outputs, dys = _layer_backward(
                    layers[i], inputs[i], structured, flat, dys, [t for t in totals if t is not None], recompute,
                    tapes[i], outputs[i * per_layer:(i + 1) * per_layer])
                grads = tape.gradient(layer_outputs, [xi] + sources, output_gradients=dys)
                dx = grads[0]
                for j, g in enumerate(grads[1:]):
                    if g is not None:
                        g = tf.convert_to_tensor(g)
                        totals[j] = g if totals[j] is None else totals[j] + g
            totals = [tf.zeros_like(s) if t is None and s.dtype.is_floating else t
                      for s, t in zip(sources, totals)]
            return [dx] + totals[:len(flat)], totals[len(flat):]

        return outputs, grad

    return run(x, *flat_params)


class _NoTape:
    """A stand-in for `tf.GradientTape` in a recomputing forward (which records nothing)."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
