"""Typed options: every runner flag sets one option field and every field has a flag (the original scripts' flags,
written here from their sources, plus the TF2 additions); a broken flag table stops a runner at start-up."""

import json
import os
import re
import subprocess
import sys

import pytest
from absl import flags

from albert_tf import config as config_lib
from albert_tf.errors import InputError
from albert_tf.training import options

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", PYTHONPATH=REPO)

_TPU = ["use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master", "num_tpu_cores"]
_TF2 = ["strategy", "mixed_precision", "jit_compile", "random_seed", "recompute"]
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
RUNNER_ONLY = {"run_classifier": ["hparams_preset"]}

# In a fresh process (each runner defines its flags on the global FLAGS): the runner's flags, and for each
# flag a value other than its default, parsed, then the option field it sets.
_PROBE = r"""
import json, sys
sys.argv = ["{runner}.py"]
import {runner} as runner
from absl import flags
from albert_tf.training import options
FLAGS = flags.FLAGS
names = sorted(options.runner_flag_names(FLAGS, "{runner}"))
argv = ["{runner}.py"]
given = {{}}
for name in names:
    flag = FLAGS[name]
    if flag.flag_type() == "bool":
        value = not flag.default
        argv.append(("--" if value else "--no") + name)
    elif hasattr(flag.parser, "enum_values"):
        value = [v for v in flag.parser.enum_values if v != flag.default][0]
        argv.append(f"--{{name}}={{value}}")
    elif flag.flag_type() == "int":
        value = (flag.default or 0) + 7
        argv.append(f"--{{name}}={{value}}")
    elif flag.flag_type() == "float":
        value = 0.375
        argv.append(f"--{{name}}={{value}}")
    else:
        value = "value_of_" + name
        argv.append(f"--{{name}}={{value}}")
    given[name] = value
FLAGS(argv)
task, runtime = options.from_flags(FLAGS, runner.FLAG_TABLE, "{runner}")
fields = {{}}
for name in names:
    field = runner.FLAG_TABLE.fields.get(name)
    if field is not None:
        fields[name] = [field, getattr(runtime if hasattr(runtime, field) else task, field)]
print(json.dumps({{"names": names, "given": given, "fields": fields, "task": type(task).__name__,
                  "no_flag": list(runner.FLAG_TABLE.no_flag), "runner_only": list(runner.FLAG_TABLE.runner_only)}}))
"""

_OPTIONS = {"run_classifier": options.ClassifierOptions, "run_squad": options.SquadOptions,
            "run_race": options.RaceOptions, "run_pretraining": options.PretrainingOptions}


@pytest.mark.e2e
@pytest.mark.parametrize("runner", sorted(ORIGINAL_FLAGS))
def test_every_runner_flag_sets_one_field_and_every_field_has_a_flag(runner):
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(runner=runner)], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    assert probe["task"] == _OPTIONS[runner].__name__
    assert sorted(probe["names"]) == sorted(ORIGINAL_FLAGS[runner] + RUNNER_ONLY.get(runner, []))
    assert sorted(probe["runner_only"]) == sorted(RUNNER_ONLY.get(runner, []))
    # Flag -> field: the value given on the command line arrives in the field.
    for name in ORIGINAL_FLAGS[runner]:
        field, value = probe["fields"][name]
        assert value == probe["given"][name], (name, field, value)
    # Field -> flag: every field of the task's options and of RuntimeOptions is set by exactly one flag, except
    # those the runner says have no flag (they keep their defaults).
    all_fields = options.field_names(_OPTIONS[runner]) + options.field_names(options.RuntimeOptions)
    set_by = [field for field, _ in probe["fields"].values()]
    assert sorted(set_by) == sorted(set(set_by)), "a field set by two flags"
    assert sorted(set(all_fields) - set(set_by)) == sorted(probe["no_flag"])


def _copy_runner(tmp_path, runner, old, new):
    text = open(os.path.join(REPO, f"{runner}.py"), encoding="utf-8").read()
    assert old in text
    path = tmp_path / f"{runner}.py"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.e2e
@pytest.mark.parametrize("old,new,message", [
    # A field renamed in the table (e.g. after a parameter rename): its flag and the real field are reported.
    ('max_qa_length="max_qa_length"', 'max_qa_length="max_qa_len"',
     r"fields that RaceOptions and RuntimeOptions do not have: max_qa_len; fields that no flag sets: "
     r"max_qa_length"),
    # A flag dropped from the table.
    ('max_qa_length="max_qa_length",', "",
     r"flags that map to no option field: max_qa_length; fields that no flag sets: max_qa_length"),
    # A new flag that the table does not map.
    ("FLAGS = flags.FLAGS\n", 'FLAGS = flags.FLAGS\nflags.DEFINE_integer("max_answer_tokens", 3, "unmapped")\n',
     r"flags that map to no option field: max_answer_tokens"),
])
def test_a_broken_flag_table_stops_the_runner_at_start_up(tmp_path, old, new, message):
    script = _copy_runner(tmp_path, "run_race", old, new)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(script), f"--data_dir={tmp_path}", f"--output_dir={out}",
                           f"--spm_model_file={tmp_path}/none.model", f"--albert_config_file={tmp_path}/none.json"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("run_race.py: error: The flag table of RaceOptions does not match"), line
    assert re.search(message, line), line
    assert not out.exists()


def test_flag_table_check_in_process():
    values = flags.FlagValues()
    flags.DEFINE_integer("max_seq_length", 128, "", flag_values=values)
    flags.DEFINE_integer("other", 1, "", flag_values=values)
    table = options.FlagTable(options.PretrainingOptions,
                              {"max_seq_length": "max_seq_length", "other": "max_seq_length"})
    with pytest.raises(InputError, match="fields set by two flags: max_seq_length") as error:
        table.check(["max_seq_length", "other"])
    assert "fields that no flag sets: albert_config_file, input_file, output_dir" in str(error.value)
    with pytest.raises(InputError, match="table entries for flags the runner does not define: other"):
        table.check(["max_seq_length"])


def test_split_takes_the_run_functions_keywords():
    task, runtime = options.split(options.RaceOptions, {"data_dir": "d", "output_dir": "o", "tpu_zone": "z",
                                                        "max_qa_length": 64})
    assert (task.data_dir, task.output_dir, task.max_qa_length, task.max_seq_length) == ("d", "o", 64, 512)
    assert runtime == options.RuntimeOptions(tpu_zone="z")
    with pytest.raises(TypeError, match="max_qa_len"):
        options.split(options.RaceOptions, {"data_dir": "d", "output_dir": "o", "max_qa_len": 64})
    with pytest.raises(Exception):
        runtime.tpu_zone = "other"     # frozen


@pytest.mark.parametrize("max_seq_length,ok", [(64, True), (65, False)])
def test_the_sequence_length_check(max_seq_length, ok):
    if ok:
        config_lib.check_max_seq_length(max_seq_length, 64)
    else:
        with pytest.raises(InputError, match="sequence length 65 .* up to sequence length 64"):
            config_lib.check_max_seq_length(max_seq_length, 64, "albert_config.json")
