"""Search a project's annotations, every annotator's and the reviewer's:
one box over span texts (Korean and English), types (code and name), span comments,
annotators and notes; a row per span, and a dialogue's note once when only the note matches. For the
Annotation projects page (admins: blindness binds annotators, not the reviewer)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pandas as pd
import streamlit as st

from components.annotation.span_form import type_name
from components.core import tables
from koed_core import i18n
from koed_core.annotation.projects import AnnotationRules
from koed_core.annotation.taxonomy import Taxonomy
from koed_core.i18n import _

KEY = "projects.search"


def matches(
    annotations: AnnotationRules, project_id: int, taxonomy: Taxonomy, query: str
) -> pd.DataFrame:
    """Rows (dialogue, annotator, turn, Korean, English, type, comment, note) of the
    project's spans, and notes, whose texts hold ``query`` (case and spacing ignored,
    Korean word spacing too)."""
    needle = _plain(query)
    names = {kind.code: type_name(kind) for kind in taxonomy.types}
    rows: list[dict[str, Any]] = []
    for answer in annotations.annotations(project_id):
        who = _("reviewer") if answer.kind != "annotator" else answer.annotator
        hit_note = bool(needle) and needle in _plain(answer.note)
        found = False
        for span in answer.spans:
            fields = (
                span.ko.text,
                span.en.text if span.en else "",
                span.type,
                names.get(span.type, ""),
                answer.annotator,
                span.comment,
                answer.note,
            )
            if needle and any(needle in _plain(f) for f in fields):
                found = True
                rows.append(_row(answer.conv_id, who, span.ko.position, span.ko.text,
                                 span.en.text if span.en else "", names.get(span.type, span.type),
                                 answer.note, span.comment))  # fmt: skip
        if hit_note and not found:
            rows.append(_row(answer.conv_id, who, None, "", "", "", answer.note))
    return pd.DataFrame(rows, columns=list(_row("", "", None, "", "", "", "")))


HANGUL = r"\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3"
"""Hangul jamo and syllables, as a regular expression's range: a space beside one is
word spacing, which writers of Korean vary (a compound written as one word or as two),
so the search leaves it out."""
KOREAN_SPACE = re.compile(rf"\s+(?=[{HANGUL}])|(?<=[{HANGUL}])\s+")


def _plain(text: str) -> str:
    """A text as the search compares it: composed (NFC), with no space beside a Korean
    letter, other runs of spaces and line breaks as one space, case folded."""
    joined = KOREAN_SPACE.sub("", unicodedata.normalize("NFC", text))
    return " ".join(joined.split()).casefold()


def _row(
    conv: str,
    who: str,
    turn: int | None,
    ko: str,
    en: str,
    kind: str,
    note: str,
    comment: str = "",
) -> dict[str, Any]:
    return {
        _("dialogue"): conv,
        _("annotator"): who,
        _("turn"): turn,
        _("Korean"): ko,
        _("English"): en,
        _("type"): kind,
        _("comment"): comment,
        _("note"): note,
    }


def search_section(annotations: AnnotationRules, project: dict[str, Any]) -> None:
    """The search box and what it finds."""
    query = st.text_input(
        _("Search the annotations (span text, type, comment, annotator, note)"),
        key=f"{KEY}.{project['id']}",
        placeholder=_("e.g. a Korean word, places, an annotator's name"),
    )
    if not query.strip():
        return
    found = matches(annotations, int(project["id"]), annotations.taxonomy(project), query)
    st.caption(_("{n} found", n=i18n.number(len(found))))
    if not found.empty:
        tables.show(found, hide_index=True)
