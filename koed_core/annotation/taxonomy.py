"""The adaptation categories (fixed) and the cultural-signal taxonomy (data, extendable).

The categories are the KoED authors' first sorting of the English dialogues (simply
transferred or context modified) plus the jeong/han dialogues they wrote from scratch,
which the file itself identifies. The signal types are a TOML file an admin can extend;
its version joins the declared version with a hash of the types, so two different files
never share a version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from koed_core.db.types import short_hash
from koed_core.dialogues.dialogue import Dialogue
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.paths import DATA_DIR
from koed_core.tomlfile import parse_toml, read_toml

TAXONOMY_FILE = DATA_DIR / "annotation" / "taxonomy.toml"
SIMPLY_TRANSFERRED = "simply_transferred"
CONTEXT_MODIFIED = "context_modified"
HANDCRAFTED = "handcrafted"
CATEGORIES: dict[str, str] = {
    SIMPLY_TRANSFERRED: N_("simply transferred (culturally neutral)"),
    CONTEXT_MODIFIED: N_("context modified (situation, norms or context adapted)"),
    HANDCRAFTED: N_("handcrafted for jeong/han (known from the file)"),
}
CODE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
VERSION = re.compile(r"^[A-Za-z0-9._-]{1,40}$")
"""A taxonomy's declared version: it is part of the export's file name, so no ``/``, no
NUL, nothing a path could climb out with."""
MAX_TYPES = 200
"""Signal types in one taxonomy: an annotator picks from all of them on every span."""
MAX_NAME = 80
"""Characters of the taxonomy's name and of each type's English and Korean name."""
MAX_HINT = 500
"""Characters of a type's one-line hint."""
MAX_GUIDE = 8000
"""Characters of a type's guideline, in each language."""
MAX_EXAMPLES = 20
"""Examples per type; each side of one (Korean words, English) at most MAX_NAME * 2."""
MAX_FILE_BYTES = 1_000_000
"""A taxonomy file (or upload) is refused past this size before it is read."""


class AnnotationError(KoedError):
    """An annotation that cannot be stored or read: named field, named reason."""


@dataclass(frozen=True)
class SignalType:
    """One kind of cultural signal, with what an annotator reads before marking one."""

    code: str
    en: str
    ko: str
    hint: str = ""
    guide_en: str = ""
    guide_ko: str = ""
    """The guideline: when a span is of this type, and when it is not."""
    examples: tuple[tuple[str, str], ...] = ()
    """(Korean words, English counterpart or why) pairs, as the guideline shows them."""

    @property
    def label(self) -> str:
        """How a picker shows it: the English name with the Korean one."""
        return f"{self.en} ({self.ko})"

    def guide(self, lang: str) -> str:
        """The guideline in ``lang``, else in the other language, else the one-line hint."""
        first, second = (
            (self.guide_ko, self.guide_en) if lang == "ko" else (self.guide_en, self.guide_ko)
        )
        return first or second or self.hint


@dataclass(frozen=True)
class Taxonomy:
    """A named, versioned list of signal types."""

    name: str
    declared: str
    types: tuple[SignalType, ...]

    @property
    def version(self) -> str:
        """The declared version and a hash of the types: what every annotation stores."""
        return f"{self.declared}-{short_hash(self.as_rows())[:8]}"

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(t.code for t in self.types)

    def get(self, code: str) -> SignalType | None:
        """The type with this code, if the taxonomy has it."""
        return next((t for t in self.types if t.code == code), None)

    def as_rows(self) -> list[dict[str, Any]]:
        """The types as plain dicts (stored whole with the version). A guideline or
        examples appear only when given, so a taxonomy without them keeps the version it
        had before types could carry them."""
        rows: list[dict[str, Any]] = []
        for t in self.types:
            row: dict[str, Any] = {"code": t.code, "en": t.en, "ko": t.ko, "hint": t.hint}
            if t.guide_en:
                row["guide_en"] = t.guide_en
            if t.guide_ko:
                row["guide_ko"] = t.guide_ko
            if t.examples:
                row["examples"] = [{"ko": ko, "en": en} for ko, en in t.examples]
            rows.append(row)
        return rows


def parse_taxonomy(raw: dict[str, Any], where: str) -> Taxonomy:
    """A taxonomy from a TOML table or a stored row, checked field by field.

    Raises:
        AnnotationError: a missing name or version, no types, a bad or repeated code.
    """
    name, declared, types = raw.get("name"), raw.get("version"), raw.get("types")
    if not isinstance(name, str) or not name.strip():
        raise AnnotationError(_("{where}: 'name' must be a non-empty string", where=where))
    _short(name, MAX_NAME, where, "'name'")
    if not isinstance(declared, str | int) or not str(declared).strip():
        raise AnnotationError(
            _("{where}: 'version' must be given (a string such as \"2\")", where=where)
        )
    if not VERSION.match(str(declared).strip()):
        raise AnnotationError(
            _(
                "{where}: 'version' is {version}; use 1-40 letters, digits and '.', '_' or "
                "'-' (it becomes part of a file name)",
                where=where,
                version=repr(str(declared)[:40]),
            )
        )
    if not isinstance(types, list) or not types:
        raise AnnotationError(_("{where}: no [[types]] entries", where=where))
    if len(types) > MAX_TYPES:
        raise AnnotationError(
            _(
                "{where}: {n} types: at most {most} (an annotator chooses among all of them "
                "on every span)",
                where=where,
                n=f"{len(types):,}",
                most=MAX_TYPES,
            )
        )
    seen: set[str] = set()
    parsed = []
    for i, entry in enumerate(types, 1):
        if not isinstance(entry, dict):
            raise AnnotationError(_("{where}: type {n} is not a table", where=where, n=i))
        code = entry.get("code")
        if not isinstance(code, str) or not CODE.match(code):
            raise AnnotationError(
                _(
                    "{where}: type {n} has code {code}; use lowercase letters, digits and '_'",
                    where=where,
                    n=i,
                    code=repr(code),
                )
            )
        if code in seen:
            raise AnnotationError(
                _("{where}: type code {code} appears twice", where=where, code=repr(code))
            )
        seen.add(code)
        en, ko = entry.get("en"), entry.get("ko")
        if not isinstance(en, str) or not en.strip() or not isinstance(ko, str) or not ko.strip():
            raise AnnotationError(
                _(
                    "{where}: type {code} needs both an 'en' and a 'ko' name",
                    where=where,
                    code=repr(code),
                )
            )
        hint = entry.get("hint", "")
        guides = [entry.get(key, "") for key in ("guide_en", "guide_ko")]
        if not all(isinstance(g, str) for g in guides):
            raise AnnotationError(
                _("{where}: type {code}: guide_en and guide_ko are text", where=where, code=code)
            )
        for field, value, most in (
            ("en", en, MAX_NAME),
            ("ko", ko, MAX_NAME),
            ("hint", str(hint), MAX_HINT),
            ("guide_en", guides[0], MAX_GUIDE),
            ("guide_ko", guides[1], MAX_GUIDE),
        ):
            _short(value.strip(), most, where, f"type {code!r}: {field!r}")
        parsed.append(
            SignalType(
                code,
                en.strip(),
                ko.strip(),
                str(hint),
                guides[0].strip(),
                guides[1].strip(),
                _examples(entry.get("examples", []), where, code),
            )
        )
    return Taxonomy(name.strip(), str(declared).strip(), tuple(parsed))


def _short(text: str, most: int, where: str, field: str) -> None:
    """Refuse a text longer than ``most`` characters, naming the file and the field.

    Raises:
        AnnotationError: past the limit.
    """
    if len(text) > most:
        raise AnnotationError(
            _(
                "{where}: {field} is {n} characters; at most {most}",
                where=where,
                field=field,
                n=f"{len(text):,}",
                most=f"{most:,}",
            )
        )


def _examples(raw: Any, where: str, code: str) -> tuple[tuple[str, str], ...]:
    """A type's examples: a list of tables with a Korean ``ko`` and an English ``en``."""
    if isinstance(raw, list) and len(raw) > MAX_EXAMPLES:
        raise AnnotationError(
            _(
                "{where}: type {code}: {n} examples; at most {most}",
                where=where,
                code=repr(code),
                n=len(raw),
                most=MAX_EXAMPLES,
            )
        )
    if not isinstance(raw, list) or not all(
        isinstance(e, dict) and isinstance(e.get("ko"), str) and isinstance(e.get("en", ""), str)
        for e in raw
    ):
        raise AnnotationError(
            _(
                "{where}: type {code}: examples are [[types.examples]] tables with ko and en",
                where=where,
                code=code,
            )
        )
    pairs = tuple((str(e["ko"]).strip(), str(e.get("en", "")).strip()) for e in raw)
    for i, (ko, en) in enumerate(pairs, 1):
        _short(ko, 2 * MAX_NAME, where, f"type {code!r}: example {i}: 'ko'")
        _short(en, 2 * MAX_NAME, where, f"type {code!r}: example {i}: 'en'")
    return pairs


def load_taxonomy(path: Path | None = None) -> Taxonomy:
    """The shipped taxonomy, or an admin's file.

    Raises:
        AnnotationError: the file is missing, past :data:`MAX_FILE_BYTES`, not TOML
            (or nested too deeply to be read), or not a taxonomy.
    """
    file = path or TAXONOMY_FILE
    where = str(file.name if path is None else file)
    if file.is_file() and file.stat().st_size > MAX_FILE_BYTES:
        raise AnnotationError(_too_big(where, file.stat().st_size))
    raw = read_toml(file, "taxonomy file", ["data/annotation/taxonomy.toml"], AnnotationError)
    return parse_taxonomy(raw, where)


def taxonomy_from_bytes(data: bytes, where: str) -> Taxonomy:
    """A taxonomy from an upload's bytes; ``where`` (its file name) names it in messages.

    Raises:
        AnnotationError: past :data:`MAX_FILE_BYTES`, not UTF-8, not TOML (or nested too
            deeply to be read), or not a taxonomy.
    """
    if len(data) > MAX_FILE_BYTES:
        raise AnnotationError(_too_big(where, len(data)))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise AnnotationError(
            _("{file}: not a UTF-8 TOML file ({error})", file=where, error=err)
        ) from None
    return parse_taxonomy(parse_toml(text, where, AnnotationError), where)


def _too_big(where: str, size: int) -> str:
    return _(
        "{where}: {size} bytes; a taxonomy file is at most 1 MB",
        where=where,
        size=f"{size:,}",
    )


def fixed_category(dialogue: Dialogue) -> str | None:
    """The category the file decides: a jeong/han dialogue was handcrafted, no choice."""
    return HANDCRAFTED if dialogue.korean_emotion else None


def check_category(dialogue: Dialogue, category: str | None) -> str | None:
    """The category to store for this dialogue (None: not chosen yet).

    Raises:
        AnnotationError: an unknown category, "handcrafted" for a dialogue from
            EmpatheticDialogues, or another category for a jeong/han dialogue.
    """
    fixed = fixed_category(dialogue)
    if fixed is not None:
        if category not in (None, fixed):
            raise AnnotationError(
                _(
                    "{conv_id} is a jeong/han dialogue, written from scratch: its category "
                    "is {fixed}, not {category}",
                    conv_id=dialogue.conv_id,
                    fixed=fixed,
                    category=category,
                )
            )
        return fixed
    if category is None:
        return None
    if category not in CATEGORIES:
        raise AnnotationError(
            _(
                "category {category}: use one of {codes}",
                category=repr(category),
                codes=", ".join(CATEGORIES),
            )
        )
    if category == HANDCRAFTED:
        raise AnnotationError(
            _(
                "{conv_id} comes from EmpatheticDialogues: it is simply transferred or "
                "context modified; only jeong/han dialogues were handcrafted",
                conv_id=dialogue.conv_id,
            )
        )
    return category
