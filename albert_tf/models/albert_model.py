"""`AlbertModel`: the ALBERT encoder as a Keras 3 model (original `modeling.AlbertModel`)."""

import keras

from albert_tf.checkpoints import load_pretrained
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError
from albert_tf.layers import tf_fast_path
from albert_tf.layers.base import sublayers
from albert_tf.layers.attention import attention_bias
from albert_tf.layers.embeddings import AlbertEmbeddings, truncated_normal
from albert_tf.layers.tf_fast_path import compile_forward  # noqa: F401  A public name of this module.
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

    On TensorFlow, training calls in a `tf.function` run the layer stack through `tf_fast_path.run_layers`
    (`layer_stack`): its backward pass goes one layer application (one application of a group's
    `inner_group_num` blocks) at a time and adds the shared blocks' gradients into running sums as it goes,
    instead of one full-size gradient per application waiting for a final sum. With `recompute=True`, it keeps only the input of each layer application for the backward pass
    and runs that layer's forward again there: activation memory of one layer instead of all of them, for one
    more forward. Weights, outputs, gradients and the inference path are the same either way.

    On TensorFlow, dropout (training only) is drawn statelessly from one seed per call (`dropout_seed`, or else
    one drawn from the blocks' dropout seed generator outside any recomputed function), so that a recomputed
    forward sees the same masks and a run gives the same numbers with and without `recompute`. The other
    backends recompute with `keras.remat` and draw dropout from the Keras `Dropout` layers.

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
        # Seeded (stateless) dropout on TensorFlow (`tf_fast_path.dropout_seed`); None elsewhere, where the Keras
        # `Dropout` layers draw from their seed generators.
        dropout_seed = tf_fast_path.dropout_seed(training, dropout_seed, self.dropout_seed_generator())
        seeds = [tf_fast_path.fold_in(dropout_seed, i) for i in range(len(self.layer_groups) + 1)]
        embedding_output = self.embeddings(input_ids, segment_ids, training=training,
                                           dropout_seed=seeds[0])                        # [batch, seq, E]
        x = self._project_embeddings(embedding_output)                                    # [batch, seq, H]
        bias = attention_bias(input_mask, "float32")                                     # [batch, 1, 1, seq]
        # Each block's dense weights in the compute dtype: made once per forward and shared by every application
        # of the block.
        prepared = [[block.prepare_weights() for block in group] for group in self.groups]
        layers = [self._layer_function(self.groups[g], g, bias, training, seeds[i + 1])
                  for i, g in enumerate(self.layer_groups)]
        # TensorFlow training: the layer-by-layer backward (`tf_fast_path.run_layers`), recomputing or not.
        encoder_outputs = tf_fast_path.run_layers(layers, x, prepared, training, recompute)
        if encoder_outputs is None:
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
                block_seed = tf_fast_path.fold_in(seed, k)
                x = block(x, bias, training=training, dropout_seed=block_seed, prepared=prepared[group][k])
                outputs.append(x)
            return outputs

        return layer

    def dropout_seed_generator(self):
        """A `SeedGenerator` of the blocks' dropout layers (None when every dropout rate is 0): the source of the
        per-call dropout seed, so that `keras.utils.set_random_seed` governs it as it does Keras dropout."""
        block = self.groups[0][0]
        for layer in (block.attention_dropout, block.ffn_dropout, block.attention.dropout):
            generator = getattr(layer, "seed_generator", None)
            if layer.rate > 0 and generator is not None:
                return generator
        return None

    def _project_embeddings(self, x):
        """`embedding_hidden_mapping_in` (E -> H) of `x`, or `x` when E == H."""
        return x if self.embedding_projection is None else self.embedding_projection(x)

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
        quantization = {key: config.pop(key) for key in ("quantization", "quantization_config") if key in config}
        return quantized(cls(AlbertConfig.from_dict(config.pop("config")), **config), quantization)

    def quantize(self, mode=None, config=None, **kwargs):
        """Keras' `quantize("int8")`, weight-only unless `config` names an activation quantizer
        (`quantize_int8`)."""
        quantize_int8(self, super().quantize, mode, config, **kwargs)

    @classmethod
    def from_pretrained(cls, path, config=None, **kwargs):
        """Builds the encoder from a release dir, `.tar.gz`, TF1 checkpoint prefix or TF-Hub TF1 module dir."""
        return load_pretrained(cls, path, config=config, **kwargs)


def with_quantization(model, config):
    """`config` plus `"quantization": "int8"` and the `Dense` layers' `quantization_config` (serialized) when they
    are quantized (`model.quantize`), so that `from_config` (a `.keras` load) quantizes the new model the same way
    before its weights are read."""
    dense = [layer for layer in sublayers(model) if is_dense(layer) and layer.quantization_mode is not None]
    if dense:
        config["quantization"] = dense[0].quantization_mode
        config["quantization_config"] = keras.saving.serialize_keras_object(dense[0].quantization_config)
    return config


def quantized(model, config):
    """`model`, quantized as `config` (a `from_config` dict, whose `quantization` keys `with_quantization` wrote
    and this pops) says."""
    mode = config.pop("quantization", None)
    quantization_config = config.pop("quantization_config", None)
    if mode is not None:
        model.quantize(mode, config=keras.saving.deserialize_keras_object(quantization_config))
    return model


def quantize_int8(model, keras_quantize, mode, config, **kwargs):
    """Keras' own `quantize` of `model` (`keras_quantize`, its `keras.Model.quantize`), in `"int8"` only (others
    are refused by `check_quantize_mode`): each `Dense` kernel to int8 with a per-column scale.

    `config` is the one Keras resolved (its `Int8QuantizationConfig()` when none was given). On the ALBERT models
    that default means weights only (`weight_only_by_default`); a config naming its own activation quantizer (with
    an axis) quantizes the matmul inputs too, as Keras does. Only the `Dense` layers are offered to Keras (unless
    `filters` is given): the others (dropout, LayerNorm, the heads' TF1-shaped `output_weights`) have no int8 form,
    and Keras would warn once for each."""
    check_quantize_mode(mode)
    if kwargs.get("filters") is None:
        kwargs["filters"] = is_dense
    keras_quantize(mode, config=weight_only_by_default(config), **kwargs)


def weight_only_by_default(config):
    """`config`, or weight-only int8 (`activation_quantizer=None`) when `config` is Keras' default
    `Int8QuantizationConfig()`. Keras' default also quantizes each input row of every matmul; on the embeddings
    that moved a fine-tuned NER model's probabilities by 0.06 where weight-only int8 moves them by 0.0015
    (docs/deploying_small.md)."""
    default = keras.quantizers.Int8QuantizationConfig()
    if config is None or (type(config) is type(default) and config.get_config() == default.get_config()):
        return keras.quantizers.Int8QuantizationConfig(activation_quantizer=None)
    return config


def is_dense(layer):
    """Whether `layer` is a `keras.layers.Dense` (the layers `quantize("int8")` converts)."""
    return isinstance(layer, keras.layers.Dense)


def check_quantize_mode(mode):
    """Raises `InputError` unless `mode` is `"int8"`, the Keras quantization mode measured on these models
    (docs/deploying_small.md); the others (int4, float8, GPTQ, AWQ) are refused, with the LiteRT export named."""
    if mode != "int8":
        raise InputError(f"`quantize({mode!r})` is not supported on the ALBERT models: use `quantize('int8')`, or "
                         "the LiteRT export (`albert-export --format=tflite --quantize=dynamic|int8`).")
