"""Exceptions that carry a message fit to show a user as it is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from koed_core.i18n import _, ngettext


class KoedError(Exception):
    """Base class for every failure the UI and the CLI report to a person."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one place in a dataset file.

    ``message`` is the English template (marked for the catalog where it is written) and
    ``values`` fill its placeholders; :attr:`text` reads it in the language being spoken
    when it is shown, so a dataset loaded once per server tells each reader in their own.
    """

    field: str
    message: str
    index: int | None = None
    conv_id: str | None = None
    values: tuple[tuple[str, object], ...] = ()

    @property
    def text(self) -> str:
        """The message in the language being spoken, its values filled in."""
        return _(self.message, **dict(self.values))

    def __str__(self) -> str:
        where = []
        if self.index is not None:
            where.append(_("record {index}", index=self.index))
        if self.conv_id:
            where.append(f"conv_id {self.conv_id!r}")
        where.append(_("field {name}", name=repr(self.field)))
        return f"{', '.join(where)}: {self.text}"


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

    def __str__(self) -> str:
        return self._render()  # read when shown: in the reader's language, not the loader's

    def _render(self) -> str:
        head = _("{path}: cannot load the dataset", path=self.path)
        if len(self.problems) == 1:
            return f"{head}: {self.problems[0]}"
        count = ngettext("{n} problem", "{n} problems", len(self.problems))
        lines = [f"{head}: {count}"]
        lines += [f"  - {p}" for p in self.problems[: self.MAX_SHOWN]]
        if len(self.problems) > self.MAX_SHOWN:
            more = len(self.problems) - self.MAX_SHOWN
            lines.append("  " + ngettext("... and {n} more", "... and {n} more", more))
        return "\n".join(lines)


class DownloadError(KoedError):
    """The official file could not be fetched, or what came did not match its checksum."""
