"""Weights by name: fetches a named source into a cache and gives its local path to `resolve_source`.

Names, besides paths (a path that exists always wins over a name):

* an original release, `albert_base_v2` (`albert_tf.checkpoints.releases.RELEASES`): Google's tarball, extracted
  once into the cache;
* `hf:<org>/<repo>[@revision]`: a Hugging Face model repository, through `huggingface_hub` (its cache under
  `HF_HOME`, its file locks, revisions, `HF_TOKEN`, `HF_ENDPOINT`, `HF_HUB_OFFLINE`). Only `config.json`,
  `model.safetensors` (or `model.safetensors.index.json` and its shards, or, in a repository without safetensors,
  transformers 4.x's TensorFlow `tf_model.h5`) and `spiece.model` are fetched, never `pytorch_model.bin`;
* `kaggle:<owner>/<model>/<framework>/<variation>[/<version>]`: a Kaggle model (keras-hub presets, the TF2
  SavedModels), through `kagglehub` (its cache under `KAGGLEHUB_CACHE`, its credentials from `KAGGLE_API_TOKEN`,
  `KAGGLE_USERNAME`/`KAGGLE_KEY` or `~/.kaggle/kaggle.json`, its MD5 check and its resumed archive downloads);
* `https://...` (or `http://`): any archive (`.tar.gz`, `.tgz`, `.tar`, `.zip`) or file; `#sha256=<hex>` at the
  end pins its checksum.

What is written here, because none of the clients does it: the download of release tarballs and plain URLs
(`keras.utils.get_file` neither resumes nor locks), with the standard library only (`urllib`, an OS file lock),
so that release names and URLs work on a plain `pip install`: a `.part` file resumed with HTTP `Range` (within
a call after a cut or stalled connection, and on the next call), a file lock per entry so two processes end
with one copy, the SHA-256 and size check (a mismatch removes the file and names it), a safe extraction into the
cache, and a progress bar (size, speed, ETA) for files over `PROGRESS_MIN_BYTES`;
for Kaggle, a file lock around `kagglehub` (it takes none) and the look-up of its cache when offline (it has no
offline mode). `hf:` and `kaggle:` names need their clients (`pip install 'albert_tf[hub]'`).

Timeouts: `ALBERT_TF_DOWNLOAD_TIMEOUT` seconds (default 60; `albert-download --timeout`) to connect and to wait
for the next bytes; a server that stalls longer is retried `RETRIES` times (each resuming), then the download
fails with one line naming the URL. Our cache is
`ALBERT_TF_CACHE` (default `~/.cache/albert_tf`); each entry's `complete.json` records the size and SHA-256 of
every file it holds, checked on every use: a damaged entry is an error naming the file and
`albert-download --force NAME`, which downloads it again.

Offline: `ALBERT_TF_OFFLINE=1` (or `HF_HUB_OFFLINE=1` for `hf:` names) reads only the caches and says what is
missing. Every failure (no network, a 404, a timeout, an unknown name, a checksum mismatch) is one
`InputError` naming the name and the URL. Credentials come only from the clients' standard places and are
never logged. Nothing here touches the network at import.
"""

import contextlib
import hashlib
import http.client
import importlib
import json
import os
import re
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from absl import logging

from albert_tf.checkpoints import releases as names
from albert_tf.errors import InputError, MissingPackageError

CACHE_ENV = "ALBERT_TF_CACHE"
OFFLINE_ENV = "ALBERT_TF_OFFLINE"
TIMEOUT_ENV = "ALBERT_TF_DOWNLOAD_TIMEOUT"
DEFAULT_CACHE = os.path.join("~", ".cache", "albert_tf")
EXTRA = "pip install 'albert_tf[hub]'"
# Downloads smaller than this show no progress bar.
PROGRESS_MIN_BYTES = 4 << 20
# Seconds to connect, and to wait for the next bytes, unless `ALBERT_TF_DOWNLOAD_TIMEOUT` says otherwise.
DEFAULT_TIMEOUT = 60.0
# Retries of a download that was cut after it received bytes (each resumes where the last one stopped).
RETRIES = 4
CHUNK = 1 << 20
MARKER = "complete.json"
# transformers 4.x's TensorFlow weights, fetched from a repository without safetensors (`hf_tf.WEIGHTS`; that
# module is not imported here: it loads Keras).
HF_TF_WEIGHTS = "tf_model.h5"
_ARCHIVES = (".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz", ".zip")
_TRUE = ("1", "true", "yes", "on")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME_LIKE = re.compile(r"^albert[-_][A-Za-z0-9_.-]*$")
_SHOWN_BYTES = 40   # first bytes of a download shown in a message


def cache_dir():
    """Our cache directory: `ALBERT_TF_CACHE`, default `~/.cache/albert_tf`."""
    return os.path.abspath(os.path.expanduser(os.environ.get(CACHE_ENV, "").strip() or DEFAULT_CACHE))


def download_timeout(timeout=None):
    """The stall timeout in seconds: `timeout` when given, else `ALBERT_TF_DOWNLOAD_TIMEOUT`, else 60."""
    if timeout is None:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        if not text:
            return DEFAULT_TIMEOUT
        try:
            timeout = float(text)
        except ValueError:
            raise InputError(f"{TIMEOUT_ENV}={text!r}: expected a number of seconds, e.g. 120.") from None
        what = f"{TIMEOUT_ENV}={text!r}"
    else:
        what = f"The download timeout {timeout!r}"
    if not timeout > 0:
        raise InputError(f"{what}: expected a number of seconds above 0.")
    return float(timeout)


def offline(hf=False):
    """Whether only the caches may be read: `ALBERT_TF_OFFLINE` (and, for `hf:` names, `HF_HUB_OFFLINE`)."""
    switches = [OFFLINE_ENV] + (["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"] if hf else [])
    return any(os.environ.get(s, "").strip().lower() in _TRUE for s in switches)


def is_name(path):
    """Whether `path` is a name to fetch (`hf:`, `kaggle:`, `http(s)://` or a release name that is not a local
    path)."""
    if not isinstance(path, str):
        return False
    if path.startswith(("hf:", "kaggle:", "http://", "https://")):
        return True
    return path in names.RELEASES and not os.path.exists(os.path.expanduser(path))


def local_path(path):
    """The local path of `path`: fetched into the cache when it is a name, else `path` with `~` expanded.

    A string shaped like a release name (`albert_...`, no directory) that is neither a local path nor a known
    name is an `InputError` listing the known names.
    """
    if is_name(path):
        return fetch(path)
    local = os.path.expanduser(path)
    if isinstance(path, str) and _NAME_LIKE.match(path) and not os.path.exists(local) \
            and not os.path.exists(local + ".index"):
        raise InputError(f"`{path}` is neither a local path nor a known model name. Known names: "
                         f"{', '.join(names.RELEASES)}; or `hf:<org>/<repo>[@revision]`, "
                         "`kaggle:<owner>/<model>/<framework>/<variation>[/<version>]`, `https://...`.")
    return local


def fetch(name, force=False, timeout=None):
    """Fetches `name` into its cache (or finds it there, checked) and returns the local path to read.

    Args:
        name: str, a release name, `hf:...`, `kaggle:...` or `http(s)://...` (module docstring).
        force: bool, download again even when the cache holds it (`albert-download --force`).
        timeout: float or None, seconds to connect and to wait for the next bytes of a release or URL download
            (None: `ALBERT_TF_DOWNLOAD_TIMEOUT`, else 60).

    Returns:
        str, a directory (an extracted archive, a Hugging Face snapshot, a Kaggle model version) or a file.

    Raises:
        InputError: an unknown name, no network, an HTTP error, a timeout, a checksum mismatch, or (offline)
            a name that is not in the cache.
        MissingPackageError: the client that the name needs is not installed.
    """
    if name.startswith("hf:"):
        return _fetch_hf(name[len("hf:"):], force)
    if name.startswith("kaggle:"):
        return _fetch_kaggle(name[len("kaggle:"):], force)
    if name.startswith(("http://", "https://")):
        url, _, fragment = name.partition("#")
        sha256 = None
        if fragment:
            key, _, value = fragment.partition("=")
            if key != "sha256" or not _SHA256.match(value.lower()):
                raise InputError(f"`{name}`: the only URL fragment understood is `#sha256=<64 hex digits>`.")
            sha256 = value.lower()
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
        return fetch_url(url, key=f"url-{digest}", label=name, sha256=sha256, force=force, timeout=timeout)
    release = names.RELEASES.get(name)
    if release is None:
        raise InputError(f"Unknown model name `{name}`. Known names: {', '.join(names.RELEASES)}.")
    return fetch_url(release.url, key=release.name, label=release.name, sha256=release.sha256,
                     size=release.size, force=force, timeout=timeout)


def _require(module, what):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingPackageError(f"{what} needs the `{module}` package: {EXTRA} (release names and http(s) URLs "
                                  "need no extra)") from None


@contextlib.contextmanager
def file_lock(path):
    """An exclusive OS lock on the file `path` (created if missing), held for the `with` block: `fcntl.flock`
    on POSIX, `msvcrt.locking` on Windows. The OS releases it when the process dies, so no stale lock remains."""
    with open(path, "a+b") as f:
        if sys.platform == "win32":
            import msvcrt  # pylint: disable=import-outside-toplevel,import-error
            f.seek(0)
            while True:
                try:
                    msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:   # LK_LOCK gives up after 10 s: keep waiting.
                    continue
            try:
                yield
            finally:
                f.seek(0)
                msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl  # pylint: disable=import-outside-toplevel
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# --- release tarballs and URLs ----------------------------------------------------------------------------------

def _read_marker(entry):
    try:
        with open(os.path.join(entry, MARKER)) as f:
            marker = json.load(f)
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and marker.get("path") else None


def _file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest(entry, relative):
    """`{path relative to entry: [size, SHA-256]}` of every file of the download at `entry/relative`."""
    root = os.path.join(entry, relative)
    paths = [root] if os.path.isfile(root) else [
        os.path.join(directory, name) for directory, _, files in os.walk(root) for name in files]
    return {os.path.relpath(path, entry): [os.path.getsize(path), _file_sha256(path)] for path in sorted(paths)}


def damaged_entry_error(label, path, what):
    """The one-line `InputError` for a damaged cache entry: the file, what is wrong and the command that fixes it."""
    return InputError(f"The cached download of `{label}` is damaged: `{path}` {what}. Run `albert-download --force "
                      f"{label}` to download it again.")


def _check_entry(entry, marker, label):
    """Checks every file of a cache entry against the sizes and SHA-256 recorded when it was downloaded."""
    files = marker.get("files")
    if not isinstance(files, dict):
        logging.warning("`%s`: the cache entry `%s` has no record of its files (an older albert_tf wrote it), so it "
                        "cannot be checked; `albert-download --force %s` downloads it again with one.", label,
                        entry, label)
        return
    for relative, (size, sha256) in sorted(files.items()):
        path = os.path.join(entry, relative)
        if not os.path.isfile(path):
            raise damaged_entry_error(label, path, "is missing")
        actual = os.path.getsize(path)
        if actual != size:
            raise damaged_entry_error(label, path, f"has {actual} bytes, {size} when it was downloaded")
        if _file_sha256(path) != sha256:
            raise damaged_entry_error(label, path, "has other bytes than when it was downloaded (its SHA-256 "
                                                   "differs)")


def _cached(entry, sha256, label):
    """The path of a complete, undamaged cache entry; None when there is none (or another download's)."""
    marker = _read_marker(entry)
    if marker is None or (sha256 and marker.get("sha256") != sha256):
        return None
    path = os.path.join(entry, marker["path"])
    if not os.path.exists(path):
        raise damaged_entry_error(label, path, "is missing")
    _check_entry(entry, marker, label)
    return path


def fetch_url(url, key, label, sha256=None, size=None, force=False, timeout=None):
    """Downloads `url` into `<cache>/downloads/<key>/` (resumed, locked, checked, extracted) or finds it there.

    A cached entry is checked on every use against the size and SHA-256 of each of its files, recorded in its
    `complete.json` when it was downloaded; a damaged one is an `InputError` naming the file and
    `albert-download --force <label>`.

    Args:
        url: str, http(s) URL of an archive or a file.
        key: str, the cache entry's name.
        label: str, what the user asked for (in messages).
        sha256: str or None, the expected SHA-256 (hex).
        size: int or None, the expected size in bytes.
        force: bool, remove the cache entry and download it again.
        timeout: float or None, the stall timeout in seconds (`download_timeout`).

    Returns:
        str, the extracted archive's directory (its one top-level folder when it has one) or the file.
    """
    entry = os.path.join(cache_dir(), "downloads", key)
    found = None if force else _cached(entry, sha256, label)
    if found:
        return found
    if offline():
        raise InputError(f"`{label}` is not in the cache (`{entry}`) and {OFFLINE_ENV}=1 forbids downloading "
                         f"{url}. Run `albert-download {label}` where there is network and copy `{entry}`.")
    timeout = download_timeout(timeout)
    os.makedirs(entry, exist_ok=True)
    with file_lock(entry + ".lock"):
        if force:
            _clear_entry(entry)
        found = _cached(entry, sha256, label)   # Another process may have finished it while this one waited.
        if found:
            return found
        filename = os.path.basename(urllib.parse.urlparse(url).path) or "download"
        part = os.path.join(entry, filename + ".part")
        content_type = _download(url, part, label, timeout)
        actual = _verify(part, url, label, sha256, size, content_type)
        relative = _unpack(part, filename, entry, label, content_type)
        marker = {"url": url, "sha256": actual, "size": size, "path": relative,
                  "files": _manifest(entry, relative)}
        with open(os.path.join(entry, MARKER + ".tmp"), "w") as f:
            json.dump(marker, f)
        os.replace(os.path.join(entry, MARKER + ".tmp"), os.path.join(entry, MARKER))
    return os.path.join(entry, relative)


def _clear_entry(entry):
    """Removes what a cache entry holds (the marker first, so no reader takes a half-removed entry)."""
    marker = os.path.join(entry, MARKER)
    if os.path.exists(marker):
        os.remove(marker)
    for name in os.listdir(entry):
        path = os.path.join(entry, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def _size_text(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


class _Progress:
    """A one-line progress bar on stderr (size, percentage, speed, ETA), redrawn at most twice a second."""

    def __init__(self, total, initial, label):
        self.total, self.done, self.label = total, initial, label
        self.start, self.start_bytes, self.drawn = time.monotonic(), initial, 0.0

    def update(self, n):
        self.done += n
        if time.monotonic() - self.drawn >= 0.5:
            self.draw()

    def draw(self, end=""):
        now = time.monotonic()
        self.drawn = now
        speed = (self.done - self.start_bytes) / max(now - self.start, 1e-6)
        line = f"{self.label}: {_size_text(self.done)}"
        if self.total:
            line = (f"{self.label}: {100 * self.done // self.total:3d}% {_size_text(self.done)}/"
                    f"{_size_text(self.total)}")
        line += f", {_size_text(speed)}/s"
        if self.total and speed > 0 and self.done < self.total:
            line += f", ETA {int((self.total - self.done) / speed)} s"
        sys.stderr.write("\r" + line.ljust(79) + end)
        sys.stderr.flush()


@contextlib.contextmanager
def _progress(total, initial, label):
    """Yields `advance(n)`; draws a progress bar for downloads of `PROGRESS_MIN_BYTES` or more (or unknown size)."""
    if total is not None and total < PROGRESS_MIN_BYTES:
        yield lambda n: None
        return
    bar = _Progress(total, initial, label)
    bar.draw()
    try:
        yield bar.update
    finally:
        bar.draw(end="\n")


class _Cut(Exception):
    """The server closed the connection before the whole body arrived."""


def _open(url, have, timeout, label):
    """The response to a GET of `url` from byte `have` on; None when the server says `part` is already whole."""
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        return urllib.request.urlopen(request, timeout=timeout)  # nosec B310: http(s) only (`fetch`)
    except urllib.error.HTTPError as e:
        e.close()
        if e.code == 416 and have:
            return None   # `part` already holds the whole file.
        raise InputError(f"Cannot download `{label}`: {url} answered {e.code} {e.reason}.") from None


def _download(url, part, label, timeout):
    """Downloads `url` to `part`, resuming what `part` already holds (HTTP `Range`); retries a cut or stalled
    transfer `RETRIES` times, each resuming where the last stopped. Returns the last response's `Content-Type`
    (None when there is none)."""
    retryable = (OSError, http.client.HTTPException, _Cut)   # URLError, timeouts and resets are OSErrors.
    attempt = 0
    while True:
        have = os.path.getsize(part) if os.path.isfile(part) else 0
        started = False
        try:
            response = _open(url, have, timeout, label)
            if response is None:
                return None
            started = True
            content_type = response.headers.get("Content-Type")
            with response:
                if have and response.status != 206:
                    have = 0   # The server ignored `Range`: start over.
                length = response.headers.get("Content-Length")
                total = have + int(length) if length and length.isdigit() else None
                # `read1` hands over what has arrived, so the bytes before a cut reach `part` and are kept.
                with open(part, "ab" if have else "wb") as f, _progress(total, have, label) as advance:
                    for chunk in iter(lambda: response.read1(CHUNK), b""):
                        f.write(chunk)
                        advance(len(chunk))
            if total is not None and os.path.getsize(part) < total:
                raise _Cut(f"connection closed after {os.path.getsize(part)} of {total} bytes")
            return content_type
        except retryable as e:
            if not started or attempt >= RETRIES:
                kept = (f" The {os.path.getsize(part)} bytes received stay in `{part}`; the next try resumes there."
                        if os.path.isfile(part) and os.path.getsize(part) else "")
                timed_out = isinstance(e, TimeoutError) or isinstance(getattr(e, "reason", None), TimeoutError) \
                    or "timed out" in str(e)
                reason = (f"timed out after {timeout:g} s ({TIMEOUT_ENV})" if timed_out
                          else "cannot connect" if not started else "connection cut")
                raise InputError(f"Cannot download `{label}` from {url}: {reason} ({_first_line(e)}).{kept}") \
                    from None
            attempt += 1
            logging.warning("Download of `%s` from %s %s after %d bytes; resuming (%d/%d).", label, url,
                            "stalled" if isinstance(e, TimeoutError) else "cut",
                            os.path.getsize(part) if os.path.isfile(part) else 0, attempt, RETRIES)
            time.sleep(0.2 * attempt)


def _first_line(error):
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__


def _arrived(part, content_type):
    """What a download brought, for a message: its content type and first bytes (an HTML page of a proxy, a
    login or an error, where an archive was expected, shows as such)."""
    with open(part, "rb") as f:
        head = f.read(_SHOWN_BYTES)
    return f"what arrived: {content_type or 'no content type'}, beginning {head!r}"


def _verify(part, url, label, sha256, size, content_type=None):
    """The SHA-256 of `part`; a size or checksum other than the expected one removes `part` and raises."""
    actual_size = os.path.getsize(part)
    if size is not None and actual_size != size:
        arrived = _arrived(part, content_type)
        os.remove(part)
        raise InputError(f"Download of `{label}` from {url} has {actual_size} bytes, expected {size} ({arrived}); "
                         f"removed `{part}`.")
    actual = _file_sha256(part)
    if sha256 and actual != sha256:
        arrived = _arrived(part, content_type)
        os.remove(part)
        raise InputError(f"Checksum mismatch for `{label}` from {url}: SHA-256 {actual}, expected {sha256} "
                         f"({arrived}); removed `{part}`.")
    if not sha256:
        logging.info("`%s`: no published SHA-256 to check; the download's is %s.", label, actual)
    return actual


def _archive_root(directory):
    entries = [e for e in os.listdir(directory) if not e.startswith(".")]
    if len(entries) == 1 and os.path.isdir(os.path.join(directory, entries[0])):
        return entries[0]   # A release tarball: one top-level folder.
    return ""


def _unpack(part, filename, entry, label, content_type=None):
    """Moves the download into place: an archive extracted (safely) into `entry/extracted`, else the file.
    Returns the path relative to `entry`."""
    is_tar = filename.endswith(_ARCHIVES[:-1]) or (not filename.endswith(".zip") and tarfile.is_tarfile(part))
    is_zip = not is_tar and zipfile.is_zipfile(part)
    if not (is_tar or is_zip):
        os.replace(part, os.path.join(entry, filename))
        return filename
    tmp = os.path.join(entry, f"extracting-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        if is_tar:
            with tarfile.open(part, "r:*") as archive:
                archive.extractall(tmp, filter="data")   # No absolute paths, no `..`, no links leaving `tmp`.
        else:
            with zipfile.ZipFile(part) as archive:
                for member in archive.namelist():
                    target = os.path.realpath(os.path.join(tmp, member))
                    if not target.startswith(os.path.realpath(tmp) + os.sep):
                        raise InputError(f"Archive `{label}` holds `{member}`, a path outside its directory.")
                archive.extractall(tmp)
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as e:
        shutil.rmtree(tmp, ignore_errors=True)
        arrived = _arrived(part, content_type)
        os.remove(part)
        raise InputError(f"Cannot extract the download of `{label}`: {_first_line(e)} ({arrived}); removed "
                         f"`{part}`.") from None
    except InputError:
        shutil.rmtree(tmp, ignore_errors=True)
        os.remove(part)
        raise
    final = os.path.join(entry, "extracted")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    os.remove(part)
    root = _archive_root(final)
    return os.path.join("extracted", root) if root else "extracted"


# --- Hugging Face -----------------------------------------------------------------------------------------------

def _transport_errors():
    errors = [OSError]
    for module in ("httpx2", "httpx", "requests"):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        for attr in ("HTTPError", "RequestException", "TransportError"):
            if isinstance(getattr(mod, attr, None), type):
                errors.append(getattr(mod, attr))
    return tuple(errors)


def _fetch_hf(spec, force=False):
    label = "hf:" + spec
    repo, at, revision = spec.partition("@")
    if repo.count("/") != 1 or not all(repo.split("/")) or (at and not revision):
        raise InputError(f"`{label}` is not a Hugging Face name: expected `hf:<org>/<repo>[@revision]`.")
    hfh = _require("huggingface_hub", f"`{label}`")
    hf_errors = importlib.import_module("huggingface_hub.errors")
    revision = revision or None
    endpoint = (os.environ.get("HF_ENDPOINT", "").strip().rstrip("/") or None)
    local_only = offline(hf=True)
    missing = []

    def url(filename):
        return hfh.hf_hub_url(repo, filename, revision=revision, endpoint=endpoint)

    def get(filename, required):
        try:
            return hfh.hf_hub_download(repo, filename, revision=revision, endpoint=endpoint,
                                       local_files_only=local_only, force_download=force and not local_only)
        except hf_errors.RemoteEntryNotFoundError:
            if required:
                raise InputError(f"`{label}` has no `{filename}` ({url(filename)} answered 404).") from None
            return None
        except hf_errors.LocalEntryNotFoundError as e:
            if local_only:
                missing.append(filename)
                return None
            cause = e.__cause__ or e.__context__
            raise InputError(f"Cannot fetch `{label}`: {url(filename)} cannot be reached and `{filename}` is not "
                             f"in the Hugging Face cache ({_first_line(cause or e)}).") from None
        except hf_errors.GatedRepoError:
            raise InputError(f"`{label}` is gated: accept its conditions on the Hub and set `HF_TOKEN` (or run "
                             f"`hf auth login`) ({url(filename)}).") from None
        except hf_errors.RepositoryNotFoundError:
            raise InputError(f"`{label}`: repository not found at {url(filename)} (private repositories need "
                             "`HF_TOKEN` or `hf auth login`).") from None
        except hf_errors.RevisionNotFoundError:
            raise InputError(f"`{label}`: revision `{revision}` not found ({url(filename)}).") from None
        except hf_errors.HfHubHTTPError as e:
            status = getattr(getattr(e, "response", None), "status_code", "an error")
            raise InputError(f"Cannot fetch `{label}`: {url(filename)} answered {status}.") from None
        except _transport_errors() as e:
            raise InputError(f"Cannot fetch `{label}` ({url(filename)}): {_first_line(e)}.") from None

    config = get("config.json", required=True)
    if config:
        _hf_weights(get, missing, label, url)
    spm = get("spiece.model", required=False) if config else None
    if spm is None and "spiece.model" in missing:
        missing.remove("spiece.model")   # Optional: the caller may pass its own SentencePiece model.
        logging.warning("`%s`: `spiece.model` is not in the Hugging Face cache.", label)
    if missing:
        cache = importlib.import_module("huggingface_hub.constants").HF_HUB_CACHE
        raise InputError(f"`{label}` is not in the Hugging Face cache (`{cache}`): missing "
                         f"{', '.join(f'`{m}`' for m in missing)}, and offline mode ({OFFLINE_ENV} or "
                         f"HF_HUB_OFFLINE) forbids fetching {url(missing[0])}.")
    return os.path.dirname(config)


def _hf_weights(get, missing, label, url):
    """Fetches a Hugging Face repository's weights with `_fetch_hf`'s `get`: `model.safetensors`, else the shards
    of `model.safetensors.index.json`, else transformers 4.x's TensorFlow `tf_model.h5` (a repository without
    safetensors); never `pytorch_model.bin`. Offline, with none of them cached, `missing` names `model.safetensors`
    only (the usual one; either would do)."""
    if get("model.safetensors", required=False) is not None:
        return
    index = get("model.safetensors.index.json", required=False)
    if index is not None:
        if "model.safetensors" in missing:
            missing.remove("model.safetensors")   # A sharded repository: the index stands in for it.
        try:
            with open(index) as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            raise InputError(f"`{label}`: `model.safetensors.index.json` has no `weight_map`.") from None
        for shard in shards:
            if os.path.basename(shard) != shard or not shard.endswith(".safetensors"):
                raise InputError(f"`{label}`: the index names `{shard}`, not a safetensors file beside it.")
            get(shard, required=True)
        return
    if get(HF_TF_WEIGHTS, required=False) is not None:
        for name in ("model.safetensors", "model.safetensors.index.json"):
            if name in missing:
                missing.remove(name)   # Cached offline: the TensorFlow file stands in for the safetensors.
        return
    if not missing:
        raise InputError(f"`{label}` has neither `model.safetensors`, `model.safetensors.index.json` nor "
                         f"`{HF_TF_WEIGHTS}` ({url('model.safetensors')}); `pytorch_model.bin` is never downloaded "
                         "(a pickle can run code): use a revision with safetensors.")
    for name in ("model.safetensors.index.json", HF_TF_WEIGHTS):
        if name in missing:
            missing.remove(name)   # Any weights file would do; name the usual one.


# --- Kaggle -----------------------------------------------------------------------------------------------------

def _kaggle_cached(parts):
    """The newest completed version of the model in kagglehub's cache (or the asked-for one), or None."""
    owner, model, framework, variation = parts[:4]
    base = os.path.join(importlib.import_module("kagglehub.config").get_cache_folder(), "models", owner, model,
                        framework, variation)
    versions = [int(parts[4])] if len(parts) == 5 else sorted(
        (int(e[:-len(".complete")]) for e in (os.listdir(base) if os.path.isdir(base) else [])
         if e.endswith(".complete") and e[:-len(".complete")].isdigit()), reverse=True)
    for version in versions:
        path = os.path.join(base, str(version))
        if os.path.isfile(path + ".complete") and os.path.isdir(path):
            return path
    return None


def _fetch_kaggle(spec, force=False):
    label = "kaggle:" + spec
    parts = spec.split("/")
    if len(parts) not in (4, 5) or not all(parts) or (len(parts) == 5 and not parts[4].isdigit()):
        raise InputError(f"`{label}` is not a Kaggle model name: expected "
                         "`kaggle:<owner>/<model>/<framework>/<variation>[/<version>]`.")
    kagglehub = _require("kagglehub", f"`{label}`")
    url = "https://www.kaggle.com/models/" + spec
    if offline():
        found = _kaggle_cached(parts)
        if found:
            return found
        raise InputError(f"`{label}` is not in the kagglehub cache (`{kagglehub.config.get_cache_folder()}`) and "
                         f"{OFFLINE_ENV}=1 forbids fetching {url}.")
    requests = _require("requests", f"`{label}`")
    locks = os.path.join(cache_dir(), "locks")
    os.makedirs(locks, exist_ok=True)
    with file_lock(os.path.join(locks, "kaggle-" + "+".join(parts) + ".lock")):
        try:
            return kagglehub.model_download(spec, force_download=force)
        except (requests.ConnectionError, requests.Timeout) as e:
            found = _kaggle_cached(parts)
            if found:
                logging.warning("Cannot reach Kaggle for `%s` (%s); using the cached copy `%s`.", label,
                                _first_line(e), found)
                return found
            raise InputError(f"Cannot fetch `{label}` ({url}): {_first_line(e)}.") from None
        except requests.HTTPError as e:
            status = getattr(getattr(e, "response", None), "status_code", None)
            what = "not found" if status == 404 else f"answered {status}" if status else _first_line(e)
            hint = " (private or consent-gated models need Kaggle credentials)" if status in (401, 403) else ""
            raise InputError(f"Cannot fetch `{label}`: {url} {what}{hint}.") from None
        except (ValueError, OSError) as e:   # A bad handle, kagglehub's DataCorruptionError, a full disk.
            raise InputError(f"Cannot fetch `{label}` ({url}): {_first_line(e)}.") from None
