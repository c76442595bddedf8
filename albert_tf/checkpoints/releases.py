"""The names of Google's original ALBERT releases: where each tarball is, and its SHA-256 and size where known.

The table is the download list of google-research/ALBERT's README: the English v1 and v2 models (October and
December 2019, `https://storage.googleapis.com/albert_models/albert_<size>_v<n>.tar.gz`) and the Chinese models
released on December 30, 2019 (`albert_<size>_zh.tar.gz`, trained on the CLUE corpus). Each tarball holds one
folder with `albert_config.json`, `model.ckpt-best.*` and the SentencePiece model (`30k-clean.model`; the
Chinese ones a WordPiece `vocab_chinese.txt` instead).

Google publishes no checksums for these files and none was found in any stored copy of the README or of
projects that download them, so `sha256` and `size` are `None` for every entry: a download is then checked
against the `Content-Length` the server sends, and its SHA-256 is logged and recorded beside the cached copy
(`complete.json`), never invented here. Fill in a value only from a file downloaded from Google's bucket.

The brightmart/albert_zh models (`albert_tiny_zh`, ...) are not Google's releases (another layout, zip files
on another bucket) and are not in the table; their URLs load as `https://...` names where their layout is one
the readers know.

`ALBERT_TF_RELEASES_URL` replaces `RELEASES_URL` (a mirror of the bucket, or the tests' loopback server).
"""

import dataclasses
import os

RELEASES_URL = "https://storage.googleapis.com/albert_models/"
RELEASES_URL_ENV = "ALBERT_TF_RELEASES_URL"


@dataclasses.dataclass(frozen=True)
class Release:
    """One original release tarball.

    Attributes:
        name: str, the name users pass (`albert_base_v2`).
        filename: str, the file in Google's bucket (`albert_base_v2.tar.gz`).
        sha256: str or None, the tarball's SHA-256 (hex), where known.
        size: int or None, the tarball's size in bytes, where known.
        language: str, `en` or `zh`.
    """

    name: str
    filename: str
    sha256: str = None
    size: int = None
    language: str = "en"

    @property
    def url(self):
        """The tarball's URL (under `ALBERT_TF_RELEASES_URL` when it is set)."""
        base = os.environ.get(RELEASES_URL_ENV, "").strip() or RELEASES_URL
        return base.rstrip("/") + "/" + self.filename


def _release(name, language="en"):
    return Release(name=name, filename=name + ".tar.gz", sha256=None, size=None, language=language)


_SIZES = ("base", "large", "xlarge", "xxlarge")

# name -> Release. No SHA-256 or size is published for any of them (see the module docstring).
RELEASES = {r.name: r for r in (
    [_release(f"albert_{size}_v{version}") for version in (1, 2) for size in _SIZES]
    + [_release(f"albert_{size}_zh", language="zh") for size in _SIZES])}
