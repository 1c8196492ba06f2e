"""The one rule for "attention check passed" (crowd stop, dashboard, rater report), and
what the shipped attention file says a check asks for."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from koed_core.paths import DATA_DIR

ATTENTION_FILE = DATA_DIR / "attention.json"
HANGUL = re.compile(r"[\uac00-\ud7a3]")


def instruction_in(instruction: str, lang: str) -> str:
    """An attention check's instruction in the reader's language. A check stores it in both
    languages, ``"<Korean> / <English>"`` (``studies.attention_instruction``, so that the
    stored item says what was asked whoever reads it later), which put an English sentence
    on a Korean reader's screen; a text of another shape is shown as it is."""
    korean, sep, english = instruction.partition(" / ")
    if not sep or not HANGUL.search(korean) or HANGUL.search(english):
        return instruction
    return korean if lang == "ko" else english


def instructed_score() -> int:
    """The score every attention check asked for in studies built before the scores
    varied (a check stored without its own score)."""
    return int(json.loads(ATTENTION_FILE.read_text(encoding="utf-8"))["instructed_score"])


def check_verdicts(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[bool, bool]]:
    """The one rule for "attention check passed", used by the crowd's stop and suggestion,
    the dashboard and the rater report alike. Per check item: (told, passed). A told check
    (it showed what to choose) is passed when every dimension has the score it asked for;
    an untold one, from an older study, when no dimension is above what a careful rater
    gives such a reply. ``rows`` are one score each: item_id, dimension, score,
    instruction, instructed_score."""
    limits = attention_limits()
    verdicts: dict[str, tuple[bool, bool]] = {}
    for row in rows:
        told = bool(row.get("instruction")) and not _missing(row.get("instruction"))
        if told:
            asked = row.get("instructed_score")
            wanted = instructed_score() if asked is None or _missing(asked) else int(asked)
            ok = int(row["score"]) == wanted
        else:
            ok = int(row["score"]) <= limits.get(str(row["dimension"]), 5)
        _told, before = verdicts.get(str(row["item_id"]), (told, True))
        verdicts[str(row["item_id"])] = (told, before and ok)
    return verdicts


def _missing(value: Any) -> bool:
    """None, or the NaN a pandas frame holds for an empty cell (NaN is truthy)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def attention_limits() -> dict[str, int]:
    """The highest score a careful rater gives an attention check, per dimension."""
    return dict(json.loads(ATTENTION_FILE.read_text(encoding="utf-8"))["max_score"])
