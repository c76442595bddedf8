"""Typed options, each declared once: every runner flag is one option field and every field has a flag (the original
scripts' flags, written here from their sources, plus the TF2 additions); no option name is declared twice; a
Python call with an unknown keyword names it."""

import ast
import dataclasses
import glob
import math
import os
import subprocess
import sys

import pytest
from absl import flags

from albert_tf import commands
from albert_tf import config as config_lib
from albert_tf import options
from albert_tf.commands import convert as convert_cli
from albert_tf.commands import download
from albert_tf.commands import export as export_cli
from albert_tf.commands import flags as flag_lib
from albert_tf.commands import reproduce
from albert_tf.errors import InputError
from albert_tf.quickstart import run as quickstart
from albert_tf.tasks.pretraining.writer import create_data
from albert_tf.tasks.pretraining.writer import instances
from albert_tf.tasks.glue import task as glue_task
from albert_tf.tasks.ner import task as ner_task
from albert_tf.tasks.pretraining import task as pretraining_task
from albert_tf.tasks.race import task as race_task
from albert_tf.tasks.squad import task as squad_task
from albert_tf.text import vocab as vocab_lib
from albert_tf.text import normalization

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", PYTHONPATH=REPO)

_TPU = ["use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master", "num_tpu_cores"]
_TF2 = ["strategy", "mixed_precision", "jit_compile", "random_seed", "recompute", "model_parallel_devices"]
# The flags of the original scripts (google-research/albert), and the TF2 additions of each runner.
ORIGINAL_FLAGS = {
    "run_classifier": ["data_dir", "albert_config_file", "task_name", "vocab_file", "spm_model_file", "output_dir",
                       "cached_dir", "init_checkpoint", "albert_hub_module_handle", "do_lower_case",
                       "max_seq_length", "do_train", "do_eval", "do_predict", "train_batch_size", "eval_batch_size",
                       "predict_batch_size", "learning_rate", "train_step", "warmup_step",
                       "save_checkpoints_steps", "keep_checkpoint_max", "iterations_per_loop", "optimizer",
                       "export_dir", "threshold_to_export"] + _TPU + _TF2,
    "run_squad": ["albert_config_file", "vocab_file", "spm_model_file", "output_dir", "train_file", "predict_file",
                  "train_feature_file", "predict_feature_file", "predict_feature_left_file", "init_checkpoint",
                  "albert_hub_module_handle", "do_lower_case", "max_seq_length", "doc_stride", "max_query_length",
                  "do_train", "do_predict", "train_batch_size", "predict_batch_size", "learning_rate",
                  "num_train_epochs", "warmup_proportion", "save_checkpoints_steps", "iterations_per_loop",
                  "n_best_size", "max_answer_length", "use_einsum", "export_dir", "start_n_top", "end_n_top",
                  "dropout_prob", "version_2_with_negative", "null_score_diff_threshold"] + _TPU + _TF2,
    "run_race": ["data_dir", "albert_config_file", "spm_model_file", "output_dir", "task_name", "vocab_file",
                 "train_file", "eval_file", "predict_file", "init_checkpoint", "albert_hub_module_handle",
                 "do_lower_case", "dropout_prob", "max_seq_length", "max_qa_length", "num_keep_checkpoint",
                 "high_only", "middle_only", "do_train", "do_eval", "do_predict", "train_batch_size",
                 "eval_batch_size", "predict_batch_size", "learning_rate", "train_step", "warmup_step",
                 "save_checkpoints_steps", "iterations_per_loop", "export_dir"]
                + _TPU + _TF2 + ["gradient_accumulation_steps"],
    "run_pretraining": ["albert_config_file", "input_file", "output_dir", "init_checkpoint", "max_seq_length",
                        "max_predictions_per_seq", "do_train", "do_eval", "train_batch_size", "eval_batch_size",
                        "optimizer", "learning_rate", "poly_power", "num_train_steps", "num_warmup_steps",
                        "start_warmup_step", "save_checkpoints_steps", "keep_checkpoint_max",
                        "iterations_per_loop", "max_eval_steps", "init_from_group0", "masked_lm_budget"]
                       + _TPU + _TF2 + ["gradient_accumulation_steps"],
}
ORIGINAL_FLAGS["run_ner"] = (["data_dir", "albert_config_file", "spm_model_file", "vocab_file", "output_dir",
                              "init_checkpoint", "albert_hub_module_handle", "do_lower_case", "max_seq_length",
                              "do_train", "do_eval", "do_predict", "train_batch_size", "eval_batch_size",
                              "predict_batch_size", "learning_rate", "save_checkpoints_steps", "iterations_per_loop",
                              "export_dir", "labels", "dropout_prob", "train_step", "warmup_step", "optimizer"]
                             + _TPU + _TF2 + ["gradient_accumulation_steps"])
ORIGINAL_FLAGS["run_squad_v1"] = ORIGINAL_FLAGS["run_squad_v2"] = ORIGINAL_FLAGS["run_squad"]
# The fine-tuning runners' Keras LoRA (docs/lora.md) and the frozen encoder (docs/serving.md, multi-task export).
_LORA = ["lora_rank", "lora_targets", "freeze_encoder"]
# `gradient_accumulation_steps`: on every runner whose Python call takes it (the original trains on TPUs, where the
# batch fits; run_pretraining.py, run_race.py and run_ner's lists above have it already).
_ACCUMULATION = ["gradient_accumulation_steps"]
RUNNER_ONLY = {"run_classifier": ["hparams_preset"] + _LORA + _ACCUMULATION, "run_squad": _LORA + _ACCUMULATION,
               "run_squad_v1": _LORA + _ACCUMULATION, "run_squad_v2": _LORA + _ACCUMULATION, "run_race": _LORA,
               "run_ner": _LORA}
# The option fields that a runner gives no flag (they keep their defaults).
NO_FLAG = {"run_classifier": [], "run_squad": [], "run_squad_v1": [], "run_squad_v2": [],
           "run_race": ["optimizer", "delete_non_best"], "run_ner": [], "run_pretraining": ["sentence_loss_weight"]}
_OPTIONS = {"run_classifier": glue_task.ClassifierOptions, "run_squad": squad_task.SquadOptions,
            "run_squad_v1": squad_task.SquadOptions, "run_squad_v2": squad_task.SquadV2Options,
            "run_race": race_task.RaceOptions, "run_ner": ner_task.NerOptions,
            "run_pretraining": pretraining_task.PretrainingOptions}
_RUN = {"run_classifier": glue_task.run_classifier, "run_squad": squad_task.run_squad, "run_race": race_task.run_race,
        "run_ner": ner_task.run_ner, "run_pretraining": pretraining_task.run_pretraining}

def _declare(command):
    """The flags of `command` (an `albert_tf.options.Command`) declared on fresh `FlagValues`, as the command
    declares them."""
    values = flags.FlagValues()
    flag_lib.define_flags(command.options, flag_values=values, no_flag=command.no_flag, only=command.only,
                          module_name=command.name)
    return values


def _probe(runner):
    """The runner's flags, and for each flag a value other than its default, parsed, then the option field it
    sets."""
    command = commands.find(runner)
    values = _declare(command)
    names = sorted(flag.name for flag in values.flags_by_module_dict()[runner])
    argv, given = [runner], {}
    for name in names:
        flag = values[name]
        if flag.flag_type() == "bool":
            value = not flag.default
            argv.append(("--" if value else "--no") + name)
        elif hasattr(flag.parser, "enum_values"):
            value = [v for v in flag.parser.enum_values if v != flag.default][0]
            argv.append(f"--{name}={value}")
        elif flag.flag_type() == "int":
            value = (flag.default or 0) + 7
            argv.append(f"--{name}={value}")
        elif flag.flag_type() == "float":
            value = 0.375
            argv.append(f"--{name}={value}")
        elif isinstance(flag.parser, flags.ListParser):
            value = ["value_of_" + name, "and_more"]
            argv.append(f"--{name}={','.join(value)}")
        else:
            value = "value_of_" + name
            argv.append(f"--{name}={value}")
        given[name] = value
    values(argv)
    built = dict(zip(command.options, flag_lib.from_flags(values, *command.options)))
    fields = {name: [values[name].option_class.__name__, getattr(built[values[name].option_class], name)]
              for name in names}
    all_fields = {cls.__name__: [f.name for f in options.option_fields(cls)] for cls in command.options
                  if cls is not glue_task.PresetOptions}
    return {"names": names, "given": given, "fields": fields, "all_fields": all_fields,
            "runner_options": [cls.__name__ for cls in command.options]}


@pytest.mark.parametrize("runner", sorted(ORIGINAL_FLAGS))
def test_every_runner_flag_is_one_field_and_every_field_has_a_flag(runner):
    probe = _probe(runner)
    assert probe["runner_options"][:2] == [_OPTIONS[runner].__name__, "RuntimeOptions"]
    assert sorted(probe["names"]) == sorted(ORIGINAL_FLAGS[runner] + RUNNER_ONLY.get(runner, []))
    # Flag -> field: every flag of the runner is the field of its name, and the value given arrives there.
    assert sorted(probe["fields"]) == sorted(probe["names"])
    for name in probe["names"]:
        _, value = probe["fields"][name]
        assert value == probe["given"][name], (name, value)
    # Field -> flag: every field of the runner's options classes has its flag, except those it gives none.
    all_fields = [(cls, name) for cls, names in probe["all_fields"].items() for name in names]
    set_by = [(cls, name) for name, (cls, _) in probe["fields"].items()]
    assert sorted(set(all_fields) - set(set_by)) == sorted(
        (cls, name) for cls, name in all_fields if name in NO_FLAG[runner])
    assert sorted(name for _, name in set(all_fields) - set(set_by)) == sorted(NO_FLAG[runner])


def test_every_runner_is_a_python_module_of_the_package():
    # `python -m albert_tf.<runner>` runs the command of that name, as the checkout's `run_*.py` do.
    for runner in ORIGINAL_FLAGS:
        path = os.path.join(REPO, "albert_tf", f"{runner}.py")
        assert f'commands.run("{runner}")' in open(path, encoding="utf-8").read(), path
    for path in glob.glob(os.path.join(REPO, "run_*.py")):
        runner = os.path.basename(path)[:-3]
        assert runner in ORIGINAL_FLAGS and f'commands.run("{runner}")' in open(path, encoding="utf-8").read()


# Option names that mean a different option in each task or command that has them (the original flags of the
# same name): SQuAD's `train_file` / `predict_file` are its JSON inputs, RACE's its TFRecord caches; GLUE's
# `task_name` picks a GLUE task, RACE's is `race`; `dropout_prob` is the dropout of SQuAD v2's answer-class head,
# RACE's pooled output and NER's sequence output; GLUE's `keep_checkpoint_max` is accepted and unused,
# pretraining's keeps that many checkpoints; `input_file` is the raw text of albert-create-pretraining-data and the
# TFRecords of run_pretraining; `random_seed` seeds the data writer (12345, every random choice of the data) or a
# training run (unset: unseeded); `output_dir` holds a runner's checkpoints, albert-reproduce's task runs or
# albert-convert's weights; `input` is albert-convert's or albert-export's weights source (convert reads more
# forms) or albert-train-vocab's text files; `model` and `format` are albert-convert's (with `auto`; weights
# formats) and albert-export's (a model kind; saved_model, tflite or mediapipe); `labels` are NER's tag set or
# the names of a tflite classifier's outputs; `export_dir` is a runner's export of its best model or albert-export's base
# directory; `overwrite` is albert-quickstart's start over (its finished steps done again) or albert-export's
# replacement of the LiteRT export in --export_dir.
HOMONYMS = {"train_file", "predict_file", "task_name", "dropout_prob", "keep_checkpoint_max", "input_file",
            "random_seed", "output_dir", "input", "model", "format", "labels", "export_dir", "overwrite",
            "tasks"}
_OPTION_MODULES = [options, glue_task, squad_task, race_task, ner_task, pretraining_task, reproduce, create_data,
                   instances, convert_cli, vocab_lib, download, quickstart, export_cli, normalization]
# albert-export's text-mode lengths: a dataclass made from the registered text modes' `Length`s.
EXPORT_LENGTHS = export_cli._lengths_options()  # pylint: disable=protected-access
# Every command's options classes: the runners', and those of the other command lines.
_COMMAND_OPTIONS = {
    "albert-reproduce": (reproduce.ReproduceOptions, reproduce.DataDirOptions, reproduce.ReproduceRuntime),
    "create_pretraining_data": (create_data.CreateDataOptions, create_data.PretrainingDataOptions),
    "albert-convert": (convert_cli.ConvertOptions,),
    "albert-train-vocab": (vocab_lib.TrainVocabOptions,),
    "albert-download": (download.DownloadOptions,),
    "albert-quickstart": (quickstart.QuickstartOptions,),
    "albert-export": (export_cli.ExportOptions, EXPORT_LENGTHS),
    "albert-normalize-spm": (normalization.NormalizeOptions,),
}


def _options_classes():
    """The options dataclasses of the runners' modules, each with the names its own body declares."""
    classes = {}
    for module in _OPTION_MODULES:
        for value in vars(module).values():
            if (isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__
                    and any(field.metadata for field in dataclasses.fields(value))):
                fields = {field.name for field in dataclasses.fields(value)}
                classes[value] = set(value.__dict__.get("__annotations__", {})) & fields
    for generated in (EXPORT_LENGTHS, reproduce.DataDirOptions):
        classes[generated] = {field.name for field in dataclasses.fields(generated)}
    return classes


def _root(cls, name):
    """The first declaration of field `name` of `cls`: the most basic class of its MRO that has the field, the
    text mode's `Length` that the field is made from (`options.length_option`: every such field is that one
    declaration), or the declaration of the option that a `shared_option` field is."""
    root = [klass for klass in cls.__mro__ if name in getattr(klass, "__dataclass_fields__", {})][-1]
    metadata = root.__dataclass_fields__[name].metadata
    if "shared" in metadata:
        return _root(*metadata["shared"])
    return metadata.get("length", root)


def test_no_option_name_is_declared_in_two_unrelated_classes():
    classes = _options_classes()
    commands = {cls for group in _COMMAND_OPTIONS.values() for cls in group}
    assert {glue_task.ClassifierOptions, glue_task.PresetOptions, squad_task.SquadOptions, race_task.RaceOptions,
            ner_task.NerOptions, pretraining_task.PretrainingOptions, options.RuntimeOptions, options.TaskOptions,
            options.FineTuningOptions, options.StepsOptions, options.ModelOptions, options.TokenizerOptions,
            options.SequenceOptions, options.MaskedLmOptions} | commands <= set(classes)
    # A class declares a field again only to change its default or help text (a subclass of the first).
    roots = {}
    for cls, names in classes.items():
        for name in names:
            roots.setdefault(name, set()).add(_root(cls, name))
    twice = {name: sorted(getattr(root, "__name__", repr(root)) for root in found)
             for name, found in roots.items() if len(found) > 1}
    # The text modes' lengths are declared by their modes, and the task options and albert-export take them.
    assert {name for name, found in roots.items() if any(not isinstance(root, type) for root in found)} == {
        "max_query_length", "max_qa_length"}
    assert set(twice) == HOMONYMS, twice
    # The quickstart's options shared with the commands it chains are theirs (`shared_option`), with the demo's
    # defaults: the demo declares only its own.
    shared = {field.name for field in dataclasses.fields(quickstart.QuickstartOptions) if "shared" in field.metadata}
    assert shared == {"vocab_size", "dupe_factor", "train_batch_size", "num_train_steps", "num_warmup_steps",
                      "learning_rate", "iterations_per_loop", "save_checkpoints_steps", "num_workers",
                      "random_seed", "jit_compile"}
    # Each command's field is declared with `option` / `constant`: its help text and flag kind come with it.
    for cls in list(_OPTIONS.values()) + [options.RuntimeOptions, glue_task.PresetOptions] + sorted(
            commands, key=lambda klass: klass.__name__):
        for field in options.flag_fields(cls):
            options.flag_spec(cls, field)


def _define_calls(path):
    """`(function, line)` of each `DEFINE_*` call in `path` (`function`: the enclosing function, or None)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    calls = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call):
                callee = child.func.attr if isinstance(child.func, ast.Attribute) else getattr(child.func, "id", "")
                if callee.startswith("DEFINE") or (isinstance(child.func, ast.Call) and function is None):
                    calls.append((function, child.lineno))
            visit(child, name)

    visit(tree, None)
    return calls


def test_no_flag_is_declared_outside_the_options_machinery():
    paths = (glob.glob(os.path.join(REPO, "*.py"))
             + glob.glob(os.path.join(REPO, "albert_tf", "**", "*.py"), recursive=True))
    assert len(paths) > 100
    found = {os.path.relpath(path, REPO): _define_calls(path) for path in paths}
    found = {path: calls for path, calls in found.items() if calls}
    # `define_flags` declares them all (through `getattr(flags, f"DEFINE_{kind}")` for the plain kinds).
    assert list(found) == [os.path.join("albert_tf", "commands", "flags.py")], found
    assert {function for function, _ in found[os.path.join("albert_tf", "commands", "flags.py")]} == {"define_flags"}
    for path in glob.glob(os.path.join(REPO, "run_*.py")):
        tree = ast.parse(open(path, encoding="utf-8").read())
        assert not [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)], path


def test_library_code_reads_no_flags():
    # Only the command layer parses flags; the library takes the options dataclasses.
    for path in glob.glob(os.path.join(REPO, "albert_tf", "**", "*.py"), recursive=True):
        if os.sep + "commands" + os.sep in path:
            continue
        text = open(path, encoding="utf-8").read()
        assert "flags.FLAGS" not in text and "from absl import flags" not in text, path


@pytest.mark.parametrize("command", sorted(_COMMAND_OPTIONS))
def test_every_command_declares_the_fields_of_its_options(command):
    """Each command's flags, declared on fresh `FlagValues`, are the fields of its options classes (those it
    gives a flag), with the fields' defaults."""
    declared = commands.find(command)
    assert declared.options == _COMMAND_OPTIONS[command]
    values = _declare(declared)
    fields = {field.name: (cls, field) for cls in _COMMAND_OPTIONS[command] for field in options.flag_fields(cls)}
    assert set(values) <= set(fields)
    for name in values:
        cls, field = fields[name]
        assert values[name].option_class is cls
        assert values[name].default == options.flag_spec(cls, field)[1], name


def test_the_options_groups_import_no_tensorflow():
    # A command line declares its flags from the shared groups before (or without) loading TensorFlow.
    code = ("import sys; import albert_tf.options, albert_tf.commands; "
            "print(sorted({'tensorflow', 'keras'} & set(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr[-2000:]


@pytest.mark.parametrize("runner", sorted(_RUN))
def test_an_unknown_keyword_is_an_input_error_naming_it(runner, tmp_path):
    with pytest.raises(InputError, match=r"Unknown options: max_qa_len \(not options of "
                                         rf"{_OPTIONS[runner].__name__} or RuntimeOptions\)"):
        _RUN[runner](output_dir=str(tmp_path / "out"), max_qa_len=64)
    assert not (tmp_path / "out").exists()


def test_a_python_call_takes_the_dataclasses_or_their_keywords(tmp_path):
    call = options.call_options
    race = race_task.RaceOptions
    task, runtime = call(race, ("d", "o"), {"tpu_zone": "z", "max_qa_length": 64})
    assert (task.data_dir, task.output_dir, task.max_qa_length, task.max_seq_length) == ("d", "o", 64, 512)
    assert runtime == options.RuntimeOptions(tpu_zone="z")
    assert call(race, (), {"max_qa_length": 32}, task, runtime) == (dataclasses.replace(task, max_qa_length=32),
                                                                     runtime)
    with pytest.raises(InputError, match="Missing required options of RaceOptions: data_dir"):
        call(race, (), {"output_dir": "o"})
    with pytest.raises(InputError, match="both by position and by keyword: data_dir"):
        call(race, ("d", "o"), {"data_dir": "e"})
    with pytest.raises(InputError, match="Too many positional arguments: 3"):
        call(race, ("d", "o", "x"), {})
    with pytest.raises(InputError, match="Expected RaceOptions options. Received: SquadOptions"):
        call(race, (), {}, squad_task.SquadOptions(output_dir="o"))
    # A field the task fixes is not a keyword.
    with pytest.raises(InputError, match="Unknown options: do_eval"):
        call(squad_task.SquadOptions, ("o",), {"do_eval": True})
    with pytest.raises(Exception):
        runtime.tpu_zone = "other"     # frozen


def test_defaults_and_kinds_come_from_the_fields():
    # The Python default of `mixed_precision` is what the flag does: a run sets the float32 policy.
    assert options.RuntimeOptions().mixed_precision == "float32"
    assert race_task.RaceOptions(data_dir="d", output_dir="o").learning_rate == 1e-5
    assert ner_task.NerOptions(data_dir="d", output_dir="o").max_seq_length == 128
    assert math.isnan(glue_task.ClassifierOptions(task_name="rte", data_dir="d", output_dir="o").threshold_to_export)
    values = flags.FlagValues()
    flag_lib.define_flags((race_task.RaceOptions, options.RuntimeOptions), flag_values=values, no_flag=("optimizer",))
    assert "optimizer" not in values and "delete_non_best" not in values
    assert values["learning_rate"].help == "The initial learning rate for Adam."      # the group's help text
    assert (values["learning_rate"].default, values["do_train"].default) == (1e-5, True)
    assert values["mixed_precision"].parser.enum_values == ["float32", "mixed_bfloat16", "mixed_float16"]
    values(["prog", "--data_dir=d", "--output_dir=o", "--max_qa_length=64", "--strategy=mirrored"])
    task, runtime = flag_lib.from_flags(values, race_task.RaceOptions, options.RuntimeOptions)
    assert (task.data_dir, task.max_qa_length, task.optimizer, runtime.strategy) == ("d", 64, "adamw", "mirrored")
    assert flag_lib.required_flags((race_task.RaceOptions, options.RuntimeOptions)) == ["output_dir", "data_dir"]
    with pytest.raises(InputError, match="two of RaceOptions, RaceOptions: albert_config_file, .*, data_dir, "):
        flag_lib.define_flags((race_task.RaceOptions, race_task.RaceOptions), flag_values=flags.FlagValues())


@pytest.mark.parametrize("max_seq_length,ok", [(64, True), (65, False)])
def test_the_sequence_length_check(max_seq_length, ok):
    if ok:
        config_lib.check_max_seq_length(max_seq_length, 64)
    else:
        with pytest.raises(InputError, match="sequence length 65 .* up to sequence length 64"):
            config_lib.check_max_seq_length(max_seq_length, 64, "albert_config.json")
