"""How every albert_tf command starts and ends: a quiet TensorFlow start, flags from the command's options, a
`--help` that explains, one line for an error in what the user gave.

TensorFlow reads `TF_CPP_MIN_LOG_LEVEL` and `TF_ENABLE_ONEDNN_OPTS` once, when its shared library loads, so
`quiet_tensorflow_start()` runs before the command's module (which imports TensorFlow) is imported:
`albert_tf.commands.run(name)` calls it first, then finds the command's `albert_tf.options.Command` and hands it
to `run_command`. It also picks TensorFlow's CPU backend (`pick_cpu_backend()`: oneDNN or Eigen) when the user
has not. Only the commands do this; `import albert_tf` leaves the environment as it is.

`run_command(command)` declares the command's flags from its options dataclasses (`albert_tf.commands.flags`),
builds the dataclasses back from the parsed flags and makes the command's one library call. `run_app(main,
help_text)` replaces `absl.app.run(main)`: `--help` starts with the command's paragraph and lists its own flags,
and an error in what the user gave (a flag, a file, a config, a checkpoint, data: `albert_tf.errors.InputError`
and the exceptions of `user_errors()`) ends the command with one line, `<command>: error: <message>`, and exit
status 2. Any other exception is a bug and keeps its traceback. A SIGINT or SIGTERM ends it with `interrupted at
step N; the same command resumes` and exit status 130 or 143 (`albert_tf.training.interrupt`). `--verbosity=1`
(or more), or `ALBERT_TF_TRACEBACK=1` in the environment, prints the traceback of a user error too.
"""

import collections
import os
import platform
import re
import sys
import tempfile
import traceback

from absl import app
from absl import flags
from absl import logging

from albert_tf.commands import flags as flag_lib
from albert_tf.errors import InputError, MissingPackageError, tf_error_text
from albert_tf.training import interrupt

# Set to 1 to see the traceback of an error in what the user gave (as `--verbosity=1` does).
TRACEBACK_ENV = "ALBERT_TF_TRACEBACK"

# Start-up lines of TensorFlow's C++ runtime that say nothing about the user's job. They are dropped only
# while TensorFlow loads and lists its devices; every other line of that moment is passed on.
_START_UP_CHATTER = re.compile(
    r"failed call to cuInit"
    r"|Could not find cuda drivers on your machine"
    r"|oneDNN custom operations are on"
    r"|TensorFlow binary is optimized to use available CPU instructions"
    r"|To enable the following instructions: .* rebuild TensorFlow"
    r"|All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|Unable to register cu(DNN|FFT|BLAS) factory"
    r"|computation placer already registered"
)


# TensorFlow's switch between its oneDNN CPU kernels ("1") and its Eigen ones ("0"), read when it loads.
ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"

CpuBackend = collections.namedtuple("CpuBackend", ["setting", "reason"])
CpuBackend.__doc__ = """What `pick_cpu_backend` decided: `setting` is the value of `TF_ENABLE_ONEDNN_OPTS` in
force (`None`: unset, TensorFlow's own default) and `reason` says why, in words."""

# The decision of this process's `pick_cpu_backend()` (None before it runs); the commands log it at
# `--verbosity=1`.
_cpu_backend = None


def cpu_backend_rule(cpuinfo_text, machine):
    """The oneDNN setting that is faster on this CPU: `CpuBackend("1", why)` or `CpuBackend(None, why)`.

    Args:
        cpuinfo_text: str, the text of `/proc/cpuinfo` ("" where there is none: not Linux).
        machine: str, `platform.machine()`.

    x86-64 with AVX2, AMD or Intel: oneDNN on. TensorFlow 2.20 turns it on by default only on some Intel CPUs;
    on AMD it runs Eigen. Measured on a 2-core AMD EPYC (Zen 3, AVX2), albert-base: the training step (batch
    8, seq 128) is 1.20x faster with oneDNN on (keras-hub's `AlbertBackbone` 1.33x), inference is the same
    (batch 8: 7.18 seq/s on, 7.17 off; batch 1: 6.00 on, 6.17 off), and the albert-large training step at
    batch 1, seq 512 runs only with oneDNN on. On a 2-core AMD EPYC Zen 4 (AVX-512), the text-classification
    pipeline on 96 real sentences (albert-base, batch 32) ran 1.27x faster with oneDNN on (13.3 s against
    16.9 s, benchmarks/README.md), so inference (the prediction commands, `albert-export`'s warm-up, a
    pipeline in a program that calls `pick_cpu_backend` first) gets it too. Intel CPUs with AVX2 run the same oneDNN kernels, so the rule
    covers them too (not measured here; those with AVX-512 VNNI, BF16 or AMX get oneDNN by TensorFlow's own
    default already). A decision rule, not a timing: the same CPU always gets the same backend, at no start-up
    cost. Anything else (ARM, x86 without AVX2, a CPU whose flags cannot be read): TensorFlow's own default,
    which nothing here has measured against.
    """
    arch = machine.lower()
    if arch not in ("x86_64", "amd64", "x64"):
        return CpuBackend(None, f"{machine or 'unknown'} CPU")
    cpu_flags, vendor = set(), "x86-64"
    for line in cpuinfo_text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags" and not cpu_flags:
            cpu_flags = set(value.split())
        elif key.strip() == "vendor_id":
            vendor = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}.get(value.strip(), value.strip())
    if not cpu_flags:
        return CpuBackend(None, "x86-64 CPU whose flags are unknown")
    if "avx2" not in cpu_flags:
        return CpuBackend(None, f"{vendor} x86-64 CPU without AVX2")
    return CpuBackend("1", f"{vendor} x86-64 CPU with AVX2, where oneDNN trains and infers faster")


def _read_cpuinfo(path="/proc/cpuinfo"):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def pick_cpu_backend(environ=None, cpuinfo_text=None, machine=None):
    """Sets `TF_ENABLE_ONEDNN_OPTS` to the faster CPU backend (`cpu_backend_rule`) unless the user set it.

    A value the user set, any value (an empty one too), is kept. Once TensorFlow is loaded it has read the
    variable, so nothing is changed then. The commands call this (through `quiet_tensorflow_start`); a Python
    program that wants the same kernels for its pipelines, `Model.predict` or training calls it as
    `albert_tf.pick_cpu_backend()` before anything imports TensorFlow (this module loads none, and neither does
    `import albert_tf`). The library calls it on its own in one place: `albert_tf.pipeline`, the first time it is
    looked up (inference on raw text, as the commands' `--do_predict`); its other calls leave the environment
    alone.

    Args:
        environ: the environment to read and set (default `os.environ`).
        cpuinfo_text, machine: the CPU's description (default: `/proc/cpuinfo`, `platform.machine()`).

    Returns:
        `CpuBackend(setting, reason)`: the value in force (None: unset) and why.
    """
    global _cpu_backend
    environ = os.environ if environ is None else environ
    if ONEDNN_ENV in environ:
        choice = CpuBackend(environ[ONEDNN_ENV], f"{ONEDNN_ENV} set by the user")
    elif "tensorflow" in sys.modules:
        # TensorFlow read the variable when it loaded: setting it now would change nothing.
        choice = CpuBackend(environ.get(ONEDNN_ENV), "TensorFlow was loaded before the choice")
    else:
        choice = cpu_backend_rule(_read_cpuinfo() if cpuinfo_text is None else cpuinfo_text,
                                  platform.machine() if machine is None else machine)
        if choice.setting is not None:
            environ[ONEDNN_ENV] = choice.setting
    _cpu_backend = choice
    return choice


def cpu_backend_line():
    """One line on the CPU backend in force, e.g. `TensorFlow CPU backend: oneDNN (TF_ENABLE_ONEDNN_OPTS=1;
    AMD x86-64 CPU with AVX2, where oneDNN trains and infers faster)`."""
    choice = _cpu_backend or CpuBackend(os.environ.get(ONEDNN_ENV), "not chosen by albert_tf")
    name = {"1": "oneDNN", "0": "Eigen", None: "TensorFlow's default"}.get(choice.setting, "as TensorFlow reads it")
    setting = "unset" if choice.setting is None else repr(choice.setting)
    return f"TensorFlow CPU backend: {name} ({ONEDNN_ENV}={setting}; {choice.reason})"


def quiet_tensorflow_start():
    """Picks the CPU backend (`pick_cpu_backend`), then loads TensorFlow without its start-up banners, unless
    the user set `TF_CPP_MIN_LOG_LEVEL`.

    Sets `TF_CPP_MIN_LOG_LEVEL=1` (C++ INFO lines off; warnings and errors stay) and, while TensorFlow
    loads and enumerates devices, holds back standard error and passes on every line that is not
    start-up chatter (the CUDA driver probe of a machine without a GPU logs an error-level `cuInit` line;
    it is the only error-level line dropped). Does nothing when TensorFlow is already loaded.
    """
    # The backend comes first: it must be chosen whatever the log level, and before TensorFlow loads.
    pick_cpu_backend()
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ or "tensorflow" in sys.modules:
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"
    sys.stderr.flush()
    saved_fd = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            # TensorFlow is imported here, not at the top, so that the variable above is set first.
            import tensorflow as tf  # pylint: disable=import-outside-toplevel

            tf.config.list_physical_devices()
        finally:
            sys.stderr.flush()
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            held.seek(0)
            for line in held.read().decode("utf-8", "replace").splitlines(keepends=True):
                if not _START_UP_CHATTER.search(line):
                    sys.stderr.write(line)
            sys.stderr.flush()


def user_errors():
    """The exception classes that mean an error in what the user gave, not in albert_tf.

    `InputError` (raised by albert_tf's own checks), a missing optional package, the OS's and TensorFlow's
    file errors (a path that does not exist or cannot be read), and TensorFlow's `DataLossError` (a damaged
    file the user gave).
    """
    # TensorFlow loads here, not at import: commands set its log level before it loads.
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    from albert_tf.install_check import DuplicateTensorFlowError  # pylint: disable=import-outside-toplevel

    return (InputError, MissingPackageError, DuplicateTensorFlowError, app.UsageError, flags.Error,
            FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, tf.errors.NotFoundError,
            tf.errors.PermissionDeniedError, tf.errors.DataLossError)


def one_line(error):
    """The message of `error` on one line: its lines joined; for TensorFlow's errors, the first line without the
    op context."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    if isinstance(error, tf.errors.OpError):
        return tf_error_text(error)
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__


def command_name():
    """The name the user typed: `albert-export`, `run_classifier.py`, ..."""
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "albert_tf"


def _show_traceback():
    if os.environ.get(TRACEBACK_ENV, "").strip() not in ("", "0"):
        return True
    try:
        return flags.FLAGS.is_parsed() and flags.FLAGS["verbosity"].value >= 1
    except KeyError:
        return False


def fail(message):
    """Prints `<command>: error: <message>` on standard error and exits with status 2."""
    sys.stderr.flush()
    sys.stderr.write(f"{command_name()}: error: {message}\n")
    sys.stderr.flush()
    sys.exit(2)


def guard_user_errors(main):
    """`main` that reports an error in what the user gave on one line (exit status 2), see `user_errors`."""

    def guarded(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except user_errors() as e:  # pylint: disable=catching-non-exception
            if _show_traceback():
                traceback.print_exc()
            fail(one_line(e))

    return guarded


def _parse_flags(parser):
    def parse(argv):
        try:
            return parser(argv)
        except flags.Error as e:
            fail(one_line(e))

    return parse


def run_app(main, help_text, flag_modules=(), flags_parser=None, **run_kwargs):
    """`absl.app.run(main)` with `help_text` as the paragraph of `--help` and the flags of `flag_modules`;
    errors in flags and in what the user gave end the command with one line and exit status 2.

    Args:
        main: the command's `main(argv)`.
        help_text: str, one paragraph on what the command does, what it reads and writes.
        flag_modules: names of the modules whose flags `--help` lists (those that defined them), besides
            the flags the script itself defines.
        flags_parser: `fn(argv) -> argv` parsing the flags (default: all of `argv`, unknown flags refused).
        **run_kwargs: passed on to `absl.app.run`.
    """
    sys.modules["__main__"].__doc__ = help_text.strip() + "\n"
    by_module = flags.FLAGS.flags_by_module_dict()
    for module_name in flag_modules:
        for flag in by_module.get(module_name, []):
            flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    if any(arg in ("-h", "-help", "--help", "--helpshort") for arg in sys.argv[1:]):
        # absl answers --help with exit status 1; asking for help is not an error.
        app.usage(shorthelp=True, writeto_stdout=True, exitcode=0)
    app.run(guard_interrupts(guard_user_errors(_logging_cpu_backend(main))),
            flags_parser=_parse_flags(flags_parser or flags.FLAGS), **run_kwargs)


def guard_interrupts(main):
    """`main` run under `interrupt.handling_signals()`: a SIGINT or SIGTERM ends it with one line on stderr,
    `interrupted at step N; the same command resumes`, and exit status 130 or 143 (128 + the signal)."""

    def guarded(*args, **kwargs):
        try:
            with interrupt.handling_signals():
                return main(*args, **kwargs)
        except interrupt.Interrupted as e:
            logging.flush()
            print(e.line(), file=sys.stderr, flush=True)
            sys.exit(e.exit_code)

    return guarded


def _logging_cpu_backend(main):
    """`main` that first logs the CPU backend in force at debug level (`--verbosity=1` shows it)."""

    def logged(*args, **kwargs):
        logging.debug(cpu_backend_line())
        return main(*args, **kwargs)

    return logged


def run_command(command):
    """Runs the `albert_tf.options.Command` `command` as this process's command line: its flags declared from its
    options (in the name of the script the user ran, so that `--help` and `--helpfull` list them), parsed and
    built back into the options dataclasses (with `command.resolve`'s values for the flags not given), then
    `command.call`."""
    module = sys.argv[0]
    flag_lib.define_flags(command.options, no_flag=command.no_flag, only=command.only, module_name=module)
    flags.mark_flags_as_required(flag_lib.required_flags(command.options, command.no_flag, command.only))

    def main(argv):
        overrides = {}
        if command.resolve is not None:
            overrides = command.resolve(*flag_lib.given_flags(flags.FLAGS, command.options))
        built = flag_lib.from_flags(flags.FLAGS, *command.options, overrides=overrides)
        if command.extra_args:
            command.call(*built, argv[1:])
        else:
            command.call(*built)

    parser = _known_flags if command.pass_unknown_flags else None
    if command.extra_args or command.pass_unknown_flags:
        run_app(main, command.help_text, flags_parser=parser)
    else:
        run_app(_no_arguments(main), command.help_text)


def _known_flags(argv):
    """absl parsing that leaves unknown `--flags` in argv (another library's options, e.g. Apache Beam's)."""
    return flags.FLAGS(argv, known_only=True)


def _no_arguments(main):
    def checked(argv):
        if len(argv) > 1:
            raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])} (options are `--name=value`).")
        return main(argv)

    return checked
