"""Spans of text on a dialogue's turns, in code points.

Offsets count Unicode code points, as Python's ``str`` does: a Hangul syllable is one,
a decomposed syllable (jamo) is two or three, an emoji outside the BMP is one (where
JavaScript counts two). Texts are never normalised, so an offset stored today still
covers the same characters after a reload. Position 0 is the situation; turns keep their
1-based position.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from typing import Any

from koed_core.annotation.taxonomy import AnnotationError, Taxonomy
from koed_core.dialogues.dialogue import Dialogue, Lang
from koed_core.i18n import _

SITUATION = 0
PERSON = "person"
"""The origin of a span a person marked; accepted suggestions say where they came from."""
MAX_COMMENT = 2000
"""The longest comment a span takes, in characters."""


@dataclass(frozen=True)
class Side:
    """Where a span sits in one language: turn position, code-point offsets, the text."""

    position: int
    start: int
    end: int
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"position": self.position, "start": self.start, "end": self.end, "text": self.text}


@dataclass(frozen=True)
class Span:
    """A cultural signal on a Korean span, linked to the English it replaces (or none)."""

    ko: Side
    type: str
    en: Side | None = None
    no_counterpart: bool = False
    origin: str = PERSON
    comment: str = ""
    """The annotator's comment on this span (a doubt, a reading); never part of its key."""

    @property
    def key(self) -> tuple[int, int, int, str]:
        """What two annotators must agree on for an exact match."""
        return (self.ko.position, self.ko.start, self.ko.end, self.type)


def turn_text(dialogue: Dialogue, lang: Lang, position: int) -> str:
    """The text at a position in one language (``""`` where that side has none).

    Raises:
        AnnotationError: no such position in the dialogue.
    """
    if position == SITUATION:
        return dialogue.situation(lang)
    for turn in dialogue.turns:
        if turn.position == position:
            return turn.text(lang)
    raise AnnotationError(
        _(
            "{conv_id} has no turn {position} (it has {n} turns; 0 is the situation)",
            conv_id=dialogue.conv_id,
            position=position,
            n=len(dialogue.turns),
        )
    )


def find(text: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """Code-point offsets of the ``occurrence``-th appearance of ``needle`` in ``text``.

    Raises:
        AnnotationError: empty, not found, or fewer appearances than asked for.
    """
    if not needle:
        raise AnnotationError(_("type the exact text of the span"))
    if occurrence < 1:
        raise AnnotationError(_("occurrence counts from 1"))
    start = -1
    for _nth in range(occurrence):
        start = text.find(needle, start + 1)
        if start < 0:
            count = text.count(needle)
            raise AnnotationError(
                _("{text} is not in that turn", text=repr(needle))
                if count == 0
                else _(
                    "{text} appears {count} time(s) in that turn, not {occurrence}",
                    text=repr(needle),
                    count=count,
                    occurrence=occurrence,
                )
            )
    return start, start + len(needle)


def side_at(dialogue: Dialogue, lang: Lang, position: int, start: int, end: int) -> Side:
    """The side covering [start, end) of a turn, its text read from the dialogue.

    Raises:
        AnnotationError: a bad position, or offsets outside the text or empty.
    """
    text = turn_text(dialogue, lang, position)
    if not text:
        raise AnnotationError(
            _(
                "turn {position} of {conv_id} has no {lang} text",
                position=position,
                conv_id=dialogue.conv_id,
                lang=lang,
            )
        )
    if not (0 <= start < end <= len(text)):
        raise AnnotationError(
            _(
                "{lang} span {start}-{end} of turn {position}: offsets must satisfy "
                "0 <= start < end <= {length} (the turn's length in code points)",
                lang=lang,
                start=start,
                end=end,
                position=position,
                length=len(text),
            )
        )
    for edge in (start, end):
        if splits_character(text, edge):
            raise AnnotationError(
                _(
                    "{lang} span {start}-{end} of turn {position}: offset {edge} falls "
                    "inside a character (a decomposed syllable or an emoji sequence); widen "
                    "the span",
                    lang=lang,
                    start=start,
                    end=end,
                    position=position,
                    edge=edge,
                )
            )
    return Side(position, start, end, text[start:end])


def splits_character(text: str, index: int) -> bool:
    """Whether an offset falls inside what a reader sees as one character: between the
    jamo of a decomposed syllable, before a combining mark, or inside an emoji sequence
    (a zero-width joiner or a variation selector on either side)."""
    if not 0 < index < len(text):
        return False
    before, after = text[index - 1], text[index]
    joiners = ("\u200d", "\ufe0f", "\ufe0e")
    if after in joiners or before == "\u200d" or unicodedata.combining(after):
        return True
    if 0x1F3FB <= ord(after) <= 0x1F3FF:  # a skin-tone modifier belongs to its emoji
        return True
    leading, vowel, final = (0x1100, 0x115F), (0x1160, 0x11A7), (0x11A8, 0x11FF)
    return (leading[0] <= ord(before) <= leading[1] and vowel[0] <= ord(after) <= vowel[1]) or (
        vowel[0] <= ord(before) <= vowel[1] and final[0] <= ord(after) <= final[1]
    )


def _utf16_reading(text: str, start: int, end: int) -> str | None:
    """The text that offsets counted in UTF-16 units (as JavaScript counts) would cover."""
    data = text.encode("utf-16-le")
    if not (0 <= start < end <= len(data) // 2):
        return None
    try:
        return data[2 * start : 2 * end].decode("utf-16-le")
    except UnicodeDecodeError:
        return None


def check_side(dialogue: Dialogue, lang: Lang, side: Side) -> Side:
    """``side`` as given, once its offsets are checked to cover its text exactly.

    Raises:
        AnnotationError: offsets outside the turn, or covering another text (with a hint
            when the offsets were counted in UTF-16 units).
    """
    found = side_at(dialogue, lang, side.position, side.start, side.end)
    if side.text and found.text != side.text:
        full = turn_text(dialogue, lang, side.position)
        values = {
            "lang": lang,
            "start": side.start,
            "end": side.end,
            "position": side.position,
            "conv_id": dialogue.conv_id,
            "found": repr(found.text),
            "given": repr(side.text),
        }
        if _utf16_reading(full, side.start, side.end) == side.text:
            raise AnnotationError(
                _(
                    "{lang} span {start}-{end} of turn {position} in {conv_id} covers "
                    "{found}, not {given}; these offsets count UTF-16 units (as JavaScript "
                    "does), KoED Studio counts code points",
                    **values,
                )
            )
        raise AnnotationError(
            _(
                "{lang} span {start}-{end} of turn {position} in {conv_id} covers {found}, "
                "not {given}",
                **values,
            )
        )
    return found


def check_span(dialogue: Dialogue, span: Span, taxonomy: Taxonomy) -> Span:
    """The span with its texts read from the dialogue, once every part is checked.

    Raises:
        AnnotationError: a type the taxonomy lacks, offsets that do not fit, or neither
            an English span nor "no counterpart" (or both).
    """
    if taxonomy.get(span.type) is None:
        raise AnnotationError(
            _(
                "signal type {type} is not in taxonomy {version} ({codes})",
                type=repr(span.type),
                version=taxonomy.version,
                codes=", ".join(taxonomy.codes),
            )
        )
    ko = check_side(dialogue, "ko", span.ko)
    if span.en is not None and span.no_counterpart:
        raise AnnotationError(_("a span has an English counterpart or none, not both"))
    if span.en is None and not span.no_counterpart:
        raise AnnotationError(
            _(
                "link the Korean span to the English span it replaces, or mark it as having "
                "no English counterpart"
            )
        )
    if span.en is not None and span.en.position != span.ko.position:
        raise AnnotationError(
            _(
                "the English counterpart must be in the same turn as the Korean span (Korean "
                "in turn {ko}, English in turn {en})",
                ko=span.ko.position,
                en=span.en.position,
            )
        )
    en = check_side(dialogue, "en", span.en) if span.en is not None else None
    if len(span.comment) > MAX_COMMENT:
        raise AnnotationError(
            _(
                "a span's comment is longer than {n} characters",
                n=f"{MAX_COMMENT:,}",
            )
        )
    return replace(span, ko=ko, en=en)


def span_from_dict(raw: Any, where: str) -> Span:
    """A span from its JSON form (the export's and the import's), types checked.

    Raises:
        AnnotationError: a missing or mistyped field, named.
    """
    if not isinstance(raw, dict):
        raise AnnotationError(f"{where}: a span must be an object")

    def side(value: Any, lang: str) -> Side:
        if not isinstance(value, dict):
            raise AnnotationError(f"{where}: '{lang}' must be an object with position, start, end")
        numbers = []
        for field in ("position", "start", "end"):
            number = value.get(field)
            if not isinstance(number, int) or isinstance(number, bool):
                raise AnnotationError(f"{where}: {lang}.{field} must be an integer")
            numbers.append(number)
        text = value.get("text", "")
        if not isinstance(text, str):
            raise AnnotationError(f"{where}: {lang}.text must be a string")
        return Side(numbers[0], numbers[1], numbers[2], text)

    kind = raw.get("type")
    if not isinstance(kind, str):
        raise AnnotationError(f"{where}: 'type' must be a signal type code")
    en_raw = raw.get("en")
    origin = raw.get("origin", PERSON)
    comment = raw.get("comment") or ""
    if not isinstance(comment, str):
        raise AnnotationError(f"{where}: 'comment' must be text")
    none_there = raw.get("no_counterpart", False)
    if not isinstance(none_there, bool):  # "false" is a non-empty string: truthy
        raise AnnotationError(
            f"{where}: 'no_counterpart' must be true or false (JSON booleans), not {none_there!r}"[
                :200
            ]
        )
    return Span(
        ko=side(raw.get("ko"), "ko"),
        type=kind,
        en=side(en_raw, "en") if en_raw is not None else None,
        no_counterpart=none_there,
        origin=origin if isinstance(origin, str) and origin else PERSON,
        comment=comment,
    )


def span_to_row(span: Span) -> dict[str, Any]:
    """The database row of a span (``koed_core.db.annotations`` stores it)."""
    en = span.en
    return {
        "position": span.ko.position,
        "start": span.ko.start,
        "end": span.ko.end,
        "text": span.ko.text,
        "type": span.type,
        "en_position": en.position if en else None,
        "en_start": en.start if en else None,
        "en_end": en.end if en else None,
        "en_text": en.text if en else None,
        "no_counterpart": span.no_counterpart,
        "origin": span.origin,
        "comment": span.comment,
    }


def span_from_row(row: dict[str, Any]) -> Span:
    """A span from its database row (stored checked, so read as it is)."""
    en = None
    if row["en_position"] is not None:
        en = Side(row["en_position"], row["en_start"], row["en_end"], row["en_text"])
    return Span(
        ko=Side(row["position"], row["start"], row["end"], row["text"]),
        type=row["type"],
        en=en,
        no_counterpart=bool(row["no_counterpart"]),
        origin=row["origin"],
        comment=row.get("comment") or "",
    )


def span_to_dict(span: Span) -> dict[str, Any]:
    """The JSON form of a span (what the export writes and the import reads)."""
    return {
        "type": span.type,
        "ko": span.ko.as_dict(),
        "en": span.en.as_dict() if span.en else None,
        "no_counterpart": span.no_counterpart,
        "origin": span.origin,
        "comment": span.comment,
    }
