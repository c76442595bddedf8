"""`albert-download`: fetches ALBERT weights by name into the cache (`albert_tf.checkpoints.download`)."""

import dataclasses
import os
from typing import Optional

from albert_tf import options as options_lib
from albert_tf.checkpoints import releases as names
from albert_tf.checkpoints.download import CACHE_ENV, DEFAULT_TIMEOUT, OFFLINE_ENV, TIMEOUT_ENV, fetch, is_name
from albert_tf.errors import InputError
from albert_tf.options import option

CLI_HELP = f"""Downloads ALBERT weights by name into the cache and prints the local path of each, for machines
that train offline later (then set {OFFLINE_ENV}=1 and pass the same name, or the printed path).

Usage: albert-download [--force] [--timeout=SECONDS] NAME [NAME ...]. A name already in the cache is checked
against the size and SHA-256 of each file recorded when it was downloaded; --force downloads it again.
Names: {', '.join(names.RELEASES)} (Google's tarballs, into
{CACHE_ENV}, default ~/.cache/albert_tf); hf:<org>/<repo>[@revision] (into the Hugging Face cache, HF_HOME);
kaggle:<owner>/<model>/<framework>/<variation>[/<version>] (into the kagglehub cache, KAGGLEHUB_CACHE);
https://... (an archive or a file; #sha256=<hex> pins its checksum)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class DownloadOptions:
    """`albert-download`'s option (the names to fetch are its arguments)."""

    force: bool = option(False, "Download again even when the cache holds the name (a damaged entry).")
    timeout: Optional[float] = option(None, f"Seconds to connect and to wait for the next bytes of a release or "
                                      f"URL download; a stalled download is resumed a few times, then refused. "
                                      f"Unset: {TIMEOUT_ENV}, else {DEFAULT_TIMEOUT:g}.")


def download(run, args):
    """Fetches each name of `args` (`fetch`, `run.force`, `run.timeout`) and prints its local path."""
    if not args:
        raise InputError("Give at least one name, e.g. `albert-download albert_base_v2`.")
    for name in args:
        if not is_name(name):
            what = ("is a local path, not a name" if os.path.exists(os.path.expanduser(name))
                    else "is an unknown name")
            raise InputError(f"Unknown model name `{name}`: it {what}. Known names: {', '.join(names.RELEASES)}; "
                             "or hf:<org>/<repo>[@revision], kaggle:<owner>/<model>/<framework>/<variation>"
                             "[/<version>], https://...")
        print(fetch(name, force=run.force, timeout=run.timeout), flush=True)


COMMAND = options_lib.Command(name="albert-download", help_text=CLI_HELP, options=(DownloadOptions,), call=download,
                              extra_args=True)
