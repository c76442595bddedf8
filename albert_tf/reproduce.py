"""`albert-reproduce`: the original release's fine-tuning recipes in one command, and the dev scores beside the
published ones.

Given the data directories (GLUE, SQuAD 1.1/2.0, RACE) and the weights (a release name such as `albert_base_v2`,
a release directory or tarball, a TF-Hub module, a checkpoint), `reproduce(...)` runs each task through its
runner's library call (`run_classifier`, `run_squad`, `run_race`) with the original release's hyper-parameters
(`RECIPES`): `run_glue.sh`'s per-task values for GLUE, the original README's commands for SQuAD and RACE. Where
the paper's fine-tuning table (Appendix A.4) differs, the recipe says so, and `recipe="paper"` takes the
paper's values instead. Each task runs in `<output_dir>/<task>/`; a task whose `reproduce_result.json` exists is
not run again (a stopped job is started again with the same command: finished tasks are skipped, an interrupted
one resumes from its latest checkpoint). `results.md` lists each task's best dev score (the original's
selection: every checkpoint scored, the best kept) beside the published score of that model and version
(`PUBLISHED`), with the difference.
"""

import dataclasses
import json
import os
import re
import sys
from typing import Optional

import tensorflow as tf
from absl import flags
from absl import logging

from albert_tf import cli
from albert_tf.errors import InputError
from albert_tf.fileio import write_text_atomic
from albert_tf.tasks.glue.task import ClassifierOptions, hparams_preset, run_classifier
from albert_tf.tasks.race.task import RaceOptions, run_race
from albert_tf.tasks.squad.task import SquadOptions, run_squad
from albert_tf.training import options as options_lib

RESULTS_FILE = "results.md"
TASK_RESULT_FILE = "reproduce_result.json"

PUBLISHED_SOURCE = ("google-research/ALBERT README.md: the results table of the v1 and v2 models (dev sets; SQuAD "
                    "F1/EM) and the GLUE dev scores of ALBERT-xxlarge v1 (1.5M steps)")
# Published dev scores (percent) by model; source: `PUBLISHED_SOURCE`. The README gives the other GLUE tasks
# for xxlarge v1 only.
PUBLISHED = {
    "base_v2": {"squad1.1": (90.2, 83.2), "squad2.0": (82.1, 79.3), "mnli": 84.6, "sst-2": 92.9, "race": 66.8},
    "large_v2": {"squad1.1": (91.8, 85.2), "squad2.0": (84.9, 81.8), "mnli": 86.5, "sst-2": 94.9, "race": 75.2},
    "xlarge_v2": {"squad1.1": (92.9, 86.4), "squad2.0": (87.9, 84.1), "mnli": 87.9, "sst-2": 95.4, "race": 80.7},
    "xxlarge_v2": {"squad1.1": (94.6, 89.1), "squad2.0": (89.8, 86.9), "mnli": 90.6, "sst-2": 96.8, "race": 86.8},
    "base_v1": {"squad1.1": (89.3, 82.3), "squad2.0": (80.0, 77.1), "mnli": 81.6, "sst-2": 90.3, "race": 64.0},
    "large_v1": {"squad1.1": (90.6, 83.9), "squad2.0": (82.3, 79.4), "mnli": 83.5, "sst-2": 91.7, "race": 68.5},
    "xlarge_v1": {"squad1.1": (92.5, 86.1), "squad2.0": (86.1, 83.1), "mnli": 86.4, "sst-2": 92.4, "race": 74.8},
    "xxlarge_v1": {"squad1.1": (94.8, 89.3), "squad2.0": (90.2, 87.4), "mnli": 90.8, "sst-2": 96.9, "race": 86.5,
                   "qnli": 95.3, "qqp": 92.2, "rte": 89.2, "mrpc": 90.9, "cola": 71.4, "sts-b": 93.0},
}

GLUE_TASKS = ("cola", "sts-b", "sst-2", "mnli", "qnli", "qqp", "rte", "mrpc")
TASKS = GLUE_TASKS + ("squad1.1", "squad2.0", "race")
_GLUE_NAMES = {"cola": "CoLA", "sts-b": "STS-B", "sst-2": "SST-2", "mnli": "MNLI-m", "qnli": "QNLI", "qqp": "QQP",
               "rte": "RTE", "mrpc": "MRPC"}
# GLUE: the metric that picks `model.ckpt-best` in `run_classifier` (a fraction, shown in percent).
_GLUE_METRICS = {"cola": ("matthew_corr", "MCC"), "sts-b": ("pearson", "Pearson")}

# The original README's SQuAD command (both versions) and RACE command.
_SQUAD_README = dict(max_seq_length=384, doc_stride=128, max_query_length=64, train_batch_size=48,
                     learning_rate=5e-5, num_train_epochs=2.0, warmup_proportion=0.1, n_best_size=20,
                     max_answer_length=30)
_RACE_README = dict(max_seq_length=512, max_qa_length=128, train_batch_size=32, learning_rate=1e-5, train_step=12000,
                    warmup_step=1000)


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One task's run: the runner's keyword arguments (`release`), where they come from, and the paper's
    values where they differ (`paper`, applied with `recipe="paper"`)."""

    task: str
    release: dict
    source: str
    paper: dict = dataclasses.field(default_factory=dict)
    paper_v1: dict = dataclasses.field(default_factory=dict)   # the paper's values for v1 models only


def _glue_recipe(task):
    return Recipe(task, hparams_preset("albert", task), "run_glue.sh (the paper's Appendix A.4 has the same values)")


RECIPES = {task: _glue_recipe(task) for task in GLUE_TASKS}
RECIPES["squad1.1"] = Recipe("squad1.1", dict(_SQUAD_README, version_2_with_negative=False),
                             "README's run_squad_v1 command (the paper: the same values, 3649 steps = 2 epochs)")
RECIPES["squad2.0"] = Recipe("squad2.0", dict(_SQUAD_README, version_2_with_negative=True),
                             "README's run_squad_v2 command; the paper: learning rate 3e-5, max_seq_length 512, "
                             "3 epochs (8144 steps)",
                             paper=dict(learning_rate=3e-5, max_seq_length=512, num_train_epochs=3.0))
RECIPES["race"] = Recipe("race", dict(_RACE_README), "README's run_race command (v2 models); the paper for v1 "
                         "models: learning rate 2e-5", paper_v1=dict(learning_rate=2e-5))


def model_name_of(init_checkpoint):
    """`base_v2`-style name of a release name or path (`albert_base_v2`, `.../albert_large_v1.tar.gz`), or None."""
    name = os.path.basename(str(init_checkpoint).rstrip("/"))
    match = re.search(r"(xxlarge|xlarge|large|base)_v([12])(?![0-9])", name)
    return f"{match.group(1)}_v{match.group(2)}" if match else None


def task_arguments(task, recipe="release", model_name=None, overrides=None):
    """The runner's keyword arguments of `task` under `recipe` (`release` or `paper`), with `overrides`
    (`{"*": {...}, task: {...}}`, the keys a runner does not take ignored) applied last."""
    if recipe not in ("release", "paper"):
        raise InputError(f"`recipe` must be 'release' or 'paper'. Received: {recipe!r}.")
    entry = RECIPES[task]
    values = dict(entry.release)
    if recipe == "paper":
        values.update(entry.paper)
        if model_name and model_name.endswith("_v1"):
            values.update(entry.paper_v1)
    overrides = overrides or {}
    values.update(overrides.get("*", {}))
    values.update(overrides.get(task, {}))
    accepted = {field.name for cls in (_options_class(task), options_lib.RuntimeOptions)
                for field in options_lib.option_fields(cls)}
    return {key: value for key, value in values.items() if key in accepted}


def _options_class(task):
    """The options dataclass of `task`'s runner (the keywords it takes, with `RuntimeOptions`')."""
    if task in GLUE_TASKS:
        return ClassifierOptions
    return SquadOptions if task.startswith("squad") else RaceOptions


def _squad_files(squad_dir, task):
    version = task[len("squad"):]
    files = {"train_file": os.path.join(squad_dir, f"train-v{version}.json"),
             "predict_file": os.path.join(squad_dir, f"dev-v{version}.json")}
    for name, path in files.items():
        if not tf.io.gfile.exists(path):
            raise InputError(f"SQuAD {version}: `{name}` {path!r} not found (the data directory holds "
                             f"train-v{version}.json and dev-v{version}.json).")
    return files


def _run_task(task, output_dir, init_checkpoint, data_dirs, arguments, runtime):
    """Runs one task's stages (train, then score every checkpoint on dev); returns its rows' scores."""
    # The recipe's arguments (and the caller's overrides) win over the runtime's defaults.
    common = dict(runtime, output_dir=output_dir, init_checkpoint=init_checkpoint, **arguments)
    if task in GLUE_TASKS:
        result = run_classifier(task_name=task, data_dir=data_dirs["glue"], do_train=True, do_eval=True, **common)
        key, label = _GLUE_METRICS.get(task, ("eval_accuracy", "Accuracy"))
        return [(label, 100.0 * float(result["eval"][key]))], result["eval"].get("best_step")
    if task.startswith("squad"):
        result = run_squad(do_train=True, do_predict=True, **_squad_files(data_dirs["squad"], task), **common)
        metrics = result["eval"]
        exact = metrics["exact_match"] if "exact_match" in metrics else metrics["exact"]
        return [("F1", float(metrics["f1"])), ("EM", float(exact))], metrics.get("best_step")
    result = run_race(data_dir=data_dirs["race"], do_train=True, do_eval=True, **common)
    return [("Accuracy", 100.0 * float(result["eval"]["eval_accuracy"]))], result["eval"].get("best_step")


def _selected_tasks(tasks, data_dirs):
    if tasks:
        unknown = sorted(set(tasks) - set(TASKS))
        if unknown:
            raise InputError(f"Unknown task(s) {', '.join(unknown)}: `tasks` are among {', '.join(TASKS)}.")
    else:
        tasks = [t for t in TASKS if data_dirs[_data_key(t)]]
    missing = sorted({_data_key(t) for t in tasks if not data_dirs[_data_key(t)]})
    if missing:
        raise InputError(f"No data directory for {', '.join(missing)}: pass `{missing[0]}_dir` (or leave its tasks "
                         "out of `tasks`).")
    if not tasks:
        raise InputError("No task to run: pass at least one of `glue_dir`, `squad_dir`, `race_dir`.")
    for task in tasks:
        path = data_dirs[_data_key(task)]
        if not tf.io.gfile.isdir(path):
            raise InputError(f"`{_data_key(task)}_dir` {path!r} is not a directory.")
    return [t for t in TASKS if t in tasks]


def _data_key(task):
    return "glue" if task in GLUE_TASKS else ("squad" if task.startswith("squad") else "race")


def reproduce(output_dir, init_checkpoint, glue_dir=None, squad_dir=None, race_dir=None, tasks=None, model_name=None,
              recipe="release", overrides=None, strategy=None, use_tpu=False, tpu_name=None, mixed_precision=None,
              jit_compile=False, random_seed=None):
    """Runs the original release's fine-tuning recipes and writes `<output_dir>/results.md`.

    Args:
        output_dir: str, one directory per task (`<output_dir>/<task>`) and `results.md`.
        init_checkpoint: str, the weights: a release name (`albert_base_v2`), a release directory or tarball, a
            TF-Hub module, a checkpoint (its config and SentencePiece model are taken from it, unless
            `overrides` give `albert_config_file` / `spm_model_file`).
        glue_dir: str, the GLUE root (`CoLA/`, `MNLI/`, ...); squad_dir: str, holding `train-v1.1.json`,
            `dev-v1.1.json`, `train-v2.0.json`, `dev-v2.0.json`; race_dir: str, holding `RACE/`.
        tasks: list of task names among `TASKS`, or None: every task whose data directory is given.
        model_name: str, the model whose published scores are compared (`base_v2`, ..., `xxlarge_v1`); None:
            read from the weights' name; unknown: no published column.
        recipe: `release` (run_glue.sh, the README's commands) or `paper` (the paper's table where it differs).
        overrides: dict `{"*": {...}, task: {...}}` of runner arguments that replace the recipe's.
        strategy: None picks what the machine has (a TPU with `use_tpu`/`tpu_name`, every GPU with `mirrored`
            when there are several, else one device); or a `--strategy` value.
        use_tpu, tpu_name, mixed_precision, jit_compile, random_seed: the runners' runtime options.

    Returns:
        dict: task -> its result (`rows`: [(metric, dev score)], `best_step`, `arguments`).
    """
    data_dirs = {"glue": glue_dir, "squad": squad_dir, "race": race_dir}
    tasks = _selected_tasks(tasks, data_dirs)
    model_name = model_name or model_name_of(init_checkpoint)
    if model_name is not None and model_name not in PUBLISHED:
        raise InputError(f"`model_name` must be one of {', '.join(PUBLISHED)}. Received: {model_name!r}.")
    runtime = dict(strategy=strategy or default_strategy(use_tpu, tpu_name), use_tpu=use_tpu, tpu_name=tpu_name,
                   mixed_precision=mixed_precision, jit_compile=jit_compile, random_seed=random_seed)
    tf.io.gfile.makedirs(output_dir)
    results = {}
    for task in tasks:
        arguments = task_arguments(task, recipe, model_name, overrides)
        results[task] = _task_result(task, os.path.join(output_dir, task), init_checkpoint, data_dirs, arguments,
                                     runtime)
        write_text_atomic(os.path.join(output_dir, RESULTS_FILE),
                          format_results(results, model_name, recipe, init_checkpoint, runtime["strategy"]))
    return results


def _task_result(task, task_dir, init_checkpoint, data_dirs, arguments, runtime):
    """The task's saved result when it has one (a finished task is not run again), else runs it and saves it."""
    path = os.path.join(task_dir, TASK_RESULT_FILE)
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            saved = json.load(f)
        logging.info("%s: results found in %s, not run again.", task, path)
        return dict(saved, rows=[tuple(row) for row in saved["rows"]])
    logging.info("***** albert-reproduce: %s with %s *****", task, arguments)
    rows, best_step = _run_task(task, task_dir, init_checkpoint, data_dirs, arguments, runtime)
    result = {"rows": rows, "best_step": best_step, "arguments": arguments}
    write_text_atomic(path, json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def default_strategy(use_tpu=False, tpu_name=None):
    """The strategy of this machine: `tpu` when asked for (`use_tpu`, `tpu_name`), `mirrored` over several GPUs,
    else `one_device` (a GPU, or the CPU)."""
    if use_tpu or tpu_name:
        return "tpu"
    return "mirrored" if len(tf.config.list_logical_devices("GPU")) > 1 else "one_device"


def _display_name(task):
    return {"squad1.1": "SQuAD 1.1", "squad2.0": "SQuAD 2.0", "race": "RACE"}.get(task) or _GLUE_NAMES[task]


def _published(model_name, task, metric):
    value = PUBLISHED.get(model_name, {}).get(task)
    if isinstance(value, tuple):
        return value[0] if metric == "F1" else value[1]
    return value


def _recipe_text(arguments):
    keys = ("learning_rate", "train_batch_size", "train_step", "warmup_step", "num_train_epochs", "max_seq_length")
    return ", ".join(f"{key} {arguments[key]:g}" if isinstance(arguments[key], float) else f"{key} {arguments[key]}"
                     for key in keys if key in arguments)


def format_results(results, model_name, recipe, init_checkpoint, strategy):
    """`results.md`: one row per task and metric, the dev score beside the published one and the difference."""
    published_name = model_name or "unknown (pass `--model_name`)"
    lines = ["# ALBERT fine-tuning: dev scores against the published ones", "",
             f"Weights: `{init_checkpoint}`; published scores of: {published_name}; recipe: {recipe}; "
             f"strategy: {strategy}.", "",
             "| Task | Metric | Dev | Published | Difference | Best step | Hyper-parameters | Recipe source |",
             "|---|---|---|---|---|---|---|---|"]
    for task, result in results.items():
        best_step = "—" if result.get("best_step") is None else result["best_step"]
        for metric, value in result["rows"]:
            published = _published(model_name, task, metric)
            difference = "—" if published is None else f"{value - published:+.2f}"
            lines.append(f"| {_display_name(task)} | {metric} | {value:.2f} | "
                         f"{'—' if published is None else f'{published:.1f}'} | {difference} | {best_step} | "
                         f"{_recipe_text(result['arguments'])} | {RECIPES[task].source} |")
    lines += ["", f"Published scores: {PUBLISHED_SOURCE}. Dev scores are the best checkpoint's, chosen on the dev "
              "set as the original scripts do (MNLI: the matched dev set)."]
    return "\n".join(lines) + "\n"


CLI_HELP = """albert-reproduce: the original release's fine-tuning recipes on GLUE, SQuAD 1.1/2.0 and RACE, then
results.md with each task's dev score beside the published one. Example:
  albert-reproduce --init_checkpoint=albert_base_v2 --glue_dir=glue --squad_dir=squad --race_dir=race
      --output_dir=reproduce
Started again with the same command, it skips the finished tasks and resumes the interrupted one."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReproduceOptions(options_lib.ModelOptions, options_lib.TokenizerOptions):
    """`albert-reproduce`'s options: the runs, and the weights' files shared with the runners (`albert_config_file`
    and `spm_model_file` replace the weights' own, for every task)."""

    # The directory of the task runs and results.md, not of one run's checkpoints (the runners' `output_dir`).
    output_dir: Optional[str] = options_lib.option(None, "Directory of the task runs and results.md.")
    glue_dir: Optional[str] = options_lib.option(None, "GLUE root (CoLA/, MNLI/, ...).")
    squad_dir: Optional[str] = options_lib.option(None, "Directory of train-v1.1.json, dev-v1.1.json, "
                                                  "train-v2.0.json, dev-v2.0.json.")
    race_dir: Optional[str] = options_lib.option(None, "Directory holding RACE/.")
    tasks: Optional[list] = options_lib.option(None, f"Tasks among {','.join(TASKS)} (default: every task whose "
                                               "data is given).")
    model_name: Optional[str] = options_lib.option(None, "Published scores to compare with: base_v2 ... xxlarge_v1 "
                                                   "(default: read from the weights' name).")
    recipe: str = options_lib.option("release", "release: run_glue.sh and the README's commands; paper: the "
                                     "paper's fine-tuning table where it differs.", enum_values=("release", "paper"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReproduceRuntime(options_lib.RuntimeOptions):
    """The runners' runtime options that `albert-reproduce` passes to every task."""

    # `auto` (the default) picks the machine's strategy (`default_strategy`) where the runners default to one device.
    strategy: str = options_lib.option("auto", "auto: a TPU with --use_tpu/--tpu_name, all GPUs when there are "
                                       "several, else one device.",
                                       enum_values=("auto",) + options_lib.STRATEGIES)


# The fields of `ReproduceOptions` and `ReproduceRuntime` that have a flag.
FLAG_OPTIONS = {ReproduceOptions: ("output_dir", "init_checkpoint", "glue_dir", "squad_dir", "race_dir", "tasks",
                                   "model_name", "recipe", "albert_config_file", "spm_model_file"),
                ReproduceRuntime: ("strategy", "use_tpu", "tpu_name", "mixed_precision", "jit_compile",
                                   "random_seed")}


def define_flags(flag_values=flags.FLAGS):
    """The flags of `albert-reproduce`."""
    options_lib.define_flags(tuple(FLAG_OPTIONS), flag_values=flag_values, only=FLAG_OPTIONS)


def reproduce_from_options(run, runtime):
    """`reproduce(...)` with the options of `ReproduceOptions` `run` and `ReproduceRuntime` `runtime`."""
    for name in ("output_dir", "init_checkpoint"):
        if not getattr(run, name):
            raise InputError(f"`--{name}` is required.")
    assets = {key: getattr(run, key) for key in ("albert_config_file", "spm_model_file") if getattr(run, key)}
    return reproduce(run.output_dir, run.init_checkpoint, glue_dir=run.glue_dir, squad_dir=run.squad_dir,
                     race_dir=run.race_dir, tasks=run.tasks, model_name=run.model_name, recipe=run.recipe,
                     overrides={"*": assets}, strategy=None if runtime.strategy == "auto" else runtime.strategy,
                     use_tpu=runtime.use_tpu, tpu_name=runtime.tpu_name, mixed_precision=runtime.mixed_precision,
                     jit_compile=runtime.jit_compile, random_seed=runtime.random_seed)


def _main(argv):
    if len(argv) > 1:
        raise InputError(f"Unexpected arguments: {' '.join(argv[1:])}.")
    run, runtime = options_lib.from_flags(flags.FLAGS, *FLAG_OPTIONS)
    results = reproduce_from_options(run, runtime)
    path = os.path.join(run.output_dir, RESULTS_FILE)
    with tf.io.gfile.GFile(path) as f:
        sys.stdout.write(f.read())
    logging.info("Wrote %s (%d task(s)).", path, len(results))


def main():
    """Console script `albert-reproduce` (through `albert_tf.cli.reproduce`)."""
    define_flags()
    cli.run_app(_main, CLI_HELP, [__name__])
