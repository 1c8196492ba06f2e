"""Where the dialogues come from: a user's path, the verified official file, or the sample.

The official file is never committed; it is downloaded on request, checked against the
published sha256 and cached. Without it the app runs on a sample the team wrote, and it
always says which of the three it is showing.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from koed_core.errors import DatasetError, DownloadError, Problem
from koed_core.paths import SAMPLE_FILE

SourceKind = Literal["path", "official", "sample"]
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class OfficialRelease:
    """The pinned upstream file: repository, commit, checksum and size."""

    repository: str
    commit: str
    file: str
    sha256: str
    size: int

    @property
    def url(self) -> str:
        """Raw-file address of the pinned commit."""
        return f"https://raw.githubusercontent.com/{self.repository}/{self.commit}/{self.file}"


OFFICIAL = OfficialRelease(
    repository="KUNLP/KoED",
    commit="dd0561e883b5e34fd32153c3c3528525cd8e69e5",
    file="data/KoED.json",
    sha256="aa4938164ce7c0c2bb4006d4c8f5ad65f168b3d99c718492810fffd30ef0b8b2",
    size=2_965_233,
)
OFFICIAL_FILENAME = "KoED.json"

ATTRIBUTION = (
    "KoED: Korean Empathetic Dialogues, by Lee, Sim, Kim and Kim (IJCNLP-AACL 2025), "
    "a Korean cultural reconstruction of EmpatheticDialogues (Rashkin et al., 2019). "
    "Licence: CC BY-NC 4.0, inherited from EmpatheticDialogues; non-commercial use, "
    "with attribution."
)
SAMPLE_NOTE = (
    "The built-in sample: 34 short dialogues written by the KoED Studio team in the KoED "
    "format, one per label. Not KoED itself; released with the project."
)


@dataclass(frozen=True)
class DataSource:
    """The file the app shows and how it was chosen."""

    kind: SourceKind
    path: Path

    @property
    def description(self) -> str:
        """One line for the banner above the data."""
        if self.kind == "path":
            return f"Your file: {self.path}"
        if self.kind == "official":
            return f"Official KoED (commit {OFFICIAL.commit[:7]}, sha256 verified)"
        return "Built-in sample (not KoED): download the official file to see all 1,360 dialogues"


def official_cache_path(cache_dir: Path) -> Path:
    """Where a downloaded and verified official file is kept."""
    return cache_dir / OFFICIAL.commit[:12] / OFFICIAL_FILENAME


def resolve_source(data_path: str | None, cache_dir: Path) -> DataSource:
    """Pick the source: the user's path, else the cached official file, else the sample.

    Raises:
        DatasetError: the user named a path that does not exist (never silently ignored).
    """
    if data_path:
        path = Path(data_path).expanduser()
        if not path.is_file():
            raise DatasetError(path, [Problem("(file)", "no such file (set by KOED_DATA)")])
        return DataSource("path", path)
    cached = official_cache_path(cache_dir)
    if cached.is_file() and sha256_of(cached) == OFFICIAL.sha256:
        return DataSource("official", cached)
    return DataSource("sample", SAMPLE_FILE)


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_official(
    target: Path,
    url: str = OFFICIAL.url,
    expected_sha256: str = OFFICIAL.sha256,
    progress: ProgressFn | None = None,
    timeout: float = 30.0,
) -> Path:
    """Fetch the official file to ``target`` after verifying its sha256.

    The bytes go to a temporary file first and are moved into place only once verified,
    so a failed or tampered download never replaces a good copy.

    Raises:
        DownloadError: the server could not be reached or answered with an error, or
            the bytes do not match the published sha256.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".download-")
    try:
        with os.fdopen(fd, "wb") as out:
            for block in _blocks(url, progress, timeout):
                out.write(block)
                digest.update(block)
        got = digest.hexdigest()
        if got != expected_sha256:
            raise DownloadError(
                f"{url}: checksum mismatch, expected sha256 {expected_sha256} but got {got}; "
                "the file was not kept"
            )
        os.replace(tmp_name, target)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return target


def _blocks(url: str, progress: ProgressFn | None, timeout: float) -> Iterator[bytes]:
    """Yield the body of ``url`` in blocks, turning every network failure into one error."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            total = int(response.headers.get("Content-Length") or OFFICIAL.size)
            done = 0
            while block := response.read(1 << 16):
                done += len(block)
                yield block
                if progress:
                    progress(done, total)
    except urllib.error.HTTPError as err:
        raise DownloadError(f"{url}: the server answered {err.code} {err.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise DownloadError(f"{url}: could not download ({reason})") from None
