"""The commands pick TensorFlow's CPU backend (`albert_tf.commands.app.pick_cpu_backend`) only when the user has not.

The decision rule on CPU descriptions written here (AMD and Intel x86-64 with AVX2, x86-64 without it, ARM);
then fresh processes, started without `TF_ENABLE_ONEDNN_OPTS`: the commands' start-up sets it to what the rule
says for this machine and TensorFlow then runs with it (its own start-up banner and its runtime flag say so), a
value the user set is kept, nothing changes once TensorFlow is loaded, and `import albert_tf` changes nothing.
"""

import os
import pathlib
import platform
import subprocess
import sys

import pytest

from albert_tf.commands import app as cli
import repo_paths

REPO = pathlib.Path(repo_paths.REPO)
BIN = pathlib.Path(sys.executable).parent
BANNER = "oneDNN custom operations are on"

AMD_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu vme de pse tsc msr sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi1 bmi2 sha_ni

processor\t: 1
vendor_id\t: AuthenticAMD
flags\t\t: fpu vme de pse tsc msr sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi1 bmi2 sha_ni
"""
INTEL_AVX512 = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 amx_bf16
"""
OLD_X86 = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx aes
"""
AARCH64 = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
"""

# What the rule says for this machine: the value the commands' start-up is expected to set (None: unset).
EXPECTED = cli.cpu_backend_rule(cli._read_cpuinfo(), platform.machine()).setting


@pytest.mark.parametrize("text,machine,setting,words", [
    (AMD_AVX2, "x86_64", "1", "AMD x86-64 CPU with AVX2"),
    (INTEL_AVX512, "x86_64", "1", "Intel x86-64 CPU with AVX2"),
    (OLD_X86, "x86_64", None, "without AVX2"),
    ("", "x86_64", None, "flags are unknown"),          # no /proc/cpuinfo (not Linux)
    (AARCH64, "aarch64", None, "aarch64 CPU"),
    (AMD_AVX2, "aarch64", None, "aarch64 CPU"),           # the machine decides before the flags
], ids=["amd-avx2", "intel-avx512", "old-x86", "x86-no-cpuinfo", "aarch64", "arm-machine-wins"])
def test_the_rule_on_cpu_descriptions(text, machine, setting, words):
    choice = cli.cpu_backend_rule(text, machine)
    assert choice.setting == setting and words in choice.reason, choice


def test_pick_sets_the_variable_only_when_the_user_has_not(monkeypatch):
    # As in a command before TensorFlow loads, whether or not an earlier test of this process loaded it.
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    environ = {}
    assert cli.pick_cpu_backend(environ, AMD_AVX2, "x86_64").setting == "1"
    assert environ == {"TF_ENABLE_ONEDNN_OPTS": "1"}
    for users in ("0", "1", ""):     # any value the user set, an empty one too, is theirs
        environ = {"TF_ENABLE_ONEDNN_OPTS": users}
        choice = cli.pick_cpu_backend(environ, AMD_AVX2, "x86_64")
        assert environ == {"TF_ENABLE_ONEDNN_OPTS": users} and choice.setting == users
        assert "set by the user" in choice.reason
    environ = {}
    assert cli.pick_cpu_backend(environ, AARCH64, "aarch64").setting is None and environ == {}


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _python(code, **env):
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(**env), cwd=REPO,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


# Start-up as the commands do it, then what TensorFlow runs with: the variable and TensorFlow's own flag.
_START = ("import os; from albert_tf.commands import app as cli; cli.quiet_tensorflow_start(); import tensorflow; "
          "from tensorflow.python.util import _pywrap_util_port as port; "
          "print(repr(os.environ.get('TF_ENABLE_ONEDNN_OPTS')), port.IsMklEnabled())")


def test_start_up_sets_the_backend_and_tensorflow_runs_it():
    # The user's TF_CPP_MIN_LOG_LEVEL=0 skips the quiet start, not the choice, and shows TensorFlow's banner.
    proc = _python(_START, TF_CPP_MIN_LOG_LEVEL="0")
    assert proc.stdout.split() == [repr(EXPECTED), str(EXPECTED == "1")], proc.stdout
    if EXPECTED == "1":
        assert BANNER in proc.stderr, proc.stderr[-3000:]


def test_start_up_keeps_the_users_value():
    proc = _python(_START, TF_CPP_MIN_LOG_LEVEL="0", TF_ENABLE_ONEDNN_OPTS="0")
    assert proc.stdout.split() == ["'0'", "False"], proc.stdout
    assert BANNER not in proc.stderr


def test_nothing_changes_once_tensorflow_is_loaded():
    code = ("import os, tensorflow; from albert_tf.commands import app as cli; choice = cli.pick_cpu_backend(); "
            "cli.quiet_tensorflow_start(); print(repr(os.environ.get('TF_ENABLE_ONEDNN_OPTS')), choice.setting); "
            "print(cli.cpu_backend_line())")
    proc = _python(code, TF_CPP_MIN_LOG_LEVEL="2")
    first, line = proc.stdout.strip().splitlines()
    assert first == "None None", proc.stdout
    assert "TensorFlow was loaded before the choice" in line


def test_the_library_leaves_the_environment_alone():
    code = ("import os, albert_tf, albert_tf.commands.app; albert_tf.AlbertConfig; import albert_tf.models; "
            "print(repr(os.environ.get('TF_ENABLE_ONEDNN_OPTS')))")
    assert _python(code, TF_CPP_MIN_LOG_LEVEL="2").stdout.strip() == "None"


def test_the_pipeline_picks_as_the_commands_do():
    # `albert_tf.pipeline`, looked up before TensorFlow loads, runs on the commands' choice; a user's value is kept.
    code = ("import os, albert_tf; albert_tf.pipeline; from tensorflow.python.util import _pywrap_util_port as port; "
            "print(repr(os.environ.get('TF_ENABLE_ONEDNN_OPTS')), port.IsMklEnabled())")
    assert _python(code, TF_CPP_MIN_LOG_LEVEL="2").stdout.split() == [repr(EXPECTED), str(EXPECTED == "1")]
    assert _python(code, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0").stdout.split() == ["'0'", "False"]


@pytest.mark.e2e
def test_a_runner_script_picks_before_its_imports():
    # The checkout's `run_race.py` run as a script (its door runs nothing on import), as far as `--helpfull`.
    code = ("import contextlib, io, os, runpy, sys\n"
            "sys.argv = ['run_race.py', '--helpfull']\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    runpy.run_path('run_race.py', run_name='__main__')\n"
            "print(repr(os.environ.get('TF_ENABLE_ONEDNN_OPTS')))")
    assert _python(code, TF_CPP_MIN_LOG_LEVEL="2").stdout.strip() == repr(EXPECTED)


def _console_script(name, *args, **env):
    script = BIN / name
    if not script.exists():
        pytest.skip(f"console script {script} is not installed (run `pip install -e .`)")
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=_env(**env), cwd=REPO,
                          timeout=300)


@pytest.mark.e2e
@pytest.mark.parametrize("users,expected_line", [
    (None, None),
    ("0", "TensorFlow CPU backend: Eigen (TF_ENABLE_ONEDNN_OPTS='0'; TF_ENABLE_ONEDNN_OPTS set by the user)"),
], ids=["unset", "user-0"])
def test_a_console_script_says_what_it_chose_at_verbosity_1(tmp_path, users, expected_line):
    # `albert-convert` on a source that does not exist: start-up, flags, the debug line, then a one-line error.
    args = ["--verbosity=1", f"--input={tmp_path / 'missing'}", f"--output_dir={tmp_path / 'out'}"]
    proc = _console_script("albert-convert", *args, **({} if users is None else {"TF_ENABLE_ONEDNN_OPTS": users}))
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = [line.split("] ", 1)[1] for line in proc.stderr.splitlines() if "TensorFlow CPU backend" in line]
    if expected_line is None:
        name = {"1": "oneDNN", None: "TensorFlow's default"}[EXPECTED]
        setting = "unset" if EXPECTED is None else repr(EXPECTED)
        expected_line = f"TensorFlow CPU backend: {name} (TF_ENABLE_ONEDNN_OPTS={setting}; "
        assert len(lines) == 1 and lines[0].startswith(expected_line), proc.stderr[-3000:]
    else:
        assert lines == [expected_line], proc.stderr[-3000:]
    # At the default verbosity the terminal stays quiet about it.
    quiet = _console_script("albert-convert", *args[1:])
    assert quiet.returncode == 2 and "CPU backend" not in quiet.stderr, quiet.stderr[-3000:]


def test_a_program_picks_through_the_package_before_tensorflow_loads():
    # `albert_tf.pick_cpu_backend()` loads no TensorFlow; TensorFlow imported afterwards runs the choice.
    code = ("import os, sys, albert_tf; choice = albert_tf.pick_cpu_backend(); loaded = 'tensorflow' in sys.modules; "
            "import tensorflow; from tensorflow.python.util import _pywrap_util_port as port; "
            "print(repr(os.environ.get('TF_ENABLE_ONEDNN_OPTS')), repr(choice.setting), loaded, port.IsMklEnabled())")
    proc = _python(code, TF_CPP_MIN_LOG_LEVEL="2")
    expected = [repr(EXPECTED), repr(EXPECTED), "False"] + ([str(True)] if EXPECTED == "1" else [])
    assert proc.stdout.split()[:len(expected)] == expected, proc.stdout
