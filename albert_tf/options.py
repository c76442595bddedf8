"""Typed options of a run or a command, each declared once: a field with its default, help text and flag kind.

A task's options are one frozen dataclass (`ClassifierOptions` in `albert_tf.tasks.glue.task`, ...) built on the
shared groups below: `TaskOptions` (every task), `FineTuningOptions` (the fine-tuning tasks), `StepsOptions`
(those trained a number of steps on a data directory), and `RuntimeOptions` (where and how any task runs).
The options that other commands take as well are the smaller groups `ModelOptions` (the model's config and
weights), `TokenizerOptions` (its tokenizer), `SequenceOptions` and `MaskedLmOptions` (the examples' shape):
every command's options class subclasses the groups it takes. This module imports neither TensorFlow nor absl.

Each field is declared with `option(default, help_text)`: its name is the original flag's name, its default
the flag's default. A task that changes a shared field's default (or help text) declares the field again in its
own class, `option(new_default)`, and keeps the rest from the group; a task that fixes a shared field's value
declares it `constant(value)` (no keyword, no flag).

A command is declared as data (`Command`: its name, help text, options classes and the library call it makes);
`albert_tf.commands` turns a `Command` into absl flags and an entry point, so that the library below never
reads flags. `call_options(options_class, args, kwargs)` builds `(task options, RuntimeOptions)` for a Python
call `run_<task>(*args, options=None, runtime=None, **kwargs)`, with an `InputError` naming unknown keywords.
"""

import dataclasses
import typing
from typing import Callable, ClassVar, Optional

from albert_tf.errors import InputError

# Keras' LoRA on the encoder (`enable_lora`, `--lora_targets`): its `Dense` layers by name (`AlbertAttention`,
# `AlbertTransformerBlock`, `AlbertModel`), and the default targets (keras-hub's: the query and value projections).
LORA_TARGET_NAMES = ("query", "key", "value", "output_dense", "ffn", "ffn_output", "embedding_hidden_mapping_in",
                     "pooler")
LORA_DEFAULT_TARGETS = ("query", "value")

STRATEGIES = ("one_device", "mirrored", "multi_worker", "tpu")
# The original's optimizers (`optimization.create_optimizer`): AdamW, the fine-tuning scripts', and LAMB,
# `run_pretraining.py`'s.
OPTIMIZERS = ("adamw", "lamb")
MIXED_PRECISION_POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
REQUIRED = dataclasses.MISSING
_KINDS = {bool: "bool", int: "integer", float: "float", str: "string", list: "list"}


def option(default=REQUIRED, help_text=None, *, enum_values=None, flag=None):
    """A dataclass field that is an option: `default` (REQUIRED: no default; the flag's default is then None),
    `help_text` (the flag's help), `enum_values` (an enum flag: the values, or a function that returns them when
    the flag is declared, e.g. the registered model kinds), `flag=False` (a keyword with no flag).

    A task class that declares a field of a shared group again gives only what changes (e.g. `option(1e-5)`):
    the help text, enum values and flag setting not given come from the nearest base class that gives them.
    """
    metadata = {key: value for key, value in
                (("help", help_text), ("enum_values", enum_values), ("flag", flag)) if value is not None}
    return dataclasses.field(default=default, metadata=metadata)


def length_option(length):
    """The field of a text mode's packing length (`albert_tf.text.modes.Length`): its default and help are the
    Length's, and the field names it (`metadata["length"]`), so that every field made from one Length is one
    declaration (a task's options and `albert-export`'s lengths)."""
    return dataclasses.field(default=length.default, metadata={"help": length.help, "length": length})


def length_options(lengths, name="LengthOptions"):
    """A frozen options dataclass with one `length_option` field per `albert_tf.text.modes.Length` of
    `lengths` (a command that takes every text mode's lengths without naming them: `albert-export`)."""
    return dataclasses.make_dataclass(name, [(length.name, int, length_option(length)) for length in lengths],
                                      frozen=True, kw_only=True)


def constant(value):
    """A field of a shared group that a task fixes to `value`: neither a keyword of the task nor a flag."""
    return dataclasses.field(default=value, init=False, metadata={"flag": False})


def shared_option(options_class, name, default=REQUIRED):
    """A field that is the option `name` of `options_class` (another command's) with another default: its help
    text, enum values and flag setting are that option's, declared once there (e.g. the quickstart's pretraining
    steps are `run_pretraining`'s `num_train_steps`, with the demo's default)."""
    return dataclasses.field(default=default, metadata={"shared": (options_class, name)})


def _metadata(options_class, name, key, default=None):
    """`key` of field `name`'s metadata: the first class of `options_class`'s MRO that sets it, or the option a
    `shared_option` field is."""
    for klass in options_class.__mro__:
        field = getattr(klass, "__dataclass_fields__", {}).get(name)
        if field is None:
            continue
        if key in field.metadata:
            return field.metadata[key]
        if "shared" in field.metadata:
            return _metadata(*field.metadata["shared"], key, default)
    return default


def option_defaults(options_class, names):
    """`{name: default}` of the options `names` of `options_class`: what a pipeline takes from its runner's
    options, so that each default is declared once (`QuestionAnsweringPipeline.defaults`, ...)."""
    fields = {field.name: field for field in dataclasses.fields(options_class)}
    return {name: None if fields[name].default is REQUIRED else fields[name].default for name in names}


def option_fields(options_class):
    """The fields of `options_class` that a caller sets (not the `constant` ones), in order."""
    return [field for field in dataclasses.fields(options_class) if field.init]


def flag_fields(options_class):
    """The fields of `options_class` that have a flag (not `flag=False`, not `constant`), in order."""
    return [field for field in option_fields(options_class) if _metadata(options_class, field.name, "flag", True)]


def flag_spec(options_class, field):
    """`(kind, default, help_text, enum_values)` of the flag of `field`: kind from the annotation (`bool`,
    `integer`, `float`, `string`) or `enum`; default None for a required field."""
    enum_values = _metadata(options_class, field.name, "enum_values")
    if callable(enum_values):
        enum_values = tuple(enum_values())
    help_text = _metadata(options_class, field.name, "help")
    if help_text is None:
        raise InputError(f"The option {options_class.__name__}.{field.name} has no help text.")
    field_type = field.type
    if typing.get_origin(field_type) is typing.Union:
        field_type = next(arg for arg in typing.get_args(field_type) if arg is not type(None))
    kind = "enum" if enum_values else _KINDS[field_type]
    default = None if field.default is REQUIRED else field.default
    return kind, default, help_text, enum_values






def options_from_kwargs(classes, kwargs, bases=None):
    """The dataclasses `classes` (a tuple, in order) from one dict of keyword arguments, each keyword going to
    the class that has the field; `bases` (one per class, or None) are instances the keywords update.

    Raises:
        InputError: for a keyword that is an option of none of them, or a required option not given.
    """
    bases = bases or [None] * len(classes)
    names = [{field.name for field in option_fields(cls)} for cls in classes]
    unknown = sorted(set(kwargs) - set().union(*names))
    if unknown:
        raise InputError(f"Unknown options: {', '.join(unknown)} (not options of "
                         f"{' or '.join(cls.__name__ for cls in classes)}).")
    built = []
    for cls, fields, base in zip(classes, names, bases):
        values = {key: value for key, value in kwargs.items() if key in fields}
        if base is not None and not isinstance(base, cls):
            raise InputError(f"Expected {cls.__name__} options. Received: {type(base).__name__}.")
        if base is not None:
            built.append(dataclasses.replace(base, **values))
            continue
        missing = [field.name for field in option_fields(cls) if field.default is REQUIRED and field.name not in values]
        if missing:
            raise InputError(f"Missing required options of {cls.__name__}: {', '.join(missing)}.")
        built.append(cls(**values))
    return tuple(built)


def call_options(options_class, args, kwargs, options=None, runtime=None):
    """`(task options, RuntimeOptions)` of a call `run_<task>(*args, options=None, runtime=None, **kwargs)`.

    `args` are the values of `options_class.positional` (its leading options, e.g. `task_name, data_dir,
    output_dir`), `kwargs` the other options of either class; they update `options` / `runtime` when given.
    """
    kwargs = dict(kwargs)
    positional = options_class.positional
    if len(args) > len(positional):
        raise InputError(f"Too many positional arguments: {len(args)} (the positional options are "
                         f"{', '.join(positional)}).")
    twice = sorted(set(positional[:len(args)]) & set(kwargs))
    if twice:
        raise InputError(f"Options given both by position and by keyword: {', '.join(twice)}.")
    kwargs.update(zip(positional, args))
    return options_from_kwargs((options_class, RuntimeOptions), kwargs, [options, runtime])




@dataclasses.dataclass(frozen=True)
class Command:
    """A command line, declared as data beside the library call it makes; `albert_tf.commands.run(name)` gives
    it its flags (one per field of `options`), parses them and makes the call.

    Attributes:
        name: what the user types (`run_classifier`, `albert-export`, ...).
        help_text: the paragraph that `--help` starts with: what the command reads and writes.
        options: the options dataclasses whose fields are its flags, in order.
        call: `call(*options)`, one instance of each class of `options` built from the flags (and, with
            `extra_args`, `call(*options, args)`: the command line's other arguments).
        no_flag: fields of the shared groups that this command gives no flag (they keep their defaults).
        only: `{class: field names}`: of these classes, only the fields named get a flag.
        resolve: `resolve(values, given) -> {name: value}`: the values of flags the user did not give (a
            preset's, for instance), from every flag's value (`values`, by name) and the names given (`given`);
            it raises `InputError` for a combination of flags that the command refuses.
        extra_args: whether the arguments after the flags (names to fetch, Beam's options) go to `call`.
        pass_unknown_flags: whether `--flags` that are not its own are left in those arguments (another
            library's options, e.g. Apache Beam's) instead of being refused.
    """

    name: str
    help_text: str
    options: tuple
    call: Callable
    no_flag: tuple = ()
    only: Optional[dict] = None
    resolve: Optional[Callable] = None
    extra_args: bool = False
    pass_unknown_flags: bool = False


@dataclasses.dataclass(frozen=True)
class RuntimeOptions:
    """Where and how a task runs, the same for every task (the original TPU flags and the TF2 additions)."""

    strategy: str = option("one_device", "tf.distribute strategy: one_device (first GPU or the CPU), mirrored (all "
                           "local GPUs), multi_worker (MultiWorkerMirroredStrategy from TF_CONFIG) or tpu (also set "
                           "by --use_tpu).", enum_values=STRATEGIES)
    use_tpu: bool = option(False, "Whether to use TPU or GPU/CPU.")
    tpu_name: Optional[str] = option(None, "The Cloud TPU to use for training. This should be either the name used "
                                     "when creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.")
    tpu_zone: Optional[str] = option(None, "[Optional] GCE zone where the Cloud TPU is located in. If not specified, "
                                     "we will attempt to automatically detect the GCE project from metadata.")
    gcp_project: Optional[str] = option(None, "[Optional] Project name for the Cloud TPU-enabled project. If not "
                                        "specified, we will attempt to automatically detect the GCE project from "
                                        "metadata.")
    master: Optional[str] = option(None, "[Optional] TensorFlow master URL.")
    num_tpu_cores: int = option(8, "Only used if `use_tpu` is True. Total number of TPU cores to use.")
    # The Keras global dtype policy a run sets: float32 by default, as the flag (a Python caller's None leaves
    # the global policy as it is).
    mixed_precision: Optional[str] = option("float32", "Keras dtype policy: float32, mixed_bfloat16 (TPU/CPU) or "
                                            "mixed_float16 (GPU, with loss scaling).",
                                            enum_values=MIXED_PRECISION_POLICIES)
    jit_compile: bool = option(False, "Compile the training step (forward and backward pass) and the eval/predict "
                               "steps with XLA; eval/predict batches are then padded to one static shape.")
    random_seed: Optional[int] = option(None, "Seed of the weight initialisation, dropout and input shuffles, for "
                                        "repeatable runs. Unset: an unseeded run, as the original.")
    recompute: bool = option(False, "Recompute each transformer layer's activations in the backward pass: less "
                             "activation memory for about one extra forward pass.")
    gradient_accumulation_steps: int = option(1, "Split each training batch into this many micro-batches and sum "
                                              "their gradients before one optimizer step (same global batch on "
                                              "less memory).")
    iterations_per_loop: int = option(1000, "How many steps to make in each estimator call.")
    model_parallel_devices: int = option(1, "KERAS_BACKEND=jax: devices per model replica along a `model` mesh axis "
                                         "(keras.distribution.ModelParallel: the attention and FFN kernels sharded "
                                         "over them, for xlarge/xxlarge); 1: data parallel over every device.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelOptions:
    """The pre-trained model a command starts from: its config and its weights (the runners, `albert-reproduce`,
    `albert-convert`'s config)."""

    albert_config_file: Optional[str] = option(None, "The config json file corresponding to the pre-trained ALBERT "
                                               "model. This specifies the model architecture.")
    init_checkpoint: Optional[str] = option(None, "Initial checkpoint (usually from a pre-trained ALBERT model): a "
                                            "path, or a name fetched once into the cache: a release name "
                                            "(albert_base_v2, ...), hf:<org>/<repo>, kaggle:<handle>, https://...")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TokenizerOptions:
    """The tokenizer of a model: a SentencePiece model or a WordPiece vocabulary, and its casing (the fine-tuning
    runners, `albert-create-pretraining-data`, `albert-reproduce`, `albert-export`)."""

    vocab_file: Optional[str] = option(None, "The vocabulary file that the ALBERT model was trained on.")
    spm_model_file: Optional[str] = option(None, "The model file for sentence piece tokenization.")
    do_lower_case: bool = option(True, "Whether to lower case the input text. Should be True for uncased models "
                                 "and False for cased models.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SequenceOptions:
    """The length of the examples a command writes or reads (every task, the pretraining data, an export)."""

    max_seq_length: int = option(512, "The maximum total input sequence length after tokenization. Sequences "
                                 "longer than this will be truncated, and sequences shorter than this will be "
                                 "padded.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MaskedLmOptions(SequenceOptions):
    """The shape of the pretraining examples: their length and their masked positions (the pretraining data,
    `run_pretraining`, a pretrainer's export)."""

    max_predictions_per_seq: int = option(20, "Maximum number of masked LM predictions per sequence.")


class Stages:
    """What the driver reads of every task's options, as plain data: the stages to run, the checkpoints they read,
    the metric that picks the best checkpoint, and the feature files a failed run removes."""

    # The evaluation metric that picks `model.ckpt-best` (higher is better).
    metric_key: ClassVar[str] = None
    # After evaluation, remove the checkpoints other than the best and the latest (as the original fine-tuning
    # scripts that keep only `model.ckpt-best`).
    keep_best_only: ClassVar[bool] = True
    # Without checkpoints, the `evaluate` stage scores the initial weights (else it warns and scores nothing).
    scores_initial_weights: ClassVar[bool] = True

    @property
    def init_path(self):
        """The initial weights: `init_checkpoint`, else the TF-Hub module (fine-tuning tasks)."""
        return self.init_checkpoint or getattr(self, "albert_hub_module_handle", None)

    @property
    def asset_source(self):
        """Where a missing config or SentencePiece model is taken from: the TF-Hub module, else
        `init_checkpoint` (None: nowhere)."""
        return getattr(self, "albert_hub_module_handle", None) or self.init_checkpoint

    @property
    def evaluates_checkpoints(self):
        """Whether a stage reads every `model.ckpt-<step>` of `output_dir`."""
        return "evaluate" in self.stages()

    @property
    def runs_inference(self):
        """Whether a stage reads `model.ckpt-best` (else the latest checkpoint)."""
        return bool({"predict", "export"} & set(self.stages()))

    @property
    def checked_init_path(self):
        """The initial weights a stage may read, checked before any work."""
        return self.init_path

    def stages(self):
        """The stages to run, in order, among `train`, `evaluate`, `predict`, `export` (`driver.run_stages`)."""
        wanted = (("train", self.do_train), ("evaluate", self.do_eval), ("predict", self.do_predict),
                  ("export", bool(self.export_dir)))
        return tuple(stage for stage, on in wanted if on)

    def feature_files(self):
        """The feature caches a run may write (`driver.removed_on_failure` removes those a failed run made)."""
        return []

    def train_options(self, runtime):
        """`driver.train` keyword arguments of the task's options and the runtime's."""
        return dict(learning_rate=self.learning_rate, train_batch_size=self.train_batch_size,
                    optimizer=self.optimizer, save_checkpoints_steps=self.save_checkpoints_steps,
                    iterations_per_loop=runtime.iterations_per_loop, jit_compile=runtime.jit_compile,
                    gradient_accumulation_steps=runtime.gradient_accumulation_steps)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskOptions(Stages, ModelOptions, SequenceOptions):
    """The options of every task (pretraining and fine-tuning), with the fine-tuning scripts' defaults."""

    # The leading options of `run_<task>(...)` that may be given by position.
    positional: ClassVar[tuple] = ("output_dir",)

    output_dir: str = option(help_text="The output directory where the model checkpoints will be written.")
    do_train: bool = option(False, "Whether to run training.")
    do_eval: bool = option(False, "Whether to run eval on the dev set.")
    train_batch_size: int = option(32, "Total batch size for training.")
    eval_batch_size: int = option(8, "Total batch size for eval.")
    learning_rate: float = option(5e-5, "The initial learning rate for Adam.")
    save_checkpoints_steps: int = option(1000, "How often to save the model checkpoint.")
    optimizer: str = option("adamw", "The optimizer for training: adamw (AdamW with decoupled weight decay, the "
                            "fine-tuning scripts') or lamb (LAMB, run_pretraining.py's).", enum_values=OPTIMIZERS)

    def check_optimizer(self):
        """Raises `InputError` unless `optimizer` is one of `OPTIMIZERS` (the flag checks it; a Python caller's
        value is checked here)."""
        if self.optimizer not in OPTIMIZERS:
            raise InputError(f"`optimizer` must be one of {', '.join(OPTIMIZERS)}. Received: "
                             f"`optimizer={self.optimizer!r}`.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class FineTuningOptions(TaskOptions, TokenizerOptions):
    """The options that the original fine-tuning scripts share: the tokenizer, the TF-Hub module, prediction
    and export."""

    # The fine-tuning runners' SentencePiece model may also come from the TF-Hub module (the help says how).
    spm_model_file: Optional[str] = option(None, "The model file for sentence piece tokenization (unset, or "
                                           "'from_tf_hub', with --albert_hub_module_handle: the module's asset).")
    albert_hub_module_handle: Optional[str] = option(None, "If set, the ALBERT hub module to use (a local TF-Hub "
                                                     "module directory, or any source the checkpoint readers "
                                                     "accept).")
    do_predict: bool = option(False, "Whether to run the model in inference mode on the test set.")
    predict_batch_size: int = option(8, "Total batch size for predict.")
    export_dir: Optional[str] = option(None, "The directory where the exported SavedModel of the best model will "
                                       "be stored.")
    lora_rank: int = option(0, "Rank of Keras' LoRA adapters (`enable_lora`): 0 fine-tunes every weight; a rank > 0 "
                            "freezes the encoder and trains rank-`lora_rank` adapters on the --lora_targets "
                            "projections (with their biases) and the task's head. The checkpoints hold the "
                            "adapters; the export merges them into the kernels.")
    lora_targets: Optional[list] = option(None, "With --lora_rank: the encoder's dense layers that get adapters, among "
                                          "query, key, value, output_dense, ffn, ffn_output, "
                                          "embedding_hidden_mapping_in, pooler (default: query,value, as keras-hub).")
    freeze_encoder: bool = option(False, "Train the task's head only, every encoder weight frozen (the encoder's "
                                  "outputs are the initial weights'): runs of several tasks from the same initial "
                                  "weights then share one encoder in a multi-task export (albert-export --tasks).")

    def check_lora(self):
        """Raises `InputError` for a negative `lora_rank`, `lora_targets` without a rank, a target that is not
        one of the encoder's dense layers (`LORA_TARGET_NAMES`), or `freeze_encoder` with a rank."""
        if isinstance(self.lora_rank, bool) or not isinstance(self.lora_rank, int) or self.lora_rank < 0:
            raise InputError(f"`lora_rank` must be an int >= 0 (0: full fine-tuning). Received: "
                             f"`lora_rank={self.lora_rank!r}`.")
        if self.freeze_encoder and self.lora_rank:
            raise InputError(f"`freeze_encoder` and `lora_rank={self.lora_rank}` exclude each other: LoRA already "
                             "freezes the encoder (and trains its adapters); pass one of them.")
        if self.lora_targets and not self.lora_rank:
            raise InputError(f"`lora_targets={','.join(self.lora_targets)}` needs `lora_rank` > 0.")
        unknown = sorted(set(self.lora_targets or ()) - set(LORA_TARGET_NAMES))
        if unknown:
            raise InputError(f"`lora_targets` must be among {','.join(LORA_TARGET_NAMES)}. Received: "
                             f"{','.join(self.lora_targets)} ({', '.join(unknown)} unknown).")

    def check_vocabulary(self, spm_model_file, message="`spm_model_file` is required (or `vocab_file` for a "
                         "WordPiece model)."):
        """Raises `InputError(message)` unless the resolved `spm_model_file` or `vocab_file` is set."""
        if not spm_model_file and not self.vocab_file:
            raise InputError(message)


@dataclasses.dataclass(frozen=True, kw_only=True)
class StepsOptions(FineTuningOptions):
    """A fine-tuning task trained a number of steps on a data directory (GLUE, RACE, NER); each task gives
    `data_dir` its own help text (the layout it reads)."""

    positional: ClassVar[tuple] = ("data_dir", "output_dir")

    data_dir: str = option()
    train_step: int = option(1000, "Total number of training steps to perform.")
    warmup_step: int = option(0, "number of steps to perform linear learning rate warmup for.")

    def check_stages(self):
        """Raises `InputError` unless a stage is asked for."""
        if not (self.do_train or self.do_eval or self.do_predict or self.export_dir):
            raise InputError("At least one of `do_train`, `do_eval`, `do_predict` or `export_dir` must be set.")

    def check_batch_sizes(self):
        """Raises `InputError` for a batch size below 1."""
        for name in ("train_batch_size", "eval_batch_size", "predict_batch_size"):
            value = getattr(self, name)
            if int(value) < 1:
                raise InputError(f"`{name}` must be >= 1. Received: `{name}={value}`.")
