"""The layout: a task is one folder (`albert_tf/tasks/<task>/`), and nothing outside the task folders names one.

`test_a_new_task_folder_is_known_everywhere` copies the package, adds a task folder `tasks/toytag/` (a token
tagger of tests/toy_tagger.py with its own head, TF1 names, serving spec, text pipeline and option
dataclass) and, in a fresh process
that imports the copy, asks the shared machinery for it: the registry, `albert_tf.<Class>`, Keras's table of
names, the converter's and the export's model lists, its command line (`albert_tf.commands`), its recipe of
`albert-reproduce`, a SavedModel export that records its kind, and `albert_tf.pipeline(task, export)`. No file of the copy outside `tasks/toytag/` differs from the package.

`test_no_module_outside_the_tasks_names_a_task` reads the code (imports, names and strings; docstrings and
comments are prose) of every module outside `tasks/` for a task package or a task's model kind.
"""

import ast
import filecmp
import inspect
import io
import json
import os
import shutil
import subprocess
import sys
import tokenize

import pytest

import toy_tagger
from fresh_process import same_cpu_backend
from glue_fixtures import model_files  # noqa: F401  (a fixture)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(REPO, "albert_tf")
# The consumer that puts the tasks together on purpose: the quickstart (pretraining then GLUE) names its tasks.
CONSUMERS = ("quickstart",)

TOY_INIT = '''"""A toy token tagger: the folder a new task adds, and nothing else."""

KERAS_CLASSES = ("AlbertToyTagger",)
COMMANDS = {"run_toytag": "albert_tf.tasks.toytag.task:RUN_TOYTAG"}
'''

# Its command line (a runner's `Command`) and its recipe of `albert-reproduce`.
TOY_TASK = '''"""The toy tagger's runner."""
from albert_tf import options as options_lib
from albert_tf.tasks.toytag.model import ToyTagOptions


def run_toytag(data_dir, output_dir, **kwargs):
    return {"data_dir": data_dir, "output_dir": output_dir, **kwargs}


RUN_TOYTAG = options_lib.Command(name="run_toytag", help_text="Tags toys.",
                                 options=(ToyTagOptions, options_lib.RuntimeOptions),
                                 call=lambda options, runtime: run_toytag(options.data_dir, options.output_dir))
'''
TOY_RECIPES = '''"""The toy tagger's recipe."""
from albert_tf.reproduce import DataDir, Recipe
from albert_tf.tasks.toytag.model import ToyTagOptions
from albert_tf.tasks.toytag.task import run_toytag

RECIPES = (Recipe("toytag", "Toy tagging", DataDir("toy_dir", "Directory holding the toy data."), ToyTagOptions,
                  lambda *args: ([("F1", 1.0)], None), dict(learning_rate=1e-4), "none", order=900),)
'''

# The toy tagger of tests/toy_tagger.py, as the new folder's model module (its Keras class and an option
# dataclass) and kind module (its serving spec, the head's TF1 names and its registration).
TOY_MODEL = "\n".join([
    '"""`AlbertToyTagger`: `sequence_output` -> `tagger/output_weights [num_labels, H]`, `output_bias`."""',
    "import dataclasses",
    "import keras",
    "from albert_tf.layers.heads import AlbertOutputProjection",
    "from albert_tf.models.albert_model import AlbertModel, as_config",
    "from albert_tf.models.base import PretrainedMixin",
    "from albert_tf import options as options_lib",
    "",
    '@keras.saving.register_keras_serializable(package="albert_tf")',
    inspect.getsource(toy_tagger.AlbertToyTagger),
    "@dataclasses.dataclass(frozen=True, kw_only=True)",
    "class ToyTagOptions(options_lib.FineTuningOptions):",
    '    toy_window: int = options_lib.option(16, "Words per window of the toy tagger.")',
    ""])
TOY_KIND = "\n".join([
    '"""The `toy_tagger` model kind."""',
    "from albert_tf import registry",
    "from albert_tf.checkpoints import table",
    "from albert_tf.checkpoints.foreign import Link",
    "from albert_tf.serving_spec import ServingSpec",
    "from albert_tf.tasks.toytag.model import AlbertToyTagger",
    "",
    inspect.getsource(toy_tagger.ToySpec),
    'ToySpec.pipeline_tasks = ("toy-tagging",)',
    "",
    'HEAD = registry.Head("toy_tagger", rows=tuple(table.output_projection_rows("toy_tagger", "tagger", "tagger_head")),',
    '                     hf_links=(Link("tagger/output_weights", "classifier.weight"),',
    '                               Link("tagger/output_bias", "classifier.bias")))',
    "KIND = registry.register(registry.ModelKind(",
    '    name="toy_tagger", model_class=AlbertToyTagger, heads=(HEAD,), serving_spec=ToySpec(),',
    '    hf_architecture="AlbertForToyTagging", labels_variable="tagger/output_weights"))',
    ""])

TOY_PIPELINE = '''"""The `"toy-tagging"` pipeline: a sentence in, one tag id per piece out."""

import numpy as np

from albert_tf import registry
from albert_tf.pipelines import Pipeline
from albert_tf.tasks.toytag.model import AlbertToyTagger


@registry.register_pipeline
class ToyTaggingPipeline(Pipeline):
    task = "toy-tagging"
    model_class = AlbertToyTagger
    required_heads = ("toy_tagger",)
    defaults = {"max_seq_length": 16, "do_lower_case": True}
    output_names = ("logits",)

    def _check(self, item, index):
        return self._text_pair(item, index)

    def _encode(self, items):
        rows = [self._pack(index, a, b) for index, (a, b) in enumerate(items)]
        return rows, [int(sum(row["input_mask"])) for row in rows]

    def _decode(self, items, state, outputs):
        return [np.argmax(output["logits"][:length], axis=-1).tolist() for length, output in zip(state, outputs)]
'''

# Run in a fresh process that imports the copy of the package (argv: spm model, config, work directory).
TOY_RUN = '''
import json, os, sys

import albert_tf
from albert_tf import keras_names, registry

assert albert_tf.__file__.startswith(sys.argv[3]), albert_tf.__file__
found = {"keras_name": "AlbertToyTagger" in keras_names.names()}
import keras
import numpy as np
import tensorflow as tf
from albert_tf import commands, options, reproduce
from albert_tf.checkpoints.convert import models
from albert_tf.export import metadata, saved_model
from albert_tf.tasks.toytag.model import AlbertToyTagger, ToyTagOptions

kind = registry.get("toy_tagger")
found["registry"] = kind.model_class is AlbertToyTagger and "toy_tagger" in [head.name for head in registry.heads()]
found["package_name"] = albert_tf.AlbertToyTagger is AlbertToyTagger
found["keras_table"] = keras.saving.get_custom_objects().get("albert_tf>AlbertToyTagger") is AlbertToyTagger
found["convert_models"] = "toy_tagger" in models()
found["export_models"] = "toy_tagger" in saved_model.model_kinds()
found["command"] = commands.find("run_toytag").options[0] is ToyTagOptions
found["recipe"] = "toytag" in reproduce.tasks() and "toy_dir" in reproduce.data_dirs()
found["option_flag"] = "toy_window" in [field.name for field in options.flag_fields(ToyTagOptions)]
found["pipeline_task"] = "toy-tagging" in registry.pipelines()
found["serving_kinds"] = "toy_tagger" in registry.serving_kinds("toy-tagging")

model = AlbertToyTagger(sys.argv[2], num_labels=4)
ids = np.array([[2, 7, 9, 3]], np.int32)
features = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
expected = model(features)["logits"].numpy()
export = saved_model.export_saved_model(model, os.path.join(sys.argv[3], "export"), spm_model_file=sys.argv[1],
                                        max_seq_length=16, warmup=False)
found["export_kind"] = metadata.read(export)["kind"] == "toy_tagger"
served = tf.saved_model.load(export).signatures["serving_default"](
    **{name: tf.constant(value) for name, value in features.items()})["logits"].numpy()
found["export_outputs"] = bool(np.allclose(served, expected, rtol=1e-5, atol=1e-5))
tagger = albert_tf.pipeline("toy-tagging", export)
tags = tagger("the film was good .")
found["pipeline_run"] = isinstance(tags, list) and len(tags) > 2 and all(0 <= tag < 4 for tag in tags)
print(json.dumps(found))
'''


def _copy_package(target):
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _differing(left, right, skip):
    """Relative paths of files that differ between the trees `left` and `right` (or are in one only)."""
    comparison = filecmp.dircmp(left, right, ignore=["__pycache__"])
    found = [name for name in comparison.left_only + comparison.right_only if name != skip]
    found += [name for name in comparison.diff_files]
    _, mismatch, errors = filecmp.cmpfiles(left, right, comparison.common_files, shallow=False)
    found += mismatch + errors
    for name in comparison.common_dirs:
        found += [os.path.join(name, path) for path in _differing(os.path.join(left, name),
                                                                   os.path.join(right, name), skip)]
    return sorted(set(found))


@pytest.mark.e2e
def test_a_new_task_folder_is_known_everywhere(model_files, tmp_path):  # noqa: F811
    copy = tmp_path / "site" / "albert_tf"
    _copy_package(copy)
    toy = copy / "tasks" / "toytag"
    toy.mkdir()
    for name, text in (("__init__.py", TOY_INIT), ("model.py", TOY_MODEL), ("kind.py", TOY_KIND),
                       ("pipeline.py", TOY_PIPELINE),
                       ("task.py", TOY_TASK), ("recipes.py", TOY_RECIPES)):
        (toy / name).write_text(text, encoding="utf-8")
    assert _differing(PACKAGE, str(copy), skip="toytag") == []

    config = str(tmp_path / "albert_config.json")
    model_files["config"].to_json_file(config)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"), TF_CPP_MIN_LOG_LEVEL="2", **same_cpu_backend())
    proc = subprocess.run([sys.executable, "-c", TOY_RUN, model_files["spm"], config,
                           str(tmp_path)], capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found == dict.fromkeys(found, True) and len(found) == 14, found


def _task_words():
    """The task packages and the registered model kinds but the shared `encoder`, as they appear in code."""
    from albert_tf import registry, tasks

    words = set(tasks.names()) | {name for name in registry.names() if name != "encoder"}
    return words, {f"albert_tf.tasks.{name}" for name in tasks.names()}


def _docstring_lines(tree):
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def task_mentions(path, words, packages):
    """`(line, token)` of the code tokens of `path` that name a task: an import of a task package, a name, or
    a string (outside docstrings) that is a task word or holds a task package's dotted name."""
    source = open(path, encoding="utf-8").read()
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        modules = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found += [(node.lineno, module) for module in modules
                  if any(module == package or module.startswith(package + ".") for package in packages)]
    docs = _docstring_lines(tree)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.start[0] in docs:
            continue
        if token.type == tokenize.NAME and token.string in words:
            found.append((token.start[0], token.string))
        elif token.type == tokenize.STRING:
            value = ast.literal_eval(token.string) if not token.string.lstrip("rbuRBU").startswith(("f", "F")) \
                else token.string
            value = value if isinstance(value, str) else str(value)
            if value in words or any(package in value for package in packages):
                found.append((token.start[0], token.string))
    return sorted(set(found))


def test_no_module_outside_the_tasks_names_a_task():
    words, packages = _task_words()
    assert {"glue", "squad", "race", "ner", "pretraining", "classifier", "squad_v1", "pretrainer"} <= words
    found = {}
    for root, _, files in os.walk(PACKAGE):
        relative = os.path.relpath(root, PACKAGE)
        if relative.split(os.sep)[0] in ("tasks", "__pycache__") + CONSUMERS:
            continue
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(".py") and os.path.relpath(path, PACKAGE) not in CONSUMERS:
                mentions = task_mentions(path, words, packages)
                if mentions:
                    found[os.path.relpath(path, REPO)] = mentions
    assert found == {}, found


def test_the_check_finds_an_import_a_kind_name_and_a_dotted_path(tmp_path):
    path = tmp_path / "shared.py"
    path.write_text('"""Prose may say glue and squad_v1."""\n'
                    "from albert_tf.tasks.glue import data\n"
                    "import albert_tf.tasks.race.model\n"
                    "KIND = 'squad_v1'  # a comment may say ner\n"
                    "MODULE = 'albert_tf.tasks.ner.pipeline'\n"
                    "def f():\n    return pretrainer\n", encoding="utf-8")
    words = {"glue", "squad_v1", "ner", "race", "pretrainer"}
    packages = {"albert_tf.tasks.glue", "albert_tf.tasks.race", "albert_tf.tasks.ner"}
    assert sorted({line for line, _ in task_mentions(str(path), words, packages)}) == [2, 3, 4, 5, 7]
