"""absl flags shared by the `run_*.py` CLIs: the flags the original fine-tuning scripts have in common, the
original TPU flags, and the TF2 runtime additions.

Library code never reads FLAGS: a CLI calls `define_task_flags(...)` and `define_runtime_flags()` at import,
and its `main` builds the typed options from the parsed flags through its explicit table flag -> field
(`albert_tf.training.options.FlagTable`, `task_flag_fields` and `runtime_flag_fields` below).
"""

from absl import flags

from albert_tf.errors import InputError
from albert_tf.training.distribution import MIXED_PRECISION_POLICIES, STRATEGIES

# The flags that the original `run_classifier.py`, `run_squad_v1.py` / `run_squad_v2.py` and `run_race.py`
# share, with the original names, kinds, defaults and help texts. A script whose own default differs passes it
# to `define_task_flags` (e.g. `run_race.py`'s learning rate 1e-5, `run_squad_v1.py`'s sequence length 384).
_TASK_FLAGS = {
    "albert_config_file": ("string", None, "The config json file corresponding to the pre-trained ALBERT model. "
                           "This specifies the model architecture."),
    "vocab_file": ("string", None, "The vocabulary file that the ALBERT model was trained on."),
    "spm_model_file": ("string", None, "The model file for sentence piece tokenization (unset, or "
                       "'from_tf_hub', with --albert_hub_module_handle: the module's asset)."),
    "output_dir": ("string", None, "The output directory where the model checkpoints will be written."),
    "init_checkpoint": ("string", None, "Initial checkpoint (usually from a pre-trained ALBERT model)."),
    "albert_hub_module_handle": ("string", None, "If set, the ALBERT hub module to use (a local TF-Hub module "
                                 "directory, or any source the checkpoint readers accept)."),
    "do_lower_case": ("bool", True, "Whether to lower case the input text. Should be True for uncased models and "
                      "False for cased models."),
    "max_seq_length": ("integer", 512, "The maximum total input sequence length after tokenization. Sequences "
                       "longer than this will be truncated, and sequences shorter than this will be padded."),
    "do_train": ("bool", False, "Whether to run training."),
    "do_eval": ("bool", False, "Whether to run eval on the dev set."),
    "do_predict": ("bool", False, "Whether to run the model in inference mode on the test set."),
    "train_batch_size": ("integer", 32, "Total batch size for training."),
    "eval_batch_size": ("integer", 8, "Total batch size for eval."),
    "predict_batch_size": ("integer", 8, "Total batch size for predict."),
    "learning_rate": ("float", 5e-5, "The initial learning rate for Adam."),
    "save_checkpoints_steps": ("integer", 1000, "How often to save the model checkpoint."),
    "iterations_per_loop": ("integer", 1000, "How many steps to make in each estimator call."),
    "export_dir": ("string", None, "The directory where the exported SavedModel of the best model will be "
                   "stored."),
}

FINE_TUNING_FLAGS = tuple(_TASK_FLAGS)


def define_task_flags(names=FINE_TUNING_FLAGS, defaults=None, flag_values=flags.FLAGS):
    """Defines the shared fine-tuning flags `names` (keys of `_TASK_FLAGS`) as the original scripts do.

    Args:
        names: the flags the script has.
        defaults: {name: default} where the script's own default differs from the table's.
        flag_values: the `FlagValues` to define them in.
    """
    defaults = defaults or {}
    unknown = sorted(set(names).union(defaults) - set(_TASK_FLAGS))
    if unknown:
        raise InputError(f"Not shared fine-tuning flags: {', '.join(unknown)}.")
    for name in names:
        kind, default, help_text = _TASK_FLAGS[name]
        getattr(flags, f"DEFINE_{kind}")(name, defaults.get(name, default), help_text, flag_values=flag_values)


def define_runtime_flags(gradient_accumulation=False, flag_values=flags.FLAGS):
    """Defines `use_tpu`, `tpu_name`, `tpu_zone`, `gcp_project`, `master`, `num_tpu_cores` (as the original),
    `strategy`, `mixed_precision`, `jit_compile`, and `gradient_accumulation_steps` when asked.

    Flags already defined (by another module in the same process) are left as they are.
    """

    def define(kind, name, default, help_text, enum_values=None):
        if name in flag_values:
            return
        if kind == "enum":
            flags.DEFINE_enum(name, default, enum_values, help_text, flag_values=flag_values)
        else:
            getattr(flags, f"DEFINE_{kind}")(name, default, help_text, flag_values=flag_values)

    define("bool", "use_tpu", False, "Whether to use TPU or GPU/CPU.")
    define("string", "tpu_name", None,
           "The Cloud TPU to use for training. This should be either the name used when creating the Cloud "
           "TPU, or a grpc://ip.address.of.tpu:8470 url.")
    define("string", "tpu_zone", None,
           "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we will attempt to "
           "automatically detect the GCE project from metadata.")
    define("string", "gcp_project", None,
           "[Optional] Project name for the Cloud TPU-enabled project. If not specified, we will attempt to "
           "automatically detect the GCE project from metadata.")
    define("string", "master", None, "[Optional] TensorFlow master URL.")
    define("integer", "num_tpu_cores", 8, "Only used if `use_tpu` is True. Total number of TPU cores to use.")
    define("enum", "strategy", "one_device",
           "tf.distribute strategy: one_device (first GPU or the CPU), mirrored (all local GPUs), "
           "multi_worker (MultiWorkerMirroredStrategy from TF_CONFIG) or tpu (also set by --use_tpu).",
           enum_values=list(STRATEGIES))
    define("enum", "mixed_precision", "float32",
           "Keras dtype policy: float32, mixed_bfloat16 (TPU/CPU) or mixed_float16 (GPU, with loss scaling).",
           enum_values=list(MIXED_PRECISION_POLICIES))
    define("bool", "jit_compile", False, "Compile the training step (forward and backward pass) and the "
           "eval/predict steps with XLA; eval/predict batches are then padded to one static shape.")
    if gradient_accumulation:
        define("integer", "gradient_accumulation_steps", 1,
               "Split each training batch into this many micro-batches and sum their gradients before one "
               "optimizer step (same global batch on less memory).")


def define_seed_and_memory_flags(flag_values=flags.FLAGS):
    """Defines `random_seed` (default None: unseeded, as the original, which has no such flag) and `recompute`.

    Flags already defined are left as they are.
    """
    if "random_seed" not in flag_values:
        flags.DEFINE_integer("random_seed", None,
                             "Seed of the weight initialisation, dropout and input shuffles, for repeatable runs. "
                             "Unset: an unseeded run, as the original.", flag_values=flag_values)
    if "recompute" not in flag_values:
        flags.DEFINE_bool("recompute", False,
                          "Recompute each transformer layer's activations in the backward pass: less activation "
                          "memory for about one extra forward pass.", flag_values=flag_values)


def task_flag_fields(names=FINE_TUNING_FLAGS):
    """{flag: option field} of the shared fine-tuning flags `names`: each sets the field of its name
    (`iterations_per_loop` the `RuntimeOptions` one)."""
    unknown = sorted(set(names) - set(_TASK_FLAGS))
    if unknown:
        raise InputError(f"Not shared fine-tuning flags: {', '.join(unknown)}.")
    return {name: name for name in names}


def runtime_flag_fields(gradient_accumulation=False):
    """{flag: `RuntimeOptions` field} of the flags of `define_runtime_flags(gradient_accumulation)` and
    `define_seed_and_memory_flags()`."""
    fields = {"use_tpu": "use_tpu", "tpu_name": "tpu_name", "tpu_zone": "tpu_zone", "gcp_project": "gcp_project",
              "master": "master", "num_tpu_cores": "num_tpu_cores", "strategy": "strategy",
              "mixed_precision": "mixed_precision", "jit_compile": "jit_compile", "random_seed": "random_seed",
              "recompute": "recompute"}
    if gradient_accumulation:
        fields["gradient_accumulation_steps"] = "gradient_accumulation_steps"
    return fields
