"""`albert-reproduce`: its options and its call over `albert_tf.reproduce` (the recipes of the task folders)."""

import dataclasses
import os
import sys
from typing import Optional

import tensorflow as tf
from absl import logging

from albert_tf import options as options_lib
from albert_tf import reproduce as reproduce_lib
from albert_tf.errors import InputError

CLI_HELP = """albert-reproduce: the original release's fine-tuning recipes on GLUE, SQuAD 1.1/2.0 and RACE, then
results.md with each task's dev score beside the published one. Example:
  albert-reproduce --init_checkpoint=albert_base_v2 --glue_dir=glue --squad_dir=squad --race_dir=race
      --output_dir=reproduce
Started again with the same command, it skips the finished tasks and resumes the interrupted one."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReproduceOptions(options_lib.ModelOptions, options_lib.TokenizerOptions):
    """`albert-reproduce`'s options: the runs, and the weights' files shared with the runners (`albert_config_file`
    and `spm_model_file` replace the weights' own, for every task); the data directories are `DataDirOptions`."""

    # The directory of the task runs and results.md, not of one run's checkpoints (the runners' `output_dir`).
    output_dir: Optional[str] = options_lib.option(None, "Directory of the task runs and results.md.")
    tasks: Optional[list] = options_lib.option(None, f"Tasks among {','.join(reproduce_lib.tasks())} (default: every "
                                               "task whose data is given).")
    model_name: Optional[str] = options_lib.option(None, "Published scores to compare with: base_v2 ... xxlarge_v1 "
                                                   "(default: read from the weights' name).")
    recipe: str = options_lib.option("release", "release: run_glue.sh and the README's commands; paper: the "
                                     "paper's fine-tuning table where it differs.", enum_values=("release", "paper"))


# One option per data directory the recipes read (`glue_dir`, ...), declared by the recipes' `DataDir`s.
DataDirOptions = dataclasses.make_dataclass(
    "DataDirOptions", [(name, Optional[str], options_lib.option(None, data_dir.help))
                       for name, data_dir in reproduce_lib.data_dirs().items()], frozen=True, kw_only=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReproduceRuntime(options_lib.RuntimeOptions):
    """The runners' runtime options that `albert-reproduce` passes to every task."""

    # `auto` (the default) picks the machine's strategy (`default_strategy`) where the runners default to one device.
    strategy: str = options_lib.option("auto", "auto: a TPU with --use_tpu/--tpu_name, all GPUs when there are "
                                       "several, else one device.",
                                       enum_values=("auto",) + options_lib.STRATEGIES)


# The fields of `ReproduceOptions` and `ReproduceRuntime` that have a flag (every field of `DataDirOptions` has).
FLAG_OPTIONS = {ReproduceOptions: ("output_dir", "init_checkpoint", "tasks", "model_name", "recipe",
                                   "albert_config_file", "spm_model_file"),
                ReproduceRuntime: ("strategy", "use_tpu", "tpu_name", "mixed_precision", "jit_compile",
                                   "random_seed")}


def reproduce_from_options(run, dirs, runtime):
    """`reproduce(...)` with the options of `ReproduceOptions` `run`, `DataDirOptions` `dirs` and
    `ReproduceRuntime` `runtime`."""
    for name in ("output_dir", "init_checkpoint"):
        if not getattr(run, name):
            raise InputError(f"`--{name}` is required.")
    assets = {key: getattr(run, key) for key in ("albert_config_file", "spm_model_file") if getattr(run, key)}
    given = {name: value for name, value in dataclasses.asdict(dirs).items() if value}
    return reproduce_lib.reproduce(
        run.output_dir, run.init_checkpoint, tasks=run.tasks, model_name=run.model_name, recipe=run.recipe,
        overrides={"*": assets}, strategy=None if runtime.strategy == "auto" else runtime.strategy,
        use_tpu=runtime.use_tpu, tpu_name=runtime.tpu_name, mixed_precision=runtime.mixed_precision,
        jit_compile=runtime.jit_compile, random_seed=runtime.random_seed, **given)


def _call(run, dirs, runtime):
    results = reproduce_from_options(run, dirs, runtime)
    path = os.path.join(run.output_dir, reproduce_lib.RESULTS_FILE)
    with tf.io.gfile.GFile(path) as f:
        sys.stdout.write(f.read())
    logging.info("Wrote %s (%d task(s)).", path, len(results))


COMMAND = options_lib.Command(name="albert-reproduce", help_text=CLI_HELP,
                              options=(ReproduceOptions, DataDirOptions, ReproduceRuntime), call=_call,
                              only=FLAG_OPTIONS)
