"""Load KoED files into immutable, typed dialogues, ko and en side by side.

The official file has quirks (see ``shared/data/README.md``): labels as a string or a
list, repeated labels, turns that exist only in Korean, ``user_id`` of four types,
``utter_idx`` out of order and EmpatheticDialogues' ``_comma_`` encoding. They load, and
each oddity is recorded as a :class:`LoadWarning` the UI can show. Real damage (not JSON,
missing fields, unknown labels, turns with no text) raises :class:`DatasetError` naming
the file, the record and the field.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from koed_core.dialogues.dialogue import Dialogue, LoadWarning
from koed_core.dialogues.records import parse_record
from koed_core.errors import DatasetError, Problem
from koed_core.i18n import N_


@dataclass(frozen=True)
class DatasetStats:
    """The figures ``koed data check`` prints and the explorer shows."""

    dialogues: int
    labels: int
    label_sets: int
    turns: int
    ko_only_turns: int
    en_only_turns: int
    korean_emotion_dialogues: int
    warnings: dict[str, int]


@dataclass(frozen=True)
class Dataset:
    """All dialogues of one file, with where they came from and what was odd in them."""

    dialogues: tuple[Dialogue, ...]
    path: str
    sha256: str
    warnings: tuple[LoadWarning, ...] = field(default=())

    def __len__(self) -> int:
        return len(self.dialogues)

    @cached_property
    def _by_id(self) -> dict[str, Dialogue]:
        return {d.conv_id: d for d in self.dialogues}

    def get(self, conv_id: str) -> Dialogue | None:
        """The dialogue with this conv_id, or None."""
        return self._by_id.get(conv_id)

    def stats(self) -> DatasetStats:
        """Counts over the whole file (computed once: every page's banner asks)."""
        return self._stats

    @cached_property
    def _stats(self) -> DatasetStats:
        turns = [t for d in self.dialogues for t in d.turns]
        return DatasetStats(
            dialogues=len(self.dialogues),
            labels=len({label for d in self.dialogues for label in d.labels}),
            label_sets=len({d.label_set for d in self.dialogues}),
            turns=len(turns),
            ko_only_turns=sum(t.ko_only for t in turns),
            en_only_turns=sum(t.en_only for t in turns),
            korean_emotion_dialogues=sum(d.korean_emotion for d in self.dialogues),
            warnings=dict(sorted(Counter(w.kind for w in self.warnings).items())),
        )


def load_dataset(path: Path | str) -> Dataset:
    """Read and validate a KoED JSON file.

    Raises:
        DatasetError: the file is missing, empty, not JSON, truncated, not an array of
            records, or has records with missing fields, unknown labels or empty turns.
            Every problem found is listed, not only the first.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(path, [Problem("(file)", N_("no such file"))]) from None
    except OSError as err:
        raise DatasetError(
            path,
            [
                Problem(
                    "(file)", N_("cannot read it ({reason})"), values=(("reason", err.strerror),)
                )
            ],
        ) from err
    return parse_dataset(data, path)


def parse_dataset(data: bytes, path: Path | str = "<memory>") -> Dataset:
    """Validate the bytes of a KoED file; ``path`` is only used in messages."""
    raw = _decode_json(data, path)
    if not isinstance(raw, list):
        found = type(raw).__name__ if not isinstance(raw, dict) else "an object"
        raise DatasetError(
            path,
            [
                Problem(
                    "(top level)",
                    N_("expected a JSON array of records, found {found}"),
                    values=(("found", found),),
                )
            ],
        )
    if not raw:
        raise DatasetError(path, [Problem("(top level)", N_("the array holds no records"))])
    dialogues: list[Dialogue] = []
    problems: list[Problem] = []
    warnings: list[LoadWarning] = []
    seen: dict[str, int] = {}
    for index, record in enumerate(raw):
        parsed = parse_record(index, record)
        problems += parsed.problems
        warnings += parsed.warnings
        if parsed.dialogue is None:
            continue
        first = seen.setdefault(parsed.dialogue.conv_id, index)
        if first != index:
            problems.append(
                Problem(
                    "conv_id",
                    N_("repeats the conv_id of record {first}"),
                    index,
                    parsed.dialogue.conv_id,
                    values=(("first", first),),
                )
            )
            continue
        dialogues.append(parsed.dialogue)
    if problems:
        raise DatasetError(path, problems)
    return Dataset(
        dialogues=tuple(dialogues),
        path=str(path),
        sha256=hashlib.sha256(data).hexdigest(),
        warnings=tuple(warnings),
    )


def _decode_json(data: bytes, path: Path | str) -> Any:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DatasetError(
            path,
            [
                Problem(
                    "(file)",
                    N_("not UTF-8 text (bad byte at offset {offset})"),
                    values=(("offset", err.start),),
                )
            ],
        ) from None
    if not text.strip():
        raise DatasetError(path, [Problem("(file)", N_("the file is empty"))])
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        body = text.strip()
        closers = {"[": "]", "{": "}"}
        unclosed = body[0] in closers and not body.endswith(closers[body[0]])
        if err.pos >= len(body) or (unclosed and err.msg.startswith("Unterminated string")):
            message = N_(
                "truncated: the JSON stops before it is complete "
                "({reason} at line {line}, column {column})"
            )
        else:
            message = N_("not valid JSON: {reason} at line {line}, column {column}")
        values = (("reason", err.msg), ("line", err.lineno), ("column", err.colno))
        raise DatasetError(path, [Problem("(file)", message, values=values)]) from None
    except RecursionError:  # json reads nested arrays by recursion: not a JSONDecodeError
        deep = N_("nested too deeply to be read (arrays or objects inside each other)")
        raise DatasetError(path, [Problem("(file)", deep)]) from None
