"""Finds the checkpoint, `albert_config.json` and `30k-clean.model` of every form a release comes in.

Forms (as Google's README distributes them): a checkpoint prefix (`.../model.ckpt-best`; also accepted with a trailing
`.index`, `.data-*` or `.meta`, with a warning naming the prefix used), a run directory (its newest
`model.ckpt-<step>`, as the runners read it, whatever its `checkpoint` state file names), a release directory
(`albert_config.json` + `model.ckpt-best.*` + `30k-clean.model`), a `.tar.gz` of such a directory, a TF-Hub TF1
module directory (`variables/variables.*`, `assets/albert_config.json`, `assets/30k-clean.model`) or its `.tar.gz`,
and the layouts ALBERT's weights are
published in today, told apart by their files:

* a TF2 SavedModel of tf-models-official's `AlbertEncoder` (TF-Hub / Kaggle `albert_en_*`): `saved_model.pb`,
  `variables/`, `assets/30k-clean.model`;
* a keras-hub preset: `config.json` naming `keras_hub>AlbertBackbone`, `model.weights.h5`,
  `assets/tokenizer/vocabulary.spm`;
* a Hugging Face directory: `config.json` with `model_type: albert`, `model.safetensors` (or shards and
  `model.safetensors.index.json`) or transformers 4.x's TensorFlow `tf_model.h5` (an HDF5 file of arrays),
  `spiece.model`. Pickled PyTorch files (`pytorch_model.bin`, `*.pt`, ...) are refused without being opened.

For these three, the config is translated to an `albert_config.json` in a temporary directory that lives as
long as the `resolve_source` context, so every caller finds `config_file` and `spm_model_file` as for a release.
"""

import contextlib
import dataclasses
import glob
import json
import os
import re
import tarfile
import tempfile
import zipfile

import tensorflow as tf
from absl import logging

from albert_tf.checkpoints import hf, hf_tf, keras_hub
from albert_tf.checkpoints import download as hub
from albert_tf.checkpoints import tfhub as saved_model
from albert_tf.config import AlbertConfig
from albert_tf.errors import InputError

CONFIG_NAME = "albert_config.json"
SPM_MODEL_NAME = "30k-clean.model"
VOCAB_NAMES = ("30k-clean.vocab", "vocab_chinese.txt", "vocab.txt")
RELEASE_CHECKPOINT = "model.ckpt-best"
_SUFFIX = re.compile(r"\.(index|meta|data-\d{5}-of-\d{5})$")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
_STEP_CHECKPOINT = re.compile(r"^model\.ckpt-(\d+)\.index$")


@dataclasses.dataclass(frozen=True)
class ResolvedSource:
    """Where the pieces of a source are.

    Attributes:
        path: str, the path the user gave.
        kind: str, one of `checkpoint`, `checkpoint_dir`, `release_dir`, `tfhub_module` (TF1 checkpoints),
            `tf2_saved_model`, `keras_hub_preset`, `hf_model` (`FOREIGN_KINDS`); archives add `archive:` in front.
        checkpoint_prefix: str, prefix for `tf.train.load_checkpoint` (`variables/variables` of a TF2
            SavedModel). For keras-hub and Hugging Face directories, which hold no TF checkpoint, the directory:
            `resolve_source` of it finds the same source again; read its weights with `reader.open_reader`.
        config_file: str or None, the `albert_config.json` found next to the checkpoint.
        spm_model_file: str or None, the SentencePiece model found next to the checkpoint.
        vocab_file: str or None, `30k-clean.vocab` (informational) or a WordPiece vocab, when present.
        directory: str or None, the directory of a foreign layout (`FOREIGN_KINDS`).
        config_note: str or None, why no config could be taken from a foreign layout (the caller must pass one).
    """

    path: str
    kind: str
    checkpoint_prefix: str
    config_file: str = None
    spm_model_file: str = None
    vocab_file: str = None
    directory: str = None
    config_note: str = None

    @property
    def layout(self):
        """`kind` without the `archive:` marker."""
        return self.kind.split(":")[-1]


FOREIGN_KINDS = ("tf2_saved_model", "keras_hub_preset", "hf_model")


def _first_existing(directories, names):
    for directory in directories:
        for name in names:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                return candidate
    return None


def _with_assets(path, kind, prefix, directories):
    return ResolvedSource(
        path=path, kind=kind, checkpoint_prefix=prefix,
        config_file=_first_existing(directories, (CONFIG_NAME,)),
        spm_model_file=_first_existing(directories, (SPM_MODEL_NAME,)),
        vocab_file=_first_existing(directories, VOCAB_NAMES))


def _has_checkpoint(prefix):
    return tf.io.gfile.exists(prefix + ".index")


def list_checkpoints(directory):
    """`[(step, prefix), ...]` of the `model.ckpt-<step>` checkpoints in `directory` (those with their `.index`),
    sorted by step."""
    if not tf.io.gfile.isdir(directory):
        return []
    found = []
    for filename in tf.io.gfile.listdir(directory):
        match = _STEP_CHECKPOINT.match(filename)
        if match:
            found.append((int(match.group(1)), os.path.join(directory, filename[:-len(".index")])))
    return sorted(found)


def state_file_target(directory):
    """The checkpoint prefix the `checkpoint` state file of `directory` names (made absolute as TensorFlow does),
    whether or not its files exist; None without a file or with one that does not parse. Unlike
    `tf.train.latest_checkpoint`, it logs no `ERROR` for a named checkpoint that is gone (moved aside)."""
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError):
        return None
    return state.model_checkpoint_path if state is not None else None


def _own_checkpoint(path, directory):
    """The checkpoint a run directory's runner reads: its newest `model.ckpt-<step>` (found from the files, as
    `albert_tf.training.loop` resumes), else the one its `checkpoint` state file names when that one is in
    `directory`; None when there is neither. A state file naming a checkpoint elsewhere (a copied or moved run)
    is refused naming both paths, never followed to another run's weights."""
    checkpoints = list_checkpoints(directory)
    named = state_file_target(directory)
    if checkpoints:
        newest = checkpoints[-1][1]
        if named is not None and os.path.abspath(named) != os.path.abspath(newest):
            logging.warning("The `checkpoint` state file of `%s` names `%s`; reading the directory's own newest "
                            "checkpoint `%s`, as its runner does.", path, named, newest)
        return newest
    if named is None:
        return None
    if os.path.abspath(os.path.dirname(named)) != os.path.abspath(directory):
        raise InputError(f"The `checkpoint` state file of `{path}` names `{named}`, outside `{path}`, and `{path}` "
                         "holds no model.ckpt-<step> of its own: pass the checkpoint prefix you mean.")
    return named if _has_checkpoint(named) else None


def _foreign(path, kind, directory, config_fn, spm_file, stack, prefix=None):
    """A foreign layout: its config translated into a temporary `albert_config.json` (or a note why not)."""
    config_file, note = None, None
    try:
        config = AlbertConfig.from_dict(config_fn(directory))
        config.validate()
    except ValueError as e:
        note = str(e)
        logging.warning("No config taken from `%s`: %s", path, note)
    else:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="albert_tf_config_"))
        config_file = os.path.join(tmp, CONFIG_NAME)
        config.to_json_file(config_file)
    spm = spm_file if spm_file and os.path.isfile(spm_file) else None
    return ResolvedSource(path=path, kind=kind, checkpoint_prefix=prefix, config_file=config_file,
                          spm_model_file=spm, directory=directory, config_note=note)


def _resolve_directory(path, directory, stack):
    if saved_model.is_saved_model(directory):
        return _foreign(path, "tf2_saved_model", directory, saved_model.config_dict,
                        saved_model.spm_model_file(directory), stack,
                        prefix=os.path.join(directory, "variables", "variables"))
    if keras_hub.is_preset_dir(directory):
        return _foreign(path, "keras_hub_preset", directory, keras_hub.config_dict,
                        os.path.join(directory, keras_hub.SPM), stack, prefix=directory)
    if hf.is_hf_dir(directory):
        hf.check_model_type(directory)
        hf.weight_files(directory)   # Refuses pickles before anything else happens.
        return _foreign(path, "hf_model", directory, hf.config_dict, os.path.join(directory, hf.SPM), stack,
                        prefix=directory)
    hub_prefix = os.path.join(directory, "variables", "variables")
    if _has_checkpoint(hub_prefix):
        return _with_assets(path, "tfhub_module", hub_prefix, [os.path.join(directory, "assets"), directory])
    best = os.path.join(directory, RELEASE_CHECKPOINT)
    if _has_checkpoint(best):
        return _with_assets(path, "release_dir", best, [directory])
    own = _own_checkpoint(path, directory)
    if own is not None:
        return _with_assets(path, "checkpoint_dir", own, [directory])
    indexes = sorted(glob.glob(os.path.join(glob.escape(directory), "*.index")))
    if len(indexes) == 1:
        return _with_assets(path, "checkpoint_dir", indexes[0][:-len(".index")], [directory])
    if len(indexes) > 1:
        raise InputError(
            f"Directory `{path}` holds several checkpoints ({', '.join(os.path.basename(i) for i in indexes)}) "
            f"and no `{RELEASE_CHECKPOINT}` or `checkpoint` file saying which to use. Pass a checkpoint prefix.")
    pickles = sorted(name for name in os.listdir(directory)
                     if name in hf.PICKLE_NAMES or name.endswith(hf.PICKLE_SUFFIXES))
    if pickles:
        # A Hugging Face download of the PyTorch weights only (with or without its `config.json`).
        hf.refuse_pickle(os.path.join(path, pickles[0]))
    raise FileNotFoundError(
        f"No checkpoint in directory `{path}`. Expected one of: a release directory (`{RELEASE_CHECKPOINT}.index`), "
        "a TF-Hub TF1 module (`variables/variables.index`), a `checkpoint` state file, one `*.index` file, a TF2 "
        "SavedModel (`saved_model.pb`), a keras-hub preset or a Hugging Face directory (`config.json`).")


def _keras_file_class(path):
    """The model class a `.keras` file holds (`config.json` of its zip: `AlbertClassifier`), or what it is."""
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
        return str(config["class_name"])
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError):
        return "not a readable .keras archive"


def _resolve_plain(path, local, stack):
    """Resolves a path that is not an archive; `local` is the filesystem path, `path` the user's (for messages)."""
    if os.path.isdir(local):
        return _resolve_directory(path, local, stack)
    parent = os.path.dirname(os.path.dirname(local))
    if os.path.basename(local) == "variables" and os.path.basename(os.path.dirname(local)) == "variables" \
            and saved_model.is_saved_model(parent):
        return _resolve_directory(path, parent, stack)   # The `checkpoint_prefix` of a TF2 SavedModel.
    if _has_checkpoint(local):
        return _with_assets(path, "checkpoint", local, [os.path.dirname(local) or "."])
    match = _SUFFIX.search(local)
    if match:
        prefix = local[:match.start()]
        if _has_checkpoint(prefix):
            logging.warning("`%s` is a file of a checkpoint; using its prefix `%s` (pass the prefix, as the "
                            "original's --init_checkpoint expects).", path, prefix)
            return _with_assets(path, "checkpoint", prefix, [os.path.dirname(prefix) or "."])
    base = os.path.basename(local)
    if os.path.isfile(local) and (base in hf.PICKLE_NAMES or base.endswith(hf.PICKLE_SUFFIXES)):
        hf.refuse_pickle(path)
    if os.path.isfile(local) and base.endswith(".safetensors"):
        directory = os.path.dirname(local) or "."
        if hf.is_hf_dir(directory):
            return _resolve_directory(path, directory, stack)
        raise InputError(f"`{path}` is a safetensors file without a Hugging Face `config.json` beside it; pass the "
                         "model directory.")
    if os.path.isfile(local) and base in (keras_hub.WEIGHTS, saved_model.SAVED_MODEL, "config.json", hf_tf.WEIGHTS):
        return _resolve_directory(path, os.path.dirname(local) or ".", stack)
    if os.path.isfile(local) and base.endswith(".keras"):
        raise InputError(f"`{path}` is a Keras model file ({_keras_file_class(local)}), not a checkpoint source: load "
                         "it with `keras.saving.load_model` (albert_tf's classes are registered), or pass the "
                         "checkpoint or export it was made from.")
    raise FileNotFoundError(
        f"Checkpoint source `{path}` not found. Expected a checkpoint prefix (with `{os.path.basename(local)}.index` "
        "beside it), a release directory, a TF-Hub TF1 module directory, or a `.tar.gz` of one.")


def _archive_root(extracted):
    entries = [e for e in os.listdir(extracted) if not e.startswith(".")]
    if len(entries) == 1 and os.path.isdir(os.path.join(extracted, entries[0])):
        return os.path.join(extracted, entries[0])  # A release tarball: one top-level folder.
    return extracted                                # A TF-Hub module archive: files at the top.


@contextlib.contextmanager
def resolve_source(path):
    """Context manager yielding a `ResolvedSource` for `path`.

    Archives are untrusted input: they are extracted with tarfile's `data` filter (no absolute paths, no `..`,
    no links leaving the directory) into a temporary directory that is removed when the context exits.

    Args:
        path: str or path-like, any form listed in the module docstring.

    Yields:
        `ResolvedSource`.
    """
    path = os.fspath(path)
    # A name (`albert_base_v2`, `hf:...`, `kaggle:...`, `https://...`) is fetched into its cache first (`hub`).
    local = hub.local_path(path)
    with contextlib.ExitStack() as stack:
        if os.path.isfile(local) and local.endswith(_ARCHIVE_SUFFIXES):
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="albert_tf_source_"))
            try:
                with tarfile.open(local, "r:*") as archive:
                    archive.extractall(tmp, filter="data")
            except (tarfile.TarError, OSError) as e:
                raise InputError(f"Cannot extract archive `{path}`: {e}") from None
            source = _resolve_plain(path, _archive_root(tmp), stack)
            yield dataclasses.replace(source, kind="archive:" + source.kind)
            return
        yield _resolve_plain(path, local, stack)
