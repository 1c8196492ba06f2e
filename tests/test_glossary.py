"""One word per idea (issue 67, item 4): every catalog entry follows the Korean glossary
in docs/development.md, so that a glossary term's English word is never translated
otherwise (judge is 심사, never 평가 모델 beside 평가자 for people; turn is 발화, reject is
반려)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "development.md"
PO = ROOT / "locale" / "ko" / "LC_MESSAGES" / "koed.po"
NOT_WORDS = re.compile(r"\{[^{}]*\}|`[^`]*`")
"""Placeholders and code in an English entry are not its words (``{dimension}``,
```koed judge```)."""


class Term(NamedTuple):
    """One glossary row."""

    english: tuple[str, ...]
    korean: str
    everywhere: bool
    avoid: tuple[str, ...]

    def pattern(self) -> re.Pattern[str]:
        """The English forms as whole words (a capitalised term matches as written)."""
        forms = "|".join(re.escape(f) for f in self.english)
        flags = 0 if self.english[0][0].isupper() and len(self.english) == 1 else re.I
        return re.compile(rf"(?<![\w-])(?:{forms})(?![\w-])", flags)


def glossary() -> list[Term]:
    """The table between the glossary markers of docs/development.md."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- glossary: begin -->")[1].split("<!-- glossary: end -->")[0]
    rows = [line for line in table.strip().splitlines() if line.startswith("|")][2:]
    terms = []
    for row in rows:
        english, korean, everywhere, avoid, _note = (c.strip() for c in row.strip("|").split("|"))
        terms.append(
            Term(
                tuple(e.strip() for e in english.split(",")),
                korean,
                everywhere == "yes",
                tuple(a.strip() for a in avoid.split(",") if a.strip()),
            )
        )
    return terms


def entries() -> list[tuple[str, str]]:
    """Every (English, Korean) pair of the catalog, plural forms joined."""
    catalog = read_po(PO.open("rb"))
    out = []
    for message in catalog:
        if not message.id:
            continue
        english = " ".join(message.id) if isinstance(message.id, tuple) else message.id
        korean = " ".join(message.string) if isinstance(message.string, tuple) else message.string
        out.append((english, korean))
    return out


def test_the_glossary_has_about_35_terms_with_a_korean_word_each() -> None:
    terms = glossary()
    assert len(terms) >= 30
    assert all(t.korean for t in terms)
    english = [e for t in terms for e in t.english]
    assert len(english) == len(set(english))  # one row per English word


@pytest.mark.parametrize("term", glossary(), ids=lambda t: t.english[0])
def test_a_glossary_word_is_never_translated_otherwise(term: Term) -> None:
    pattern = term.pattern()
    wrong = []
    for english, korean in entries():
        if not pattern.search(NOT_WORDS.sub(" ", english)):
            continue
        if term.everywhere and term.korean not in korean:
            wrong.append(f"{english!r}\n    -> {korean!r} (no {term.korean})")
        wrong += [f"{english!r}\n    -> {korean!r} ({a})" for a in term.avoid if a in korean]
    assert not wrong, f"{term.english[0]} is {term.korean}:\n" + "\n".join(wrong)


def test_the_check_catches_a_judge_called_a_rating_model() -> None:
    judge = next(t for t in glossary() if t.english[0] == "judge")
    english, korean = "The judge scored it", "평가 모델이 채점했습니다"
    assert judge.pattern().search(english)
    assert judge.korean not in korean and any(a in korean for a in judge.avoid)
