"""absl flags from options dataclasses (`albert_tf.options`): the one place where albert_tf declares flags.

`define_flags(classes)` declares one flag per field (name, default, help text, kind), `from_flags(...)` builds
the dataclasses back from the parsed flags, and `required_flags(classes)` names the fields without a default.
Only the commands (`albert_tf.commands`) call these; the library takes the dataclasses.
"""

from absl import flags

from albert_tf.errors import InputError
from albert_tf.options import flag_fields, flag_spec, REQUIRED


def required_flags(classes, no_flag=(), only=None):
    """The flags of the fields of `classes` that have no default (a command marks them required)."""
    return [field.name for cls, field in declared_fields(classes, no_flag, only) if field.default is REQUIRED]


def declared_fields(classes, no_flag=(), only=None):
    """`(class, field)` of each flag that `define_flags(classes, no_flag=no_flag, only=only)` declares."""
    only = only or {}
    return [(cls, field) for cls in classes for field in flag_fields(cls)
            if field.name not in no_flag and (cls not in only or field.name in only[cls])]


def define_flags(classes, flag_values=flags.FLAGS, no_flag=(), only=None, module_name=None):
    """Declares one absl flag per field of the dataclasses `classes` (those of `flag_fields`).

    Args:
        classes: the options dataclasses of a command, e.g. `(ClassifierOptions, RuntimeOptions)`.
        flag_values: the `FlagValues` to declare them in.
        no_flag: fields of the shared groups that this command gives no flag (they keep their defaults).
        only: `{class: field names}`: of these classes, only the fields named get a flag (a command that takes
            a few options of a shared group, e.g. `{RuntimeOptions: ("use_tpu", "tpu_name")}`).
        module_name: the module the flags are declared in, as `--help` groups them (the command's script).
    """
    declared = declared_fields(classes, no_flag, only)
    names = [field.name for _, field in declared]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InputError(f"Options declared by two of {', '.join(cls.__name__ for cls in classes)}: "
                         f"{', '.join(twice)}.")
    for cls, field in declared:
        kind, default, help_text, enum_values = flag_spec(cls, field)
        if kind == "enum":
            flags.DEFINE_enum(field.name, default, list(enum_values), help_text, flag_values=flag_values,
                              module_name=module_name)
        elif kind == "list":
            flags.DEFINE_list(field.name, default, help_text, flag_values=flag_values, module_name=module_name)
        else:
            getattr(flags, f"DEFINE_{kind}")(field.name, default, help_text, flag_values=flag_values,
                                             module_name=module_name)
        flag_values[field.name].option_class = cls


def from_flags(flag_values, *classes, overrides=None):
    """The dataclasses `classes` (a tuple, in order) from the parsed flags that `define_flags(classes)`
    declared; `overrides` {field: value} replace flag values (e.g. a preset's, for flags the user did not give)."""
    overrides = overrides or {}
    built = []
    for cls in classes:
        values = {field.name: overrides.get(field.name, flag_values[field.name].value) for field in flag_fields(cls)
                  if field.name in flag_values and getattr(flag_values[field.name], "option_class", None) is cls}
        built.append(cls(**values))
    return tuple(built)


def given_flags(flag_values, classes):
    """`(values, given)`: every declared flag's value by name, and the names the command line gave."""
    values, given = {}, set()
    for cls in classes:
        for field in flag_fields(cls):
            if field.name in flag_values and getattr(flag_values[field.name], "option_class", None) is cls:
                values[field.name] = flag_values[field.name].value
                if flag_values[field.name].present:
                    given.add(field.name)
    return values, given
