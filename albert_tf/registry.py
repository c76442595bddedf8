"""The model-kind registry: what each model kind is, declared once, next to its model class.

A model kind (`encoder`, `pretrainer`, `classifier`, `squad_v1`, `squad_v2`, `race`, and any added later) says in
one `ModelKind`:

* `name`: its `--model` value (`albert-convert`, `albert-export`);
* `model_class`: its Keras model class;
* `heads`: one `Head` per head, each with its checkpoint rows (original TF1 names <-> attribute paths of the
  model, `albert_tf.checkpoints.table.Row`) and its Hugging Face names (`albert_tf.checkpoints.foreign.Link`);
* `serving_spec`: its `albert_tf.serving_spec.ServingSpec` (what `export_saved_model` serves);
* `hf_architecture`: its transformers class (None when transformers has no class with these heads);
* `labels_variable`: the TF1 name whose first dimension is its `num_labels` constructor argument (read back when
  a checkpoint is detected, passed on export, written into the Hugging Face `config.json`);
* `order`: its place in listings and, between kinds whose head names are all in a checkpoint, its precedence in
  detection (a checkpoint holds a kind when it holds every TF1 name of the kind's heads; the kind with the most
  head variables wins, then the lower `order`: the root-scope `output_weights` reads as `classifier`, not
  `race`). keras-hub presets hold the encoder alone, so no kind declares keras-hub names;
* `text_mode`: the `albert_tf.text.modes.TextMode` its model's preprocessor packs raw text with (None: the
  shared `text` mode of sentences and pairs). `text_modes()` lists every kind's mode and those registered on
  their own (`register_text_mode`); `AlbertPreprocessor` dispatches through them and names no task.

The checkpoint table, the converter (`--model`, detection), export, the Hugging Face reader and writer,
`from_pretrained` and `albert_tf`'s public names all read this registry; none lists the kinds itself.

Each task's kind module (`albert_tf.tasks.<task>.kind`, beside its model module) registers its kinds when it is
imported, and its pipeline module (`albert_tf.tasks.<task>.pipeline`, when there is one) registers its
`albert_tf.pipelines.Pipeline` class (`register_pipeline`): `albert_tf.pipeline(task, ...)` finds the pipeline of
`task` here (`pipelines()`), and the kinds whose exports serve it through their serving specs (`serving_kinds`).
Every lookup first imports the kind module of every task package (`load()`; the pipeline lookups also import the pipeline modules), so the registry is
complete whatever was imported before, and a new task folder is found without an edit anywhere else. Code outside
the package (a test, a user's head) calls `register` itself before its lookups.
"""

import dataclasses
import importlib
import importlib.util

from albert_tf.errors import InputError

ENCODER_MODULE = "albert_tf.models.kind"   # registers the `encoder` kind
TEXT_MODES_MODULE = "albert_tf.text.modes"   # registers the shared `text` mode
TASKS_PACKAGE = "albert_tf.tasks"
KIND_MODULE = "kind"   # the module of a task package that declares and registers its model kinds
PIPELINES_MODULE = "albert_tf.pipelines"   # the shared pipeline base; registers the encoder's pipeline
PIPELINE_MODULE = "pipeline"   # the module of a task package that defines and registers its pipelines


@dataclasses.dataclass(frozen=True)
class Head:
    """One head of a model kind.

    Attributes:
        name: str, the head's checkpoint component (`mlm`, `sop`, `classifier`, ...): the `component` of its
            rows, and what logs, errors and `LoadResult.missing_heads` call it. Unique across kinds.
        rows: tuple of `albert_tf.checkpoints.table.Row`, the original TF1 names of the head's variables and the
            attribute paths of the model that hold them.
        hf_links: tuple of `albert_tf.checkpoints.foreign.Link`, TF1 name <-> transformers name (without the
            `albert.` prefix of the encoder) of each variable; empty when transformers has no such head.
    """

    name: str
    rows: tuple
    hf_links: tuple = ()

    @property
    def roots(self):
        """The model attributes the head's rows start at (`classifier_head`, ...), sorted."""
        return tuple(sorted({row.path.split(".")[0].split("[")[0] for row in self.rows}))


@dataclasses.dataclass(frozen=True)
class ModelKind:
    """One model kind; see the module docstring for the fields."""

    name: str
    model_class: type
    heads: tuple = ()
    serving_spec: object = None
    hf_architecture: str = None
    labels_variable: str = None
    # The keras-hub task class whose preset holds this kind's head (`AlbertTextClassifier`), or None.
    keras_hub_task: str = None
    order: int = 100
    # Whether a fine-tuned checkpoint keeps this kind's heads from its initial weights (the MLM and SOP heads), so a
    # fine-tuned head found beside them wins in detection (`albert_tf.checkpoints.convert.detect_model`).
    inherited_heads: bool = False
    # text and checkpoints (kinds-b)
    text_mode: object = None

    @property
    def tf1_names(self):
        """The TF1 names of every head variable of this kind (patterns without `{g}`/`{k}`)."""
        return tuple(row.name for head in self.heads for row in head.rows)

    def model_kwargs(self, num_labels=None):
        """Constructor arguments beyond the config: `num_labels` for a kind with a `labels_variable`."""
        if self.labels_variable is None or num_labels is None:
            return {}
        return {"num_labels": int(num_labels)}


_KINDS = {}          # name -> ModelKind, in registration order
_PIPELINES = {}      # pipeline task -> Pipeline class, in registration order
_TEXT_MODES = {}     # name -> text mode registered on its own (`register_text_mode`), in registration order
_state = {"loaded": False, "pipelines_loaded": False, "version": 0}


def register(kind):
    """Adds `kind` (a `ModelKind`); a kind of the same name and class replaces the earlier one.

    Returns:
        `kind`, so that a module can keep it as a constant.
    """
    if not isinstance(kind, ModelKind):
        raise TypeError(f"`register` takes a ModelKind. Received: {type(kind).__name__}.")
    old = _KINDS.get(kind.name)
    if old is not None and old.model_class.__qualname__ != kind.model_class.__qualname__:
        raise InputError(f"Model kind `{kind.name}` is registered for {old.model_class.__qualname__}; cannot "
                         f"register it again for {kind.model_class.__qualname__}.")
    taken = {head.name: other.name for other in _KINDS.values() if other.name != kind.name for head in other.heads}
    for head in kind.heads:
        if head.name in taken or head.name == "encoder":
            raise InputError(f"Head `{head.name}` of model kind `{kind.name}` is already a head of "
                             f"`{taken.get(head.name, 'encoder')}`; head names are unique.")
        wrong = [row.name for row in head.rows if row.component != head.name]
        if wrong:
            raise InputError(f"Rows {wrong} of head `{head.name}` ({kind.name}) name another component.")
    shared = [other.name for other in _KINDS.values() if other.name != kind.name and kind.hf_architecture
              and other.hf_architecture == kind.hf_architecture]
    if shared:
        raise InputError(f"Model kind `{kind.name}` names the transformers class {kind.hf_architecture}, already "
                         f"that of `{shared[0]}`; a Hugging Face directory must name one kind.")
    if kind.text_mode is not None:
        _check_text_mode(kind.text_mode, f"model kind `{kind.name}`", exclude=kind.name)
    if kind.serving_spec is not None:
        kind.serving_spec.kind, kind.serving_spec.model_class = kind.name, kind.model_class
    _KINDS[kind.name] = kind
    _state["version"] += 1
    return kind


def _check_text_mode(mode, owner, exclude=None):
    """InputError when another text mode of the same name is registered (kinds may share one mode object)."""
    for other in _text_modes(exclude):
        if other.name == mode.name and other is not mode:
            raise InputError(f"Text mode `{mode.name}` of {owner} is already registered as another mode; text mode "
                             "names are unique.")


def register_text_mode(mode):
    """Adds a text mode that no model kind names (a `TextMode`: `name`, `keys`, ...); a mode of the same name
    replaces the earlier one registered this way.

    Returns:
        `mode`, so that a module can keep it as a constant.
    """
    _TEXT_MODES.pop(mode.name, None)
    _check_text_mode(mode, "`register_text_mode`")
    _TEXT_MODES[mode.name] = mode
    _state["version"] += 1
    return mode


def _text_modes(exclude_kind=None):
    """The modes registered on their own, then those of the kinds (by `order`), each name once; no `load()`."""
    ranked = sorted(enumerate(_KINDS.values()), key=lambda item: (item[1].order, item[0]))
    found = {}
    for mode in list(_TEXT_MODES.values()) + [kind.text_mode for _, kind in ranked
                                              if kind.text_mode is not None and kind.name != exclude_kind]:
        found.setdefault(mode.name, mode)
    return tuple(found.values())


def text_modes():
    """Every text mode: those registered on their own (the shared `text` mode first), then the kinds', by `order`."""
    load()
    return _text_modes()


def text_mode(name):
    """The text mode `name`, or None."""
    for mode in text_modes():
        if mode.name == name:
            return mode
    return None


def unregister(name):
    """Removes the kind `name` (for kinds registered by tests)."""
    _KINDS.pop(name, None)
    _state["version"] += 1


def load():
    """Imports the `kind` module of every task package once, so that each registers its kinds."""
    if _state["loaded"]:
        return
    importlib.import_module(TEXT_MODES_MODULE)
    _import_task_modules(ENCODER_MODULE, KIND_MODULE)
    _state["loaded"] = True


def _import_task_modules(shared, module):
    """Imports the module `shared`, then the module `module` of every task package that has one."""
    importlib.import_module(shared)
    package = importlib.import_module(TASKS_PACKAGE)
    for task in package.names():
        name = f"{TASKS_PACKAGE}.{task}.{module}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def _load_pipelines():
    """Imports the shared pipeline module and the `pipeline` module of every task package once."""
    load()
    if _state["pipelines_loaded"]:
        return
    _import_task_modules(PIPELINES_MODULE, PIPELINE_MODULE)
    _state["pipelines_loaded"] = True


def register_pipeline(cls):
    """Adds the pipeline class `cls` (an `albert_tf.pipelines.Pipeline` with a `task` name) under its task; a
    class of the same task and name replaces the earlier one.

    Returns:
        `cls`, so that it can decorate the class.
    """
    task = getattr(cls, "task", None)
    if not isinstance(task, str) or not task:
        raise TypeError(f"`register_pipeline` takes a Pipeline class with a `task` name. Received: {cls!r}.")
    old = _PIPELINES.get(task)
    if old is not None and old.__qualname__ != cls.__qualname__:
        raise InputError(f"Pipeline task `{task}` is registered for {old.__qualname__}; cannot register it again "
                         f"for {cls.__qualname__}.")
    _PIPELINES[task] = cls
    return cls




def pipelines():
    """`{task: Pipeline class}` of every registered pipeline, sorted by task."""
    _load_pipelines()
    return {task: _PIPELINES[task] for task in sorted(_PIPELINES)}


def serving_kinds(task):
    """The names of the kinds whose exports serve the pipeline task `task` (their serving spec lists it in
    `pipeline_tasks`), by `order`."""
    return tuple(kind.name for kind in kinds()
                 if kind.serving_spec is not None and task in getattr(kind.serving_spec, "pipeline_tasks", ()))


def version():
    """A number that changes whenever a kind is registered or removed (for caches built from the registry)."""
    load()
    return _state["version"]


def kinds():
    """Every registered `ModelKind`, by `order` (then registration order)."""
    load()
    ranked = sorted(enumerate(_KINDS.values()), key=lambda item: (item[1].order, item[0]))
    return tuple(kind for _, kind in ranked)


def names():
    """The `--model` names of every kind, by `order`."""
    return tuple(kind.name for kind in kinds())


def get(name):
    """The kind named `name`; an `InputError` listing the names otherwise."""
    load()
    if name not in _KINDS:
        raise InputError(f"`model` must be one of {', '.join(names())}. Received: `model={name!r}`.")
    return _KINDS[name]


def kind_of(model):
    """The kind of `model` (an instance or a class), looked up along its class's MRO; None if none."""
    load()
    cls = model if isinstance(model, type) else type(model)
    by_class = {kind.model_class: kind for kind in _KINDS.values()}
    for base in cls.__mro__:
        if base in by_class:
            return by_class[base]
    return None


def heads():
    """Every registered `Head` (all kinds), by kind order."""
    return tuple(head for kind in kinds() for head in kind.heads)


def by_class_name(name):
    """The model class named `name` (`AlbertClassifier`), or None."""
    for kind in kinds():
        if kind.model_class.__name__ == name:
            return kind.model_class
    return None
