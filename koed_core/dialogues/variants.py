"""Translated variants: the two missing cells of the language x content design.

KoED's gap (Korean minus English) changes two things at once: the language and the
content (a Korean cultural reconstruction against the Western original). Two translated
variants separate them:

==============  ================  ================
\\               Western content   Korean content
==============  ================  ================
English         ``en``            ``en-from-ko``
Korean          ``ko-from-en``    ``ko``
==============  ================  ================

A translation keeps the source side's speaker structure: one translated text per turn
that has text in the source language (Korean-only turns included), in order, so that a
variant dialogue has exactly the turns, and the Speaker/Listener alternation, of its
source. Everything else of the dialogue (its conv_id, emotion labels, jeong/han flag)
follows it unchanged. Nothing here knows about storage or models.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from koed_core.dialogues.dialogue import Dialogue, Lang, Turn

Content = Literal["western", "korean"]


@dataclass(frozen=True)
class Variant:
    """One translated variant: which side it translates, into which language."""

    name: str
    source: Lang
    target: Lang

    @property
    def content(self) -> Content:
        """The content a variant carries is its source's: Korean for a translation of
        the reconstruction, Western for one of the original."""
        return "korean" if self.source == "ko" else "western"


VARIANTS: dict[str, Variant] = {
    "en-from-ko": Variant("en-from-ko", source="ko", target="en"),
    "ko-from-en": Variant("ko-from-en", source="en", target="ko"),
}
"""The two translated cells, by name."""
CELLS: tuple[str, ...] = ("en", "en-from-ko", "ko-from-en", "ko")
"""Every language a run can be asked in: the two of the file and the two variants."""


def recorded_versions(recorded: str | None) -> dict[str, tuple[int, str]]:
    """The variant versions a run recorded (its configuration's ``variants``:
    ``en-from-ko v2 3f9a..., ko-from-en v1 0c1d...``) as variant -> (version, id); parts
    that do not read as one are left out (a run from before the id was kept: id "")."""
    found: dict[str, tuple[int, str]] = {}
    for part in (recorded or "").split(","):
        words = part.split()
        if len(words) < 2 or words[0] not in VARIANTS or not words[1][1:].isdigit():
            continue
        found[words[0]] = (int(words[1][1:]), words[2] if len(words) > 2 else "")
    return found


def text_lang(lang: str) -> Lang:
    """The language a cell's text is written in (``en-from-ko`` is English)."""
    if lang in VARIANTS:
        return VARIANTS[lang].target
    if lang in ("ko", "en"):
        return lang  # type: ignore[return-value]
    raise ValueError(f"unknown language or variant {lang!r}; one of {', '.join(CELLS)}")


def cells_in(langs: Sequence[str]) -> tuple[str, ...]:
    """Every cell written in one of ``langs`` (``ko``: ``ko`` and ``ko-from-en``): what a
    rater who reads those languages can rate, and what a study in them holds."""
    return tuple(cell for cell in CELLS if text_lang(cell) in langs)


def source_lang(lang: str) -> Lang:
    """The language a cell's turns come from (``en-from-ko``: Korean): the same turns,
    so the same count, as a request estimate needs."""
    return VARIANTS[lang].source if lang in VARIANTS else text_lang(lang)


def content_of(lang: str) -> Content:
    """The content a cell carries: the Korean reconstruction (``ko``, ``en-from-ko``) or
    the Western original (``en``, ``ko-from-en``)."""
    if lang in VARIANTS:
        return VARIANTS[lang].content
    return "korean" if text_lang(lang) == "ko" else "western"


def source_texts(dialogue: Dialogue, variant: str) -> tuple[str, tuple[str, ...]]:
    """The situation and the turns a translation of ``dialogue`` translates: the turns
    with text in the source language, in order (Korean-only turns included for
    ``en-from-ko``; English commas decoded)."""
    source = VARIANTS[variant].source
    turns = tuple(t.text(source) for t in dialogue.turns if t.text(source))
    return dialogue.situation(source), turns


def source_hash(dialogue: Dialogue, variant: str) -> str:
    """sha256 of what was translated: a translation whose source text has changed since
    (another release of the file) no longer counts for that dialogue."""
    situation, turns = source_texts(dialogue, variant)
    blob = json.dumps([variant, situation, list(turns)], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class Translation:
    """One dialogue's translated situation and turns (one per source turn, in order)."""

    conv_id: str
    variant: str
    situation: str
    turns: tuple[str, ...]


def mismatch(dialogue: Dialogue, translation: Translation) -> str | None:
    """Why ``translation`` cannot stand for ``dialogue`` (None: it can): a turn count
    other than the source's, or an empty text (English, for the CLI and logs)."""
    _situation, source = source_texts(dialogue, translation.variant)
    if len(translation.turns) != len(source):
        return (
            f"{translation.conv_id}: {len(translation.turns)} turns, but the "
            f"{VARIANTS[translation.variant].source} side has {len(source)}"
        )
    empty = [i + 1 for i, text in enumerate(translation.turns) if not text.strip()]
    if empty:
        return f"{translation.conv_id}: turn {empty[0]} is empty"
    if not translation.situation.strip():
        return f"{translation.conv_id}: the situation is empty"
    return None


def apply(dialogue: Dialogue, translation: Translation) -> Dialogue:
    """The variant dialogue: the source side's turns, each with its translation in the
    target language, and the translated situation; labels and conv_id unchanged.

    Building the variant as an ordinary :class:`Dialogue` lets every step that reads a
    dialogue in one language (the Listener's context, the human reference, the judge's
    transcript) read the variant in its target language with no change of its own.

    Raises:
        ValueError: the translation does not fit the dialogue (see :func:`mismatch`).
    """
    problem = mismatch(dialogue, translation)
    if problem:
        raise ValueError(problem)
    variant = VARIANTS[translation.variant]
    kept = [t for t in dialogue.turns if t.text(variant.source)]
    turns = []
    for turn, text in zip(kept, translation.turns, strict=True):
        source = turn.text(variant.source)
        ko, en = (text, source) if variant.target == "ko" else (source, text)
        turns.append(Turn(turn.position, ko.strip(), en.strip(), turn.source_idx, turn.user_id))
    situation = translation.situation.strip()
    own = dialogue.situation(variant.source)
    return replace(
        dialogue,
        situation_ko=situation if variant.target == "ko" else own,
        situation_en=situation if variant.target == "en" else own,
        turns=tuple(turns),
    )


def parse_line(number: int, line: str) -> Translation:
    """One line of a translations file: ``{"conv_id", "variant", "situation", "turns"}``.

    Raises:
        ValueError: a sentence naming the line and what is wrong with it.
    """
    try:
        data: Any = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"line {number}: not JSON ({err.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"line {number}: expected an object, found {type(data).__name__}")
    missing = [k for k in ("conv_id", "variant", "situation", "turns") if k not in data]
    if missing:
        raise ValueError(f"line {number}: missing {', '.join(missing)}")
    if data["variant"] not in VARIANTS:
        raise ValueError(
            f"line {number}: variant {data['variant']!r} is not one of {', '.join(VARIANTS)}"
        )
    if not isinstance(data["conv_id"], str) or not data["conv_id"]:
        raise ValueError(f"line {number}: conv_id must be a non-empty string")
    if not isinstance(data["situation"], str):
        raise ValueError(f"line {number}: situation must be a string")
    turns = data["turns"]
    if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
        raise ValueError(f"line {number}: turns must be a list of strings")
    return Translation(data["conv_id"], data["variant"], data["situation"], tuple(turns))
