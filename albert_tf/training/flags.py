"""absl flags shared by the `run_*.py` CLIs: the original TPU flags plus the TF2 runtime additions.

Library code never reads FLAGS: a CLI calls `define_runtime_flags()` at import, then passes
`runtime_kwargs(FLAGS)` to its library function.
"""

from absl import flags

from albert_tf.training.distribution import MIXED_PRECISION_POLICIES, STRATEGIES

_RUNTIME_FLAGS = ("use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master", "num_tpu_cores", "strategy",
                  "mixed_precision", "jit_compile")


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
    define("bool", "jit_compile", False, "Compile the forward and backward pass with XLA.")
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


def runtime_kwargs(flag_values=flags.FLAGS):
    """The runtime flags as a dict (`strategy`, `use_tpu`, ..., `jit_compile`, and `gradient_accumulation_steps`,
    `random_seed`, `recompute` when defined), for the run_* functions."""
    names = list(_RUNTIME_FLAGS)
    names += [name for name in ("gradient_accumulation_steps", "random_seed", "recompute") if name in flag_values]
    return {name: flag_values[name].value for name in names}
