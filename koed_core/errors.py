"""Exceptions that carry a message fit to show a user as it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class KoedError(Exception):
    """Base class for every failure the UI and the CLI report to a person."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one place in a dataset file."""

    field: str
    message: str
    index: int | None = None
    conv_id: str | None = None

    def __str__(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"record {self.index}")
        if self.conv_id:
            where.append(f"conv_id {self.conv_id!r}")
        where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}"


class DatasetError(KoedError):
    """A dataset file that cannot be loaded, with every problem found in it.

    The message names the file and, for each problem, the record (index and conv_id) and
    the field, so that a person can open the file and fix it.
    """

    MAX_SHOWN = 10

    def __init__(self, path: Path | str, problems: list[Problem]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.path}: cannot load the dataset"
        if len(self.problems) == 1:
            return f"{head}: {self.problems[0]}"
        lines = [f"{head}: {len(self.problems)} problems"]
        lines += [f"  - {p}" for p in self.problems[: self.MAX_SHOWN]]
        if len(self.problems) > self.MAX_SHOWN:
            lines.append(f"  ... and {len(self.problems) - self.MAX_SHOWN} more")
        return "\n".join(lines)


class DownloadError(KoedError):
    """The official file could not be fetched, or what came did not match its checksum."""
