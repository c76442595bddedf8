"""Finds the checkpoint, `albert_config.json` and `30k-clean.model` of every form a release comes in.

Forms (original-release §9): a checkpoint prefix (`.../model.ckpt-best`; also accepted with a trailing
`.index`, `.data-*` or `.meta`, with a warning naming the prefix used), a directory with a `checkpoint` state
file (latest checkpoint), a release directory (`albert_config.json` + `model.ckpt-best.*` + `30k-clean.model`),
a `.tar.gz` of such a directory, and a TF-Hub TF1 module directory (`variables/variables.*`,
`assets/albert_config.json`, `assets/30k-clean.model`) or its `.tar.gz`.
"""

import contextlib
import dataclasses
import glob
import os
import re
import shutil
import tarfile
import tempfile

import tensorflow as tf
from absl import logging

CONFIG_NAME = "albert_config.json"
SPM_MODEL_NAME = "30k-clean.model"
VOCAB_NAMES = ("30k-clean.vocab", "vocab_chinese.txt", "vocab.txt")
RELEASE_CHECKPOINT = "model.ckpt-best"
_SUFFIX = re.compile(r"\.(index|meta|data-\d{5}-of-\d{5})$")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


@dataclasses.dataclass(frozen=True)
class ResolvedSource:
    """Where the pieces of a source are.

    Attributes:
        path: str, the path the user gave.
        kind: str, one of `checkpoint`, `checkpoint_dir`, `release_dir`, `tfhub_module`; archives add
            `archive:` in front.
        checkpoint_prefix: str, prefix for `tf.train.load_checkpoint`.
        config_file: str or None, the `albert_config.json` found next to the checkpoint.
        spm_model_file: str or None, the SentencePiece model found next to the checkpoint.
        vocab_file: str or None, `30k-clean.vocab` (informational) or a WordPiece vocab, when present.
    """

    path: str
    kind: str
    checkpoint_prefix: str
    config_file: str = None
    spm_model_file: str = None
    vocab_file: str = None


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


def _resolve_directory(path, directory):
    hub_prefix = os.path.join(directory, "variables", "variables")
    if _has_checkpoint(hub_prefix):
        return _with_assets(path, "tfhub_module", hub_prefix, [os.path.join(directory, "assets"), directory])
    best = os.path.join(directory, RELEASE_CHECKPOINT)
    if _has_checkpoint(best):
        return _with_assets(path, "release_dir", best, [directory])
    if os.path.isfile(os.path.join(directory, "checkpoint")):
        latest = tf.train.latest_checkpoint(directory)
        if latest is not None and _has_checkpoint(latest):
            return _with_assets(path, "checkpoint_dir", latest, [directory])
    indexes = sorted(glob.glob(os.path.join(glob.escape(directory), "*.index")))
    if len(indexes) == 1:
        return _with_assets(path, "checkpoint_dir", indexes[0][:-len(".index")], [directory])
    if len(indexes) > 1:
        raise ValueError(
            f"Directory `{path}` holds several checkpoints ({', '.join(os.path.basename(i) for i in indexes)}) "
            f"and no `{RELEASE_CHECKPOINT}` or `checkpoint` file saying which to use. Pass a checkpoint prefix.")
    raise FileNotFoundError(
        f"No checkpoint in directory `{path}`. Expected one of: a release directory (`{RELEASE_CHECKPOINT}.index`), "
        "a TF-Hub TF1 module (`variables/variables.index`), a `checkpoint` state file, or one `*.index` file.")


def _resolve_plain(path, local):
    """Resolves a path that is not an archive; `local` is the filesystem path, `path` the user's (for messages)."""
    if os.path.isdir(local):
        return _resolve_directory(path, local)
    if _has_checkpoint(local):
        return _with_assets(path, "checkpoint", local, [os.path.dirname(local) or "."])
    match = _SUFFIX.search(local)
    if match:
        prefix = local[:match.start()]
        if _has_checkpoint(prefix):
            logging.warning("`%s` is a file of a checkpoint; using its prefix `%s` (pass the prefix, as the "
                            "original's --init_checkpoint expects).", path, prefix)
            return _with_assets(path, "checkpoint", prefix, [os.path.dirname(prefix) or "."])
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
    local = os.path.expanduser(path)
    if os.path.isfile(local) and local.endswith(_ARCHIVE_SUFFIXES):
        tmp = tempfile.mkdtemp(prefix="albert_tf_source_")
        try:
            try:
                with tarfile.open(local, "r:*") as archive:
                    archive.extractall(tmp, filter="data")
            except (tarfile.TarError, OSError) as e:
                raise ValueError(f"Cannot extract archive `{path}`: {e}") from None
            source = _resolve_plain(path, _archive_root(tmp))
            yield dataclasses.replace(source, kind="archive:" + source.kind)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    yield _resolve_plain(path, local)
