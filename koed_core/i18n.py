"""What a person reads, in their language: English is the source, Korean comes from a
gettext catalog (``locale/ko/LC_MESSAGES/koed.po``, extracted and updated with Babel).

The language is per page run, not per process: Streamlit runs each session's script in
its own thread, so the page sets it at the top of every run (a context variable) and
every ``_()`` below it, in pages, components and the messages of ``koed_core`` that reach
a page, reads it. The command line never sets it and stays English, as do logs and
exports' column names (scripts read them).

Placeholders are named, ``{n}``, and filled after translation, so a translator can move
them; the catalog test checks each Korean entry has the same ones.
"""

from __future__ import annotations

import gettext
import io
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from functools import cache
from typing import Literal

from babel.dates import format_datetime as _format_datetime
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal, format_percent

from koed_core.paths import DATA_DIR, LOCALE_DIR

Language = Literal["en", "ko"]
LANGUAGES: tuple[Language, ...] = ("ko", "en")
NAMES: dict[str, str] = {
    code: name
    for code, name in json.loads((DATA_DIR / "languages.json").read_text("utf-8")).items()
    if not code.startswith("_")
}
"""Each language by its own name (what the switch shows), from data/languages.json."""
DOMAIN = "koed"
_current: ContextVar[Language] = ContextVar("koed_language", default="en")


def language() -> Language:
    """The language of the page being drawn (English outside a page)."""
    return _current.get()


def set_language(lang: str) -> Language:
    """Use ``lang`` for this run of the page (anything unknown: English)."""
    chosen: Language = "ko" if lang == "ko" else "en"
    _current.set(chosen)
    return chosen


@contextmanager
def speaking(lang: str) -> Iterator[None]:
    """``lang`` inside the block only (a chart exported in another language, a test)."""
    token = _current.set("ko" if lang == "ko" else "en")
    try:
        yield
    finally:
        _current.reset(token)


@cache
def catalog(lang: Language) -> gettext.NullTranslations:
    """The compiled catalog of ``lang`` (English: the source itself). Compiled from the
    ``.po`` in memory at first use, so nothing generated has to be kept in step."""
    path = LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"
    if lang == "en" or not path.is_file():
        return gettext.NullTranslations()
    with path.open("rb") as source:
        messages = read_po(source, locale=lang, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, messages, use_fuzzy=False)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def _(message: str, /, **values: object) -> str:
    """``message`` in the page's language, its ``{placeholders}`` filled from ``values``."""
    text = catalog(language()).gettext(message)
    return text.format(**values) if values else text


def ngettext(singular: str, plural: str, n: int, /, **values: object) -> str:
    """The singular or plural form for ``n`` (Korean has one form), ``{n}`` filled as the
    reader's locale writes a count (1,234)."""
    text = catalog(language()).ngettext(singular, plural, n)
    return text.format(n=number(n), **values)


def choices(labels: Mapping[str, str]) -> dict[str, str]:
    """Option labels translated now, for a widget's ``format_func``
    (``format_func=choices(NAMES).__getitem__``): Streamlit may format an option again
    outside the page run (a rerun's widget state, a test), where a function reading the
    page's language would answer in another language than the options it drew."""
    return {key: _(label) for key, label in labels.items()}


def stored_word(value: str, words: Mapping[str, str]) -> str:
    """A stored value (a protocol ``single``, a judge mode ``paper``) as a chart or a
    label says it: the value itself on an English page, where it is the name a command
    and an export use, and its word from ``words`` (``N_`` messages) in any other
    language, so that a Korean chart or picker carries no English value (an unknown
    value: as it is)."""
    if language() == "en" or value not in words:
        return value
    return _(words[value])


def N_(message: str, /) -> str:
    """Marks a message for the catalog where it is defined (a table of names); it is
    translated where it is shown, with ``_(name)``."""
    return message


def number(value: float, digits: int = 0) -> str:
    """A number with the page's grouping and decimal signs (1,234.5)."""
    pattern = "#,##0" + ("." + "0" * digits if digits else "")
    return format_decimal(value, format=pattern, locale=_babel_locale())


def percent(value: float, digits: int = 0) -> str:
    """A share (0.25) as the page's language writes it (25%)."""
    pattern = "#,##0" + ("." + "0" * digits if digits else "") + "%"
    return format_percent(value, format=pattern, locale=_babel_locale())


def moment(value: datetime) -> str:
    """A date and time, medium length, in the page's language (2026. 12. 2. 오후 6:05)."""
    return _format_datetime(value, format="medium", locale=_babel_locale())


def _babel_locale() -> str:
    return "ko_KR" if language() == "ko" else "en_US"
