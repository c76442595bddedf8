"""`AlbertModel`: the ALBERT encoder as a Keras 3 model (original `modeling.AlbertModel`)."""

import keras
import tensorflow as tf

from albert_tf.checkpoints import load_pretrained
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError
from albert_tf.layers.activations import is_tensorflow
from albert_tf.layers.base import sublayers
from albert_tf.layers.attention import attention_bias, dense_weights
from albert_tf.layers.dropout import fold_in
from albert_tf.layers.embeddings import AlbertEmbeddings, truncated_normal
from albert_tf.layers.transformer import AlbertTransformerBlock
from albert_tf.models.lora import LoraMixin



def as_config(config):
    """Accepts an `AlbertConfig`, a dict of its fields, or a path to an `albert_config.json`."""
    if isinstance(config, AlbertConfig):
        return config
    if isinstance(config, dict):
        return AlbertConfig.from_dict(config)
    if isinstance(config, str):
        return AlbertConfig.from_json_file(config)
    raise TypeError(f"`config` must be an AlbertConfig, a dict or a JSON path. Received: {type(config).__name__}.")


def split_inputs(inputs):
    """Reads the `input_ids`, `input_mask`, `segment_ids` dict (mask defaults to ones, segments to zeros)."""
    if not isinstance(inputs, dict):
        raise TypeError("Inputs must be a dict with `input_ids`, `input_mask`, `segment_ids`. "
                        f"Received: {type(inputs).__name__}.")
    if "input_ids" not in inputs:
        raise InputError(f"Inputs must contain `input_ids`. Received keys: {sorted(inputs)}.")
    ops = keras.ops
    input_ids = ops.cast(inputs["input_ids"], "int32")
    input_mask = inputs.get("input_mask")
    input_mask = ops.ones_like(input_ids) if input_mask is None else ops.cast(input_mask, "int32")
    segment_ids = inputs.get("segment_ids")
    segment_ids = ops.zeros_like(input_ids) if segment_ids is None else ops.cast(segment_ids, "int32")
    return input_ids, input_mask, segment_ids


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertModel(LoraMixin, keras.Model):
    """The ALBERT encoder: factorized embeddings, grouped shared transformer blocks, tanh pooler.

    Called on a dict of int32 `[batch, seq]` tensors `input_ids`, `input_mask`, `segment_ids`; returns a dict:
    `sequence_output [batch, seq, H]`, `pooled_output [batch, H]`, `encoder_outputs` (a list of
    `num_hidden_layers * inner_group_num` tensors, as `get_all_encoder_layers()`), `embedding_output`
    `[batch, seq, E]`. Dropout is active only with `training=True`.

    Parameter sharing follows the original: `num_hidden_groups` G groups of `inner_group_num` K blocks; layer i
    applies the K blocks of group `int(i / L * G)` in order.

    Attributes used by the checkpoint table: `embeddings` (`word_embeddings`, `token_type_embeddings`,
    `position_embeddings`, `layer_norm`), `embedding_projection` (a Dense, None when E == H),
    `groups[g][k]` (`AlbertTransformerBlock`), `pooler` (a Dense with tanh).

    Training calls in a `tf.function` run the layer stack through `layer_stack`: its backward pass goes one layer
    application (one application of a group's `inner_group_num` blocks) at a time and adds the shared blocks'
    gradients into running sums as it goes, instead of one full-size gradient per application waiting for a
    final sum. With `recompute=True`, it keeps only the input of each layer application for the backward pass
    and runs that layer's forward again there: activation memory of one layer instead of all of them, for one
    more forward. Weights, outputs, gradients and the inference path are the same either way.

    Dropout (training only) is drawn statelessly from one seed per call (`dropout_seed`, or else one drawn from
    the blocks' dropout seed generator outside any recomputed function), so that a recomputed forward sees the
    same masks and a run gives the same numbers with and without `recompute`.

    Args:
        config: `AlbertConfig`, dict or path of an `albert_config.json`.
        recompute: bool, recompute each layer's activations in the backward pass (training memory for time).
    """

    def __init__(self, config, recompute=False, **kwargs):
        config = as_config(config).copy().validate()
        kwargs.setdefault("name", "albert")
        super().__init__(**kwargs)
        if not isinstance(recompute, bool):
            raise TypeError(f"`recompute` must be a bool. Received: `recompute={recompute!r}`.")
        self.config = config
        self.recompute = recompute
        init = truncated_normal(config.initializer_range)

        # === Layers ===
        self.embeddings = AlbertEmbeddings(
            config.vocab_size, config.embedding_size, config.type_vocab_size, config.max_position_embeddings,
            config.initializer_range, config.hidden_dropout_prob, dtype=self.dtype_policy, name="embeddings")
        self.embedding_projection = None
        if config.embedding_size != config.hidden_size:
            self.embedding_projection = keras.layers.Dense(
                config.hidden_size, kernel_initializer=init, dtype=self.dtype_policy,
                name="embedding_hidden_mapping_in")
        self.groups = [
            [AlbertTransformerBlock(config.hidden_size, config.num_attention_heads, config.intermediate_size,
                                    config.hidden_act, config.hidden_dropout_prob,
                                    config.attention_probs_dropout_prob, config.initializer_range,
                                    dtype=self.dtype_policy, name=f"group_{g}_inner_group_{k}")
             for k in range(config.inner_group_num)]
            for g in range(config.num_hidden_groups)]
        # Keras 3 does not expose layers held in nested lists to `tf.train.Checkpoint`; one attribute per
        # block makes every block a named checkpoint dependency (`model.weights` stays deduplicated).
        for g, group in enumerate(self.groups):
            for k, block in enumerate(group):
                setattr(self, f"group_{g}_inner_group_{k}", block)
        self.pooler = keras.layers.Dense(config.hidden_size, activation="tanh", kernel_initializer=init,
                                         dtype=self.dtype_policy, name="pooler")
        self.layer_groups = [config.group_of_layer(i) for i in range(config.num_hidden_layers)]

        # Weights exist from construction on (count_params, checkpoint loading, `.keras` loading).
        self.embeddings.build()
        if self.embedding_projection is not None:
            self.embedding_projection.build((None, None, config.embedding_size))
        for group in self.groups:
            for block in group:
                block.build()
        self.pooler.build((None, config.hidden_size))
        self.built = True

    def call(self, inputs, training=None, dropout_seed=None):
        """Encodes `inputs`; see the class docstring for the outputs.

        Args:
            inputs: dict of `input_ids`, `input_mask`, `segment_ids`.
            training: bool, dropout on when True.
            dropout_seed: optional int `[2]` tensor: with `training=True`, every dropout of the encoder is
                drawn statelessly from it (the embeddings' folds in 0, layer application `i`'s folds in `i + 1`);
                by default a seed drawn from the blocks' dropout seed generator.
        """
        input_ids, input_mask, segment_ids = split_inputs(inputs)
        recompute = self.recompute and training is True
        if training is not True or not is_tensorflow():
            # Seeded (stateless) dropout is TensorFlow's; the other backends draw from the Keras `Dropout`
            # layers' seed generators, and recompute with `keras.remat`.
            dropout_seed = None
        elif dropout_seed is None and self._block_seed_generator() is not None:
            dropout_seed = keras.random.randint([2], 0, 2**31 - 1, dtype="int32",
                                                seed=self._block_seed_generator())
        seeds = [fold_in(dropout_seed, i) for i in range(len(self.layer_groups) + 1)]
        embedding_output = self.embeddings(input_ids, segment_ids, training=training,
                                           dropout_seed=seeds[0])                        # [batch, seq, E]
        x = self._project_embeddings(embedding_output)                                    # [batch, seq, H]
        bias = attention_bias(input_mask, "float32")                                     # [batch, 1, 1, seq]
        # Each block's dense weights in the compute dtype: made once per forward and shared by every application
        # of the block.
        prepared = [[block.prepare_weights() for block in group] for group in self.groups]
        layers = [self._layer_function(self.groups[g], g, bias, training, seeds[i + 1])
                  for i, g in enumerate(self.layer_groups)]
        if training is True and is_tensorflow() and (recompute or not tf.executing_eagerly()):
            # TensorFlow: the layer-by-layer backward (`tf.custom_gradient`), recomputing or not.
            encoder_outputs = layer_stack(layers, x, prepared, recompute=recompute)
        else:
            encoder_outputs = []
            for layer in layers:
                encoder_outputs.extend((keras.remat(layer) if recompute else layer)(x, prepared))
                x = encoder_outputs[-1]
        x = encoder_outputs[-1]
        pooled_output = self.pooler(x[:, 0])                                             # [batch, H]
        return {
            "sequence_output": x,
            "pooled_output": pooled_output,
            "encoder_outputs": encoder_outputs,
            "embedding_output": embedding_output,
        }

    @staticmethod
    def _layer_function(blocks, group, bias, training, seed):
        """One layer: `(x, prepared) -> [output of each of the group's blocks]`, where `prepared[group][k]` is
        block `k`'s `prepare_weights()`; block `k` draws its dropout from `seed` folded with `k` (when `seed`
        is given)."""

        def layer(x, prepared):
            outputs = []
            for k, block in enumerate(blocks):
                block_seed = fold_in(seed, k)
                x = block(x, bias, training=training, dropout_seed=block_seed, prepared=prepared[group][k])
                outputs.append(x)
            return outputs

        return layer

    def _block_seed_generator(self):
        """A `SeedGenerator` of the blocks' dropout layers (None when every dropout rate is 0): the source of the
        per-call dropout seed, so that `keras.utils.set_random_seed` governs it as it does Keras dropout."""
        block = self.groups[0][0]
        for layer in (block.attention_dropout, block.ffn_dropout, block.attention.dropout):
            generator = getattr(layer, "seed_generator", None)
            if layer.rate > 0 and generator is not None:
                return generator
        return None

    def _project_embeddings(self, x):
        """`embedding_hidden_mapping_in` (E -> H) of `x`, or `x` when E == H. Quantized (`quantize("int8")`), it
        reads its kernel dequantized, weight-only like the blocks (`dense_weights`): Keras' int8 matmul also
        quantizes its input per token, and on the embeddings that moved a fine-tuned NER model's probabilities by
        0.06 where weight-only int8 moves them by 0.0015 (docs/deploying_small.md)."""
        layer = self.embedding_projection
        if layer is None:
            return x
        if layer.quantization_mode is None:
            return layer(x)
        kernel, bias = dense_weights(layer)
        dtype = layer.compute_dtype
        return keras.ops.add(keras.ops.matmul(x, keras.ops.cast(kernel, dtype)), keras.ops.cast(bias, dtype))

    @property
    def embedding_table(self):
        """`bert/embeddings/word_embeddings` `[V, E]`, tied to the MLM output layer."""
        return self.embeddings.word_embeddings

    def dummy_inputs(self, batch_size=1, seq_length=8):
        """A tiny all-ones batch, handy for tracing."""
        ones = keras.ops.ones([batch_size, seq_length], "int32")
        return {"input_ids": ones, "input_mask": ones, "segment_ids": keras.ops.zeros_like(ones)}

    def get_config(self):
        return with_quantization(self, {"config": self.config.to_dict(), "recompute": self.recompute,
                                        "name": self.name})

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        mode = config.pop("quantization", None)
        return quantized(cls(AlbertConfig.from_dict(config.pop("config")), **config), mode)

    def quantize(self, mode=None, *args, **kwargs):
        """Keras' `quantize` (`"int8"`: the `Dense` layers' kernels to int8 with a per-column scale), checked by
        `check_quantize_mode` first: the ALBERT layers read their kernels dequantized
        (`albert_tf.layers.attention.dense_weights`), the other `Dense` layers run Keras' int8 matmul."""
        check_quantize_mode(mode)
        super().quantize(mode, *args, **kwargs)

    @classmethod
    def from_pretrained(cls, path, config=None, **kwargs):
        """Builds the encoder from a release dir, `.tar.gz`, TF1 checkpoint prefix or TF-Hub TF1 module dir."""
        return load_pretrained(cls, path, config=config, **kwargs)


def with_quantization(model, config):
    """`config` plus `"quantization": "int8"` when `model`'s `Dense` layers are quantized (`model.quantize`), so
    that `from_config` (a `.keras` load) quantizes the new model before its weights are read."""
    modes = {layer.quantization_mode for layer in sublayers(model)
             if isinstance(layer, keras.layers.Dense)} - {None}
    if modes:
        config["quantization"] = modes.pop()
    return config


def quantized(model, mode):
    """`model`, quantized to `mode` when that is not None (`from_config` of a `with_quantization` config)."""
    if mode is not None:
        model.quantize(mode)
    return model


def check_quantize_mode(mode):
    """Raises `InputError` unless `mode` is `"int8"`, the Keras quantization mode measured on these models
    (docs/deploying_small.md); the others (int4, float8, GPTQ, AWQ) are refused, with the LiteRT export named."""
    if mode != "int8":
        raise InputError(f"`quantize({mode!r})` is not supported on the ALBERT models: use `quantize('int8')`, or "
                         "the LiteRT export (`albert-export --format=tflite --quantize=dynamic|int8`).")


# --- TensorFlow backend only: the layer-by-layer backward of the shared blocks (`tf.custom_gradient`,
# `tf.GradientTape`); the other backends differentiate the layer stack as written (and recompute with
# `keras.remat`).


def _after(x, deps):
    """`x`, made to depend on the values of the tensors `deps` (one element of each is read), with `x`'s value:
    the data-dependency form of `tf.recompute_grad`, which graphs and XLA both keep."""
    firsts = tf.concat([tf.cast(tf.reshape(d, [-1])[:1], tf.float32) for d in deps], axis=0)
    flag = tf.cast(tf.reduce_max(firsts), tf.bool)
    zero = tf.where(tf.equal(flag, flag), 0.0, float("nan"))
    return x + tf.cast(zero, x.dtype)


def layer_stack(layers, x, params=(), recompute=False):
    """Applies `layers` (functions `(x, params) -> [outputs]`, the last output feeding the next layer) to `x`
    with a backward pass that goes one layer at a time and sums the gradients of shared weights as it goes.

    ALBERT applies its shared blocks many times. Plain autodiff makes one full-size gradient of the shared
    weights per application and sums them when all exist (an `AddN`); at xxlarge width those gradients weigh as
    much as the activations. Here each layer's weight gradients are added into one running total before the
    layer below it starts its backward pass, so at most one application's gradients exist beside the total.
    The sum is the same.

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
            if recompute:
                outputs.extend(layer(x, structured))
            else:
                with tf.GradientTape() as tape:
                    tape.watch([x] + list(flat))
                    outputs.extend(layer(x, structured))
                tapes.append(tape)
            x = outputs[-1]
        per_layer = len(outputs) // len(layers)

        def grad(*output_grads, variables=None):
            variables = list(variables or [])
            sources = list(flat) + variables
            output_grads = [tf.zeros_like(o) if d is None else d for o, d in zip(outputs, output_grads)]
            totals = [None] * len(sources)
            dx = None
            for i in reversed(range(len(layers))):
                dys = output_grads[i * per_layer:(i + 1) * per_layer]
                if dx is not None:
                    dys[-1] = dys[-1] + tf.cast(dx, dys[-1].dtype)
                # Layer i's backward pass starts once the layer above has summed its weight gradients in.
                # Reading the running sums here also keeps grappler from merging the chain of sums into one
                # `AddN` that would hold every layer's gradients at once.
                running = [t for t in totals if t is not None]
                if recompute:
                    with tf.GradientTape() as tape:
                        xi = _after(inputs[i], [dys[-1]] + running)
                        tape.watch([xi] + list(flat))
                        layer_outputs = layers[i](xi, structured)
                else:
                    tape, xi = tapes[i], inputs[i]
                    layer_outputs = outputs[i * per_layer:(i + 1) * per_layer]
                    if running:
                        dys[-1] = _after(dys[-1], running)
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


def compile_forward(model, jit_compile=None, training=False):
    """A `tf.function` of `model` for fast repeated calls: `fn(inputs) -> outputs` (same dicts as `model`).

    Tracing once per input signature (`reduce_retracing=True`, so changing sequence lengths share a trace)
    removes the Python of the layer stack from the loop; what runs is the graph that grappler's oneDNN
    remapper has fused (`MatMul + BiasAdd (+ GELU)`). Works for any of the package's models (`AlbertModel`,
    `AlbertPretrainer`, task models) and for their `mixed_bfloat16` variants.

    Args:
        model: a Keras model taking the dict inputs of `AlbertModel`.
        jit_compile: True to compile with XLA, False for plain `tf.function`; None (default) picks XLA only
            when a GPU or TPU is visible: on CPU, XLA's dot kernels are slower than oneDNN's in float32 and
            do not use the BF16/AMX instructions for `mixed_bfloat16` (see `benchmarks/RESULTS.md`).
        training: bool, passed to the model (dropout on when True).
    """
    if jit_compile is None:
        jit_compile = bool(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def forward(inputs):
        return model(inputs, training=training)

    return forward
