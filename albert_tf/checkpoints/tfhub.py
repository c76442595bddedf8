"""TF2 SavedModels of tf-models-official's `AlbertEncoder` (TF-Hub / Kaggle `albert_en_*/3` and later).

The weights are read from `variables/variables` as a checkpoint, never by loading (running) the SavedModel:
the SavedModel's object graph (`saved_model.pb`) gives each variable node its name (`word_embeddings/
embeddings`, `transformer/self_attention/query/kernel`, ... as `official/nlp/modeling/networks/
albert_encoder.py` creates them), and the checkpoint's object graph, which numbers nodes the same way, gives
the key of its value. The config comes from the shapes (vocabulary, widths, heads from the `[H, N, D]` query
kernel) and from the Keras metadata tf_keras records (`keras_metadata.pb`, or the older `metadata` of the
SavedModel's user objects): `num_layers` and `activation` cannot be seen in the shapes.
"""

import json
import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2, trackable_object_graph_pb2

from albert_tf.checkpoints import foreign
from albert_tf.checkpoints.foreign import MERGE_OUTPUT, SPLIT_BIAS, SPLIT_KERNEL, Link
from albert_tf.errors import InputError

SAVED_MODEL = "saved_model.pb"
KERAS_METADATA = "keras_metadata.pb"
VARIABLES = os.path.join("variables", "variables")
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_NOT_WEIGHTS = ("do_lower_case",)   # A variable export_tfhub_lib adds for WordPiece models.

# tf-models' AlbertEncoder names (ALBERT_NAME_REPLACEMENTS of its TF1 converter, with the reshapes of
# `tf1_bert_checkpoint_converter_lib._get_new_shape`). One shared `transformer` block: G = K = 1.
_LINKS = (
    Link("bert/embeddings/word_embeddings", "word_embeddings/embeddings"),
    Link("bert/embeddings/token_type_embeddings", "type_embeddings/embeddings"),
    Link("bert/embeddings/position_embeddings", "position_embedding/embeddings"),
    Link("bert/embeddings/LayerNorm/gamma", "embeddings/layer_norm/gamma"),
    Link("bert/embeddings/LayerNorm/beta", "embeddings/layer_norm/beta"),
    Link(foreign.PROJECTION[0], "embedding_projection/kernel"),
    Link(foreign.PROJECTION[1], "embedding_projection/bias"),
) + tuple(Link(foreign.BLOCK.format(g=0, k=0) + suffix, name, transform) for suffix, name, transform in (
    ("attention_1/self/query/kernel", "transformer/self_attention/query/kernel", SPLIT_KERNEL),
    ("attention_1/self/query/bias", "transformer/self_attention/query/bias", SPLIT_BIAS),
    ("attention_1/self/key/kernel", "transformer/self_attention/key/kernel", SPLIT_KERNEL),
    ("attention_1/self/key/bias", "transformer/self_attention/key/bias", SPLIT_BIAS),
    ("attention_1/self/value/kernel", "transformer/self_attention/value/kernel", SPLIT_KERNEL),
    ("attention_1/self/value/bias", "transformer/self_attention/value/bias", SPLIT_BIAS),
    ("attention_1/output/dense/kernel", "transformer/self_attention/attention_output/kernel", MERGE_OUTPUT),
    ("attention_1/output/dense/bias", "transformer/self_attention/attention_output/bias", foreign.IDENTITY),
    ("LayerNorm/gamma", "transformer/self_attention_layer_norm/gamma", foreign.IDENTITY),
    ("LayerNorm/beta", "transformer/self_attention_layer_norm/beta", foreign.IDENTITY),
    ("ffn_1/intermediate/dense/kernel", "transformer/intermediate/kernel", foreign.IDENTITY),
    ("ffn_1/intermediate/dense/bias", "transformer/intermediate/bias", foreign.IDENTITY),
    ("ffn_1/intermediate/output/dense/kernel", "transformer/output/kernel", foreign.IDENTITY),
    ("ffn_1/intermediate/output/dense/bias", "transformer/output/bias", foreign.IDENTITY),
    ("LayerNorm_1/gamma", "transformer/output_layer_norm/gamma", foreign.IDENTITY),
    ("LayerNorm_1/beta", "transformer/output_layer_norm/beta", foreign.IDENTITY),
)) + (
    Link("bert/pooler/dense/kernel", "pooler_transform/kernel"),
    Link("bert/pooler/dense/bias", "pooler_transform/bias"),
)
# tf-models activation names (`tf_utils.get_activation`; `Text>gelu` is its tanh GELU) -> the original's.
_ACTIVATIONS = {"Text>gelu": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear"}
_ENCODER_CLASSES = ("AlbertEncoder", "AlbertTransformerEncoder")


def is_saved_model(directory):
    """True for a TF2 SavedModel directory (object-graph `variables/variables`, no TF1 hub module file)."""
    if not os.path.isfile(os.path.join(directory, SAVED_MODEL)) or \
            os.path.isfile(os.path.join(directory, "tfhub_module.pb")):
        return False
    prefix = os.path.join(directory, VARIABLES)
    if not tf.io.gfile.exists(prefix + ".index"):
        return False
    try:
        names = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError):
        return False
    return OBJECT_GRAPH_KEY in names and not any(n.startswith(("bert/", "module/bert/")) for n in names)


def _parse_saved_model(directory):
    path = os.path.join(directory, SAVED_MODEL)
    proto = saved_model_pb2.SavedModel()
    try:
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
    except Exception as e:  # noqa: BLE001  (protobuf raises its own DecodeError)
        raise InputError(f"Cannot parse `{path}` (truncated or not a SavedModel?): {e}") from None
    if not proto.meta_graphs:
        raise InputError(f"`{path}` holds no MetaGraph.")
    return proto.meta_graphs[0].object_graph_def


class _Variables:
    """`variables/variables` of a SavedModel: TF-model names -> (checkpoint key, shape), read by key."""

    def __init__(self, directory):
        self.prefix = os.path.join(directory, VARIABLES)
        try:
            self.reader = tf.train.load_checkpoint(self.prefix)
        except (tf.errors.OpError, ValueError) as e:
            raise InputError(f"Cannot read the variables of SavedModel `{directory}` (`{self.prefix}`): {e}") \
                from None
        shapes = self.reader.get_variable_to_shape_map()
        checkpoint_graph = trackable_object_graph_pb2.TrackableObjectGraph()
        checkpoint_graph.ParseFromString(self.reader.get_tensor(OBJECT_GRAPH_KEY))
        saved_graph = _parse_saved_model(directory)
        self.names = {}
        for node_id, node in enumerate(saved_graph.nodes):
            if node.WhichOneof("kind") != "variable" or node_id >= len(checkpoint_graph.nodes):
                continue
            keys = [a.checkpoint_key for a in checkpoint_graph.nodes[node_id].attributes
                    if a.name == "VARIABLE_VALUE"]
            name = node.variable.name.split(":")[0]
            if keys and keys[0] in shapes:
                if name in self.names:
                    raise InputError(f"SavedModel `{directory}` has two variables named `{name}`.")
                self.names[name] = (keys[0], tuple(shapes[keys[0]]))

    def read(self, name):
        try:
            return self.reader.get_tensor(self.names[name][0])
        except (tf.errors.OpError, ValueError) as e:
            raise InputError(f"Cannot read `{name}` from `{self.prefix}` (truncated or damaged?): {e}") from None


def _match(names):
    """TF-model variable name -> link, accepting any scope in front of tf-models' names."""
    matched, unmatched = {}, []
    for name in names:
        link = next((l for l in _LINKS if name == l.foreign or name.endswith("/" + l.foreign)), None)
        if link is None:
            if name.split("/")[-1] not in _NOT_WEIGHTS:
                unmatched.append(name)
            continue
        if link.foreign in matched:
            raise InputError(f"Two variables map to tf-models' `{link.foreign}`: `{matched[link.foreign]}` and "
                             f"`{name}`.")
        matched[link.foreign] = name
    return matched, unmatched


def open_reader(directory):
    """A `MappedReader` of the SavedModel's variables under the original names."""
    variables = _Variables(directory)
    matched, unmatched = _match(variables.names)
    if unmatched:
        raise foreign.unmatched_error(
            variables.prefix, "TF2 SavedModel", unmatched,
            "Expected the variables of tf-models-official's AlbertEncoder (one shared `transformer` block).")
    shapes = {link_name: variables.names[name][1] for link_name, name in matched.items()}
    entries = foreign.build_entries(variables.prefix, _LINKS, shapes, lambda n: variables.read(matched[n]),
                                    "TF2 SavedModel", "")
    return foreign.MappedReader(variables.prefix, entries)


# --- config ---------------------------------------------------------------------------------------------------

def _protobuf_fields(data):
    """Yields `(field number, wire type, value)` of a serialized protobuf message (varint and length types)."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 2:
            length, position = _varint(data, position)
            value, position = data[position:position + length], position + length
        elif wire == 1:
            value, position = data[position:position + 8], position + 8
        elif wire == 5:
            value, position = data[position:position + 4], position + 4
        else:
            raise InputError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def _varint(data, position):
    result, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _keras_metadata(directory):
    """The JSON metadata strings tf_keras saved for the SavedModel's objects."""
    texts = []
    path = os.path.join(directory, KERAS_METADATA)
    if os.path.isfile(path):
        # tf_keras' `SavedMetadata`: `repeated SavedObject nodes = 1`; `SavedObject.metadata = 5` (a string).
        with open(path, "rb") as f:
            data = f.read()
        try:
            for number, wire, node in _protobuf_fields(data):
                if number == 1 and wire == 2:
                    texts.extend(value.decode("utf-8") for n, w, value in _protobuf_fields(node) if n == 5 and w == 2)
        except (ValueError, IndexError, UnicodeDecodeError) as e:
            raise InputError(f"Cannot parse `{path}`: {e}") from None
    for node in _parse_saved_model(directory).nodes:
        if node.WhichOneof("kind") == "user_object" and node.user_object.metadata:
            texts.append(node.user_object.metadata)
    return texts


def _encoder_config(directory):
    for text in _keras_metadata(directory):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            continue
        # `AlbertEncoder` today; `AlbertTransformerEncoder` in the tf-models of the first TF-Hub TF2 exports.
        if str(data.get("class_name", "")).endswith(_ENCODER_CLASSES) and isinstance(data.get("config"), dict):
            return data["config"]
    return None


def _activation(value):
    if isinstance(value, dict):
        value = value.get("config")
    return _ACTIVATIONS.get(value) if isinstance(value, str) else None


def config_dict(directory):
    """The `AlbertConfig` fields of the SavedModel's `AlbertEncoder`.

    Raises:
        ValueError: when the SavedModel records no `AlbertEncoder` config (number of layers and activation are
            not visible in the variables) or an activation the original does not have; the message says to
            pass the config (`--albert_config_file`).
    """
    variables = _Variables(directory)
    matched, _ = _match(variables.names)

    def shape(name):
        if name not in matched:
            raise InputError(f"SavedModel `{directory}` has no `{name}` variable of tf-models' AlbertEncoder.")
        return variables.names[matched[name]][1]

    vocab, embedding = shape("word_embeddings/embeddings")
    hidden, heads, _ = shape("transformer/self_attention/query/kernel")
    config = dict(vocab_size=vocab, embedding_size=embedding, hidden_size=hidden, num_attention_heads=heads,
                  intermediate_size=shape("transformer/intermediate/kernel")[1],
                  max_position_embeddings=shape("position_embedding/embeddings")[0],
                  type_vocab_size=shape("type_embeddings/embeddings")[0], num_hidden_groups=1, inner_group_num=1)
    recorded = _encoder_config(directory)
    hint = ("Pass the model's albert_config.json (`--albert_config_file`, or `config=` in Python).")
    if recorded is None:
        raise InputError(f"SavedModel `{directory}` records no AlbertEncoder config (Keras metadata), and the "
                         f"number of layers and the activation are not visible in its variables. {hint}")
    activation = _activation(recorded.get("activation"))
    if activation is None:
        raise InputError(f"SavedModel `{directory}`: the AlbertEncoder's activation {recorded.get('activation')!r} "
                         f"is not one the original has (tf-models' tanh `Text>gelu`, relu, tanh, linear). {hint}")
    initializer = recorded.get("initializer") or {}
    stddev = (initializer.get("config") or {}).get("stddev", 0.02) if isinstance(initializer, dict) else 0.02
    config.update(num_hidden_layers=int(recorded["num_layers"]), hidden_act=activation,
                  hidden_dropout_prob=float(recorded.get("dropout_rate", 0.0)),
                  attention_probs_dropout_prob=float(recorded.get("attention_dropout_rate", 0.0)),
                  initializer_range=float(stddev))
    return config


def spm_model_file(directory):
    """The SentencePiece model among the SavedModel's assets (`30k-clean.model`, else the one `*.model`)."""
    assets = os.path.join(directory, "assets")
    if not os.path.isdir(assets):
        return None
    preferred = os.path.join(assets, "30k-clean.model")
    if os.path.isfile(preferred):
        return preferred
    models = sorted(name for name in os.listdir(assets) if name.endswith(".model"))
    return os.path.join(assets, models[0]) if len(models) == 1 else None
