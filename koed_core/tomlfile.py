"""Reading the project's TOML data files (prompt sets, judge templates) and a user's own.

Python's ``tomllib`` (like ``json``) reads nested arrays and tables by recursion, so a file
of 100,000 ``[`` raises ``RecursionError``, which is no ``TOMLDecodeError``: every reader
of a file someone gives goes through :func:`parse_toml`, which turns that into the same
one sentence naming the file as any other unreadable file.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

from koed_core.i18n import _

Read = TypeVar("Read")


def parse_toml(text: str, where: str, error: Callable[[str], Exception]) -> dict[str, Any]:
    """The table of TOML ``text``, or ``error`` raised with one sentence naming ``where``
    (the file): not TOML, or nested too deeply to be read."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise error(_("{where}: not valid TOML ({error})", where=where, error=err)) from None
    except RecursionError:
        raise error(
            _(
                "{where}: nested too deeply to be read (arrays or tables inside each other)",
                where=where,
            )
        ) from None


def read_toml(
    path: Path, what: str, shipped: Sequence[str], error: Callable[[str], Exception]
) -> dict[str, Any]:
    """The file's table, or ``error`` raised with one sentence naming the file and why
    (missing: the shipped names a user can give instead)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such {what} (shipped: {', '.join(shipped)})") from None
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"{path}: not readable ({err})") from None
    return parse_toml(text, str(path), error)


def content_version(content: Any) -> str:
    """A short hash of a data file's tables (with anything else its use depends on): the
    version stored with what the file's wording made, the same for the same content
    whatever the order of its keys."""
    blob = json.dumps(content, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def shipped_or_path(
    source: str | Path, folder: Path, shipped: Sequence[str], read: Callable[[Path], Read]
) -> Read:
    """A data file the project ships, by name (``folder/NAME.toml``, read once a
    process), or a person's own file by path, each read by ``read`` (which checks it):
    how prompt sets, judge templates, the Speaker's and the translator's prompts load."""
    if isinstance(source, str) and source in shipped:
        return cast(Read, _read_once(folder / f"{source}.toml", read))
    return read(Path(source))


@cache
def _read_once(path: Path, read: Callable[[Path], object]) -> object:
    return read(path)
