"""Text a person reads that lives in a shipped TOML file, for the translation catalog.

The model registry (``models.toml``) carries a note per model that the model pickers show
under the chosen model. Those notes are data, written once in English, but a Korean page
must show them in Korean: Babel's extraction reads them from the file through
:func:`extract_notes` (babel.cfg names it), so they land in the catalog like every string
of the code, and a picker shows ``_(spec.notes)``. A note someone adds to their own
registry has no entry and is shown as written.
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection, Iterator, Mapping
from typing import IO, Any

FIELD = "notes"
"""The key whose values are read."""


def notes_of(text: str) -> Iterator[tuple[int, str]]:
    """(line, note) of every ``[models.NAME]`` entry's note in a registry's text, in the
    file's order (the line is the one the value starts on, for the translator's hint)."""
    entries: Mapping[str, Any] = tomllib.loads(text).get("models", {})
    lines = text.splitlines()
    at = 0
    for entry in entries.values():
        note = entry.get(FIELD) if isinstance(entry, Mapping) else None
        if not isinstance(note, str) or not note:
            continue
        line = next(
            (i for i in range(at, len(lines)) if lines[i].lstrip().startswith(f"{FIELD} ")),
            at,
        )
        at = line + 1
        yield line + 1, note


def extract_notes(
    fileobj: IO[bytes],
    keywords: Collection[str],
    comment_tags: Collection[str],
    options: Mapping[str, Any],
) -> Iterator[tuple[int, str, str, list[str]]]:
    """Babel's extraction method for a model registry: each model's note, as if the code
    said ``_(note)`` on its line."""
    del keywords, comment_tags, options  # a TOML file has neither
    for line, note in notes_of(fileobj.read().decode("utf-8")):
        yield line, "_", note, []
