"""Typed options of a run: one `RuntimeOptions` shared by every task, one dataclass per task for what differs.

`run_classifier(...)`, `run_squad(...)`, `run_race(...)` and `run_pretraining(...)` split their keyword
arguments into a task's options and the `RuntimeOptions` (`split`); the `run_*.py` runners build the same two
from their flags through an explicit table flag -> field (`from_flags`), checked at start-up: a runner flag
that maps to no field, a field that no flag sets (unless the table says it has no flag), a field that does
not exist or is set by two flags is an `InputError` naming them. `albert_tf.training.driver.run` takes
the two and runs the task.
"""

import dataclasses
import sys
from typing import Optional

from albert_tf.errors import InputError


@dataclasses.dataclass(frozen=True)
class RuntimeOptions:
    """Where and how a task runs, the same for every task (the original TPU flags and the TF2 additions).

    Attributes:
        strategy: `one_device`, `mirrored`, `multi_worker` or `tpu` (`distribution.get_strategy`).
        use_tpu, tpu_name, tpu_zone, gcp_project, master, num_tpu_cores: the original TPU flags.
        mixed_precision: Keras dtype policy name, or None to leave the global policy as it is.
        jit_compile: bool, XLA for the training step and every task's eval/predict step (static batches).
        random_seed: int or None (unseeded, as the original).
        recompute: bool, recompute each transformer layer's activations in the backward pass.
        gradient_accumulation_steps: int, micro-batches summed into one optimizer step.
        iterations_per_loop: int, training steps per `tf.function` call.
    """

    strategy: str = "one_device"
    use_tpu: bool = False
    tpu_name: Optional[str] = None
    tpu_zone: Optional[str] = None
    gcp_project: Optional[str] = None
    master: Optional[str] = None
    num_tpu_cores: int = 8
    mixed_precision: Optional[str] = None
    jit_compile: bool = False
    random_seed: Optional[int] = None
    recompute: bool = False
    gradient_accumulation_steps: int = 1
    iterations_per_loop: int = 1000


class Stages:
    """What the driver asks of every task's options: the stages to run and the checkpoints they read."""

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
        return self.do_eval

    @property
    def runs_inference(self):
        """Whether a stage reads `model.ckpt-best` (else the latest checkpoint)."""
        return self.do_predict or bool(self.export_dir)

    @property
    def checked_init_path(self):
        """The initial weights a stage may read, checked before any work."""
        return self.init_path

    def stages(self):
        """`driver.run_stages` keyword arguments: `do_train`, `do_eval`, `do_predict`, `export_dir`."""
        return dict(do_train=self.do_train, do_eval=self.do_eval, do_predict=self.do_predict,
                    export_dir=self.export_dir)

    def train_options(self, runtime):
        """`driver.train` keyword arguments of the task's options and the runtime's."""
        return dict(learning_rate=self.learning_rate, train_batch_size=self.train_batch_size,
                    optimizer=self.optimizer, save_checkpoints_steps=self.save_checkpoints_steps,
                    iterations_per_loop=runtime.iterations_per_loop, jit_compile=runtime.jit_compile,
                    gradient_accumulation_steps=runtime.gradient_accumulation_steps)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifierOptions(Stages):
    """`run_classifier`'s task options (the original `run_classifier.py` flags; see `run_classifier`)."""

    task_name: str
    data_dir: str
    output_dir: str
    albert_config_file: Optional[str] = None
    spm_model_file: Optional[str] = None
    vocab_file: Optional[str] = None
    cached_dir: Optional[str] = None
    init_checkpoint: Optional[str] = None
    albert_hub_module_handle: Optional[str] = None
    do_lower_case: bool = True
    max_seq_length: int = 512
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    train_step: int = 1000
    warmup_step: int = 0
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    optimizer: str = "adamw"
    export_dir: Optional[str] = None
    threshold_to_export: float = float("nan")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadOptions(Stages):
    """`run_squad`'s task options (the original `run_squad_v1.py` / `run_squad_v2.py` flags)."""

    output_dir: str
    albert_config_file: Optional[str] = None
    spm_model_file: Optional[str] = None
    vocab_file: Optional[str] = None
    train_file: Optional[str] = None
    predict_file: Optional[str] = None
    train_feature_file: Optional[str] = None
    predict_feature_file: Optional[str] = None
    predict_feature_left_file: Optional[str] = None
    init_checkpoint: Optional[str] = None
    albert_hub_module_handle: Optional[str] = None
    do_lower_case: bool = True
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    do_train: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    save_checkpoints_steps: int = 1000
    n_best_size: int = 20
    max_answer_length: int = 30
    version_2_with_negative: bool = False
    null_score_diff_threshold: Optional[float] = None
    start_n_top: int = 5
    end_n_top: int = 5
    dropout_prob: float = 0.1
    use_einsum: bool = True
    export_dir: Optional[str] = None

    # SQuAD has no separate evaluation: `do_predict` scores every checkpoint, as the original.
    do_eval = False
    optimizer = "adamw"

    @property
    def evaluates_checkpoints(self):
        return self.do_predict


@dataclasses.dataclass(frozen=True, kw_only=True)
class RaceOptions(Stages):
    """`run_race`'s task options (the original `run_race.py` flags)."""

    data_dir: str
    output_dir: str
    albert_config_file: Optional[str] = None
    spm_model_file: Optional[str] = None
    vocab_file: Optional[str] = None
    task_name: str = "race"
    train_file: Optional[str] = None
    eval_file: Optional[str] = None
    predict_file: Optional[str] = None
    init_checkpoint: Optional[str] = None
    albert_hub_module_handle: Optional[str] = None
    do_lower_case: bool = True
    dropout_prob: float = 0.1
    max_seq_length: int = 512
    max_qa_length: int = 128
    num_keep_checkpoint: int = 5
    high_only: bool = False
    middle_only: bool = False
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 1e-5
    train_step: int = 12000
    warmup_step: int = 1000
    save_checkpoints_steps: int = 100
    export_dir: Optional[str] = None
    optimizer: str = "adamw"
    delete_non_best: bool = True


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingOptions(Stages):
    """`run_pretraining`'s task options (the original `run_pretraining.py` flags)."""

    albert_config_file: str
    input_file: str
    output_dir: str
    init_checkpoint: Optional[str] = None
    max_seq_length: int = 512
    max_predictions_per_seq: int = 20
    do_train: bool = True
    do_eval: bool = False
    train_batch_size: int = 4096
    eval_batch_size: int = 64
    optimizer: str = "lamb"
    learning_rate: float = 0.00176
    poly_power: float = 1.0
    num_train_steps: int = 125000
    num_warmup_steps: int = 3125
    start_warmup_step: int = 0
    save_checkpoints_steps: int = 5000
    keep_checkpoint_max: int = 5
    max_eval_steps: int = 100
    init_from_group0: bool = False
    masked_lm_budget: float = 0
    # No flag of the original: scales the sentence-level loss (1.0: the original's MLM + SOP; 0.0: MLM only).
    sentence_loss_weight: float = 1.0

    # Pretraining has no prediction stage nor export, and no asset source: the config file is required.
    do_predict = False
    export_dir = None
    asset_source = None
    runs_inference = False

    @property
    def checked_init_path(self):
        return self.init_checkpoint if self.do_train else None

    def train_options(self, runtime):
        return dict(super().train_options(runtime), keep_checkpoint_max=self.keep_checkpoint_max,
                    poly_power=self.poly_power, start_warmup_step=self.start_warmup_step)


def field_names(options_class):
    """The field names of an options dataclass, in order."""
    return [field.name for field in dataclasses.fields(options_class)]


def split(task_options_class, values):
    """`(task_options, RuntimeOptions)` from one dict of keyword arguments (a `run_*` function's arguments).

    Raises:
        TypeError: for a name that is a field of neither.
    """
    task_fields, runtime_fields = set(field_names(task_options_class)), set(field_names(RuntimeOptions))
    unknown = sorted(set(values) - task_fields - runtime_fields)
    if unknown:
        raise TypeError(f"Not options of {task_options_class.__name__} or RuntimeOptions: {', '.join(unknown)}.")
    return (task_options_class(**{k: v for k, v in values.items() if k in task_fields}),
            RuntimeOptions(**{k: v for k, v in values.items() if k in runtime_fields}))


@dataclasses.dataclass(frozen=True)
class FlagTable:
    """A runner's explicit mapping of its flags to option fields.

    Attributes:
        task_options: the task's options dataclass.
        fields: {flag name: field name} (a field of `task_options` or of `RuntimeOptions`).
        runner_only: flags the runner reads itself (e.g. `hparams_preset`), which map to no field.
        no_flag: fields that no flag of this runner sets (they keep their dataclass defaults).
    """

    task_options: type
    fields: dict
    runner_only: tuple = ()
    no_flag: tuple = ()

    def check(self, flag_names):
        """Raises `InputError` unless the table maps the runner's flags `flag_names` one-to-one onto the fields."""
        task_fields, runtime_fields = field_names(self.task_options), field_names(RuntimeOptions)
        all_fields = set(task_fields) | set(runtime_fields)
        problems = []
        unmapped = sorted(set(flag_names) - set(self.fields) - set(self.runner_only))
        if unmapped:
            problems.append(f"flags that map to no option field: {', '.join(unmapped)}")
        undefined = sorted((set(self.fields) | set(self.runner_only)) - set(flag_names))
        if undefined:
            problems.append(f"table entries for flags the runner does not define: {', '.join(undefined)}")
        unknown = sorted(set(self.fields.values()) - all_fields)
        if unknown:
            problems.append(f"fields that {self.task_options.__name__} and RuntimeOptions do not have: "
                            f"{', '.join(unknown)}")
        targets = list(self.fields.values())
        twice = sorted({name for name in targets if targets.count(name) > 1})
        if twice:
            problems.append(f"fields set by two flags: {', '.join(twice)}")
        unset = [name for name in task_fields + runtime_fields if name not in targets and name not in self.no_flag]
        if unset:
            problems.append(f"fields that no flag sets: {', '.join(unset)}")
        if problems:
            raise InputError(f"The flag table of {self.task_options.__name__} does not match the runner's flags: "
                             + "; ".join(problems) + ".")

    def options(self, flag_values, overrides=None):
        """`(task_options, RuntimeOptions)` from the parsed flags (after `check`); `overrides` {flag: value}
        replace flag values (e.g. a preset's, for flags the user did not give)."""
        overrides = overrides or {}
        values = {field: overrides.get(flag, flag_values[flag].value) for flag, field in self.fields.items()}
        return split(self.task_options, values)


def runner_flag_names(flag_values, runner):
    """The flags of `flag_values` that the runner module `runner` (its `__name__`) and
    `albert_tf.training.flags` define (not absl's `--help` and logging flags, nor TensorFlow's own)."""
    modules = {runner, "albert_tf.training.flags"}
    if runner == "__main__":
        modules.add(sys.argv[0])    # absl files the flags of the main module under the script's path
    by_module = flag_values.flags_by_module_dict()
    return {flag.name for module in modules for flag in by_module.get(module, ())}


def from_flags(flag_values, table, runner, overrides=None):
    """Checks `table` against the flags of the runner module `runner` (its `__name__`) and returns
    `(task_options, RuntimeOptions)` from them."""
    table.check(runner_flag_names(flag_values, runner))
    return table.options(flag_values, overrides)
