"""The original release's fine-tuning recipes in one run, and the dev scores beside the published ones (the
library of `albert-reproduce`).

Given the data directories and the weights (a release name such as `albert_base_v2`, a release directory or
tarball, a TF-Hub module, a checkpoint), `reproduce(...)` runs each task's `Recipe` through its runner's library
call with the original release's hyper-parameters: `run_glue.sh`'s per-task values for GLUE, the original
README's commands for SQuAD and RACE. Where the paper's fine-tuning table (Appendix A.4) differs, the recipe says
so, and `recipe="paper"` takes the paper's values instead. The recipes live in their task folders
(`albert_tf/tasks/<task>/recipes.py`, `RECIPES`), each with the data directory it reads (`DataDir`) and the
published scores of every model; this module names no task. Each task runs in `<output_dir>/<task>/`; a task whose
`reproduce_result.json` exists is not run again (a stopped job is started again with the same command: finished
tasks are skipped, an interrupted one resumes from its latest checkpoint). A task directory keeps what its run was
given (`reproduce_run.json`: weights, arguments, runtime, data); a rerun with anything else is refused naming the
difference, so neither stored results nor checkpoints of another run are reused. `output_dir` is held by one run
at a time (`fileio.output_lock`). `results.md` lists each task's best
dev score (the original's selection: every checkpoint scored, the best kept) beside the published score of that
model and version, with the difference.
"""

import dataclasses
import importlib
import importlib.util
import json
import os
import re
from typing import Callable

import tensorflow as tf
from absl import logging

from albert_tf import options as options_lib
from albert_tf.errors import InputError
from albert_tf.fileio import output_lock, write_text_atomic

RESULTS_FILE = "results.md"
TASK_RESULT_FILE = "reproduce_result.json"
TASK_RUN_FILE = "reproduce_run.json"   # what a task's run was given: its results are reused only for the same
TASKS_PACKAGE = "albert_tf.tasks"
RECIPES_MODULE = "recipes"   # the module of a task package that declares its `RECIPES`

PUBLISHED_SOURCE = ("google-research/ALBERT README.md: the results table of the v1 and v2 models (dev sets; SQuAD "
                    "F1/EM) and the GLUE dev scores of ALBERT-xxlarge v1 (1.5M steps)")
# The released models whose published scores the recipes give.
MODEL_NAMES = tuple(f"{size}_v{version}" for version in (2, 1) for size in ("base", "large", "xlarge", "xxlarge"))


@dataclasses.dataclass(frozen=True)
class DataDir:
    """A data directory that recipes read: its option of `albert-reproduce` (`glue_dir`, ...) and help text."""

    name: str
    help: str


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One task's run.

    Attributes:
        task: the task's name in `tasks` and `results.md` (`mnli`, `squad1.1`, ...).
        display: its name in `results.md` (`MNLI-m`, `SQuAD 1.1`).
        data: the `DataDir` it reads.
        options_class: the options dataclass of its runner (the keywords it takes, with `RuntimeOptions`').
        run: `run(task_dir, init_checkpoint, data_dir, arguments, runtime) -> (rows, best_step)`: the runner
            called with the recipe's `arguments` and the `runtime` keywords; `rows` are `(metric, dev score)`.
        release: the runner's keyword arguments of the original release.
        source: where `release` comes from, and how the paper differs.
        published: `{model name: score}` (a tuple for several metrics, in the order of `rows`), from
            `PUBLISHED_SOURCE`.
        paper: the paper's values where they differ (applied with `recipe="paper"`); paper_v1: for v1 models.
        order: the recipe's place in `results.md` and in the default task list.
    """

    task: str
    display: str
    data: DataDir
    options_class: type
    run: Callable
    release: dict
    source: str
    published: dict = dataclasses.field(default_factory=dict)
    paper: dict = dataclasses.field(default_factory=dict)
    paper_v1: dict = dataclasses.field(default_factory=dict)
    order: int = 100


def recipes():
    """`{task: Recipe}` of every task package's `recipes` module, by `order`."""
    package = importlib.import_module(TASKS_PACKAGE)
    found = []
    for task in package.names():
        name = f"{TASKS_PACKAGE}.{task}.{RECIPES_MODULE}"
        if importlib.util.find_spec(name) is not None:
            found.extend(importlib.import_module(name).RECIPES)
    return {recipe.task: recipe for recipe in sorted(found, key=lambda recipe: recipe.order)}


def tasks():
    """The names of the recipes' tasks, in order."""
    return tuple(recipes())


def data_dirs():
    """`{option name: DataDir}` of the data directories the recipes read, in the recipes' order."""
    found = {}
    for recipe in recipes().values():
        found.setdefault(recipe.data.name, recipe.data)
    return found


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
    entry = recipes()[task]
    values = dict(entry.release)
    if recipe == "paper":
        values.update(entry.paper)
        if model_name and model_name.endswith("_v1"):
            values.update(entry.paper_v1)
    overrides = overrides or {}
    values.update(overrides.get("*", {}))
    values.update(overrides.get(task, {}))
    accepted = {field.name for cls in (entry.options_class, options_lib.RuntimeOptions)
                for field in options_lib.option_fields(cls)}
    return {key: value for key, value in values.items() if key in accepted}


def _selected_tasks(selected, dirs):
    known = recipes()
    if selected:
        unknown = sorted(set(selected) - set(known))
        if unknown:
            raise InputError(f"Unknown task(s) {', '.join(unknown)}: `tasks` are among {', '.join(known)}.")
    else:
        selected = [task for task, entry in known.items() if dirs.get(entry.data.name)]
    missing = sorted({known[task].data.name for task in selected if not dirs.get(known[task].data.name)})
    if missing:
        raise InputError(f"No data directory for {', '.join(name[:-len('_dir')] for name in missing)}: pass "
                         f"`{missing[0]}` (or leave its tasks out of `tasks`).")
    if not selected:
        raise InputError(f"No task to run: pass at least one of {', '.join(f'`{name}`' for name in data_dirs())}.")
    for task in selected:
        name = known[task].data.name
        if not tf.io.gfile.isdir(dirs[name]):
            raise InputError(f"`{name}` {dirs[name]!r} is not a directory.")
    return [task for task in known if task in selected]


def reproduce(output_dir, init_checkpoint, tasks=None, model_name=None, recipe="release", overrides=None,
              strategy=None, use_tpu=False, tpu_name=None, mixed_precision=None, jit_compile=False,
              random_seed=None, **dirs):
    """Runs the original release's fine-tuning recipes and writes `<output_dir>/results.md`.

    Args:
        output_dir: str, one directory per task (`<output_dir>/<task>`) and `results.md`.
        init_checkpoint: str, the weights: a release name (`albert_base_v2`), a release directory or tarball, a
            TF-Hub module, a checkpoint (its config and SentencePiece model are taken from it, unless
            `overrides` give `albert_config_file` / `spm_model_file`).
        tasks: list of task names among `tasks()`, or None: every task whose data directory is given.
        model_name: str, the model whose published scores are compared (`base_v2`, ..., `xxlarge_v1`); None:
            read from the weights' name; unknown: no published column.
        recipe: `release` (run_glue.sh, the README's commands) or `paper` (the paper's table where it differs).
        overrides: dict `{"*": {...}, task: {...}}` of runner arguments that replace the recipe's.
        strategy: None picks what the machine has (a TPU with `use_tpu`/`tpu_name`, every GPU with `mirrored`
            when there are several, else one device); or a `--strategy` value.
        use_tpu, tpu_name, mixed_precision, jit_compile, random_seed: the runners' runtime options.
        **dirs: the data directories by their `DataDir` names (`glue_dir`: the GLUE root with `CoLA/`,
            `MNLI/`, ...; `squad_dir`: holding `train-v1.1.json`, `dev-v1.1.json`, `train-v2.0.json`,
            `dev-v2.0.json`; `race_dir`: holding `RACE/`).

    Returns:
        dict: task -> its result (`rows`: [(metric, dev score)], `best_step`, `arguments`).
    """
    unknown = sorted(set(dirs) - set(data_dirs()))
    if unknown:
        raise InputError(f"Unknown data directories {', '.join(unknown)}: the recipes read "
                         f"{', '.join(data_dirs())}.")
    selected = _selected_tasks(tasks, dirs)
    model_name = model_name or model_name_of(init_checkpoint)
    if model_name is not None and model_name not in MODEL_NAMES:
        raise InputError(f"`model_name` must be one of {', '.join(MODEL_NAMES)}. Received: {model_name!r}.")
    runtime = dict(strategy=strategy or default_strategy(use_tpu, tpu_name), use_tpu=use_tpu, tpu_name=tpu_name,
                   mixed_precision=mixed_precision, jit_compile=jit_compile, random_seed=random_seed)
    runs = {task: run_identity(init_checkpoint, model_name, task_arguments(task, recipe, model_name, overrides),
                               runtime, dirs[recipes()[task].data.name]) for task in selected}
    with output_lock(output_dir):
        for task in selected:   # every task checked before any runs
            check_same_run(os.path.join(output_dir, task), runs[task])
        results = {}
        for task in selected:
            results[task] = _task_result(task, os.path.join(output_dir, task), init_checkpoint, dirs, runs[task],
                                         runtime)
            write_text_atomic(os.path.join(output_dir, RESULTS_FILE),
                              format_results(results, model_name, recipe, init_checkpoint, runtime["strategy"]))
    return results


def run_identity(init_checkpoint, model_name, arguments, runtime, data_dir):
    """What decides a task's results: the weights, the model name, the runner's arguments, the runtime and the
    data directory, as plain JSON values."""
    return json.loads(json.dumps({"init_checkpoint": str(init_checkpoint), "model_name": model_name,
                                  "data_dir": str(data_dir), "arguments": arguments, "runtime": runtime},
                                 sort_keys=True, default=str))


def _flat(identity):
    flat = {key: value for key, value in identity.items() if not isinstance(value, dict)}
    for group in ("arguments", "runtime"):
        flat.update({f"{group}.{key}": value for key, value in identity.get(group, {}).items()})
    return flat


def check_same_run(task_dir, identity):
    """Raises `InputError` when `task_dir` holds a run (finished or not) given other weights or arguments than
    `identity`: its checkpoints and results belong to that run, and resuming or reusing them would mix two runs."""
    path = os.path.join(task_dir, TASK_RUN_FILE)
    if not tf.io.gfile.exists(path):
        if tf.io.gfile.exists(os.path.join(task_dir, TASK_RESULT_FILE)):
            raise InputError(f"`{task_dir}` holds results without the arguments they were computed with (an older "
                             f"albert_tf): give another `output_dir`, or remove `{task_dir}` to run it again.")
        return
    with tf.io.gfile.GFile(path) as f:
        stored = json.load(f)
    if stored == identity:
        return
    old, new = _flat(stored), _flat(identity)
    differences = [f"{key} {old.get(key)!r} there, {new.get(key)!r} now" for key in sorted(set(old) | set(new))
                   if old.get(key) != new.get(key)]
    raise InputError(f"`{task_dir}` holds a run with other arguments ({'; '.join(differences[:3])}"
                     f"{'; ...' if len(differences) > 3 else ''}): give another `output_dir`, or remove "
                     f"`{task_dir}` to run it again.")


def _task_result(task, task_dir, init_checkpoint, dirs, identity, runtime):
    """The task's saved result when it has one (a finished task is not run again: `check_same_run` made sure it
    was given the same), else runs it (its `identity` written first, `run_identity`, and taken back when the
    runner refuses its arguments before it trained) and saves it."""
    arguments = identity["arguments"]
    path = os.path.join(task_dir, TASK_RESULT_FILE)
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            saved = json.load(f)
        logging.info("%s: results found in %s, not run again.", task, path)
        return dict(saved, rows=[tuple(row) for row in saved["rows"]])
    created = not tf.io.gfile.exists(task_dir)
    run_file = os.path.join(task_dir, TASK_RUN_FILE)
    recorded = tf.io.gfile.exists(run_file)
    tf.io.gfile.makedirs(task_dir)
    write_text_atomic(run_file, json.dumps(identity, indent=1, sort_keys=True) + "\n")
    logging.info("***** albert-reproduce: %s with %s *****", task, arguments)
    entry = recipes()[task]
    try:
        rows, best_step = entry.run(task_dir, init_checkpoint, dirs[entry.data.name], arguments, runtime)
    except InputError:
        # A run refused before it trained (no checkpoint) holds nothing of those arguments: its record goes, so
        # the corrected command is not refused as "a run with other arguments".
        if not recorded and not tf.io.gfile.glob(os.path.join(task_dir, "model.ckpt-*")):
            tf.io.gfile.remove(run_file)
            if created and not tf.io.gfile.listdir(task_dir):
                tf.io.gfile.rmtree(task_dir)
        raise
    result = {"rows": rows, "best_step": best_step, "arguments": arguments}
    write_text_atomic(path, json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def default_strategy(use_tpu=False, tpu_name=None):
    """The strategy of this machine: `tpu` when asked for (`use_tpu`, `tpu_name`), `mirrored` over several GPUs,
    else `one_device` (a GPU, or the CPU)."""
    if use_tpu or tpu_name:
        return "tpu"
    return "mirrored" if len(tf.config.list_logical_devices("GPU")) > 1 else "one_device"


def published(model_name, task, index=0):
    """The published score of `model_name` on `task` (`index`: which of a tuple of metrics), or None."""
    value = recipes()[task].published.get(model_name)
    if isinstance(value, tuple):
        return value[index]
    return value


def _recipe_text(arguments):
    keys = ("learning_rate", "train_batch_size", "train_step", "warmup_step", "num_train_epochs", "max_seq_length")
    return ", ".join(f"{key} {arguments[key]:g}" if isinstance(arguments[key], float) else f"{key} {arguments[key]}"
                     for key in keys if key in arguments)


def format_results(results, model_name, recipe, init_checkpoint, strategy):
    """`results.md`: one row per task and metric, the dev score beside the published one and the difference."""
    published_name = model_name or "unknown (pass `--model_name`)"
    known = recipes()
    lines = ["# ALBERT fine-tuning: dev scores against the published ones", "",
             f"Weights: `{init_checkpoint}`; published scores of: {published_name}; recipe: {recipe}; "
             f"strategy: {strategy}.", "",
             "| Task | Metric | Dev | Published | Difference | Best step | Hyper-parameters | Recipe source |",
             "|---|---|---|---|---|---|---|---|"]
    for task, result in results.items():
        best_step = "—" if result.get("best_step") is None else result["best_step"]
        for index, (metric, value) in enumerate(result["rows"]):
            score = published(model_name, task, index)
            difference = "—" if score is None else f"{value - score:+.2f}"
            lines.append(f"| {known[task].display} | {metric} | {value:.2f} | "
                         f"{'—' if score is None else f'{score:.1f}'} | {difference} | {best_step} | "
                         f"{_recipe_text(result['arguments'])} | {known[task].source} |")
    lines += ["", f"Published scores: {PUBLISHED_SOURCE}. Dev scores are the best checkpoint's, chosen on the dev "
              "set as the original scripts do (MNLI: the matched dev set)."]
    return "\n".join(lines) + "\n"
