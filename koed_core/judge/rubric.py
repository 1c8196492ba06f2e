"""The five rubric dimensions as data, with every score anchor in Korean and English."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache

from koed_core.dialogues.dialogue import Lang
from koed_core.paths import DATA_DIR

RUBRIC_FILE = DATA_DIR / "rubric.json"
SCALE = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Dimension:
    """One rubric dimension: code, names, the question and an anchor per score."""

    code: str
    en: str
    ko: str
    question_en: str
    question_ko: str
    anchors_en: tuple[str, ...]
    anchors_ko: tuple[str, ...]

    def name(self, lang: Lang) -> str:
        """The dimension's name in one language."""
        return self.ko if lang == "ko" else self.en

    def question(self, lang: Lang) -> str:
        """What a rater asks themselves."""
        return self.question_ko if lang == "ko" else self.question_en

    def anchor(self, score: int, lang: Lang) -> str:
        """The anchor text of a score (1-5)."""
        anchors = self.anchors_ko if lang == "ko" else self.anchors_en
        return anchors[score - 1]


@cache
def dimensions() -> tuple[Dimension, ...]:
    """EX, IP, ER, EEA, CA, from the shipped rubric file."""
    raw = json.loads(RUBRIC_FILE.read_text(encoding="utf-8"))
    out = []
    for entry in raw["dimensions"]:
        dim = Dimension(
            **{
                **entry,
                "anchors_en": tuple(entry["anchors_en"]),
                "anchors_ko": tuple(entry["anchors_ko"]),
            }
        )
        if len(dim.anchors_en) != len(SCALE) or len(dim.anchors_ko) != len(SCALE):
            raise ValueError(f"{RUBRIC_FILE}: {dim.code} needs {len(SCALE)} anchors per language")
        out.append(dim)
    return tuple(out)


def codes() -> tuple[str, ...]:
    """The dimension codes in rubric order."""
    return tuple(d.code for d in dimensions())


@cache
def rubric_version() -> str:
    """A short hash of the rubric file, stored with every rating."""
    return hashlib.sha256(RUBRIC_FILE.read_bytes()).hexdigest()[:12]
