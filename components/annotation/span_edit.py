"""Change one of the annotator's spans in place: its type, its edges (the Korean text it
covers in the same turn) or its comment, keeping its English counterpart; one save, no
delete and re-add. The span widget's panel edits a comment too; this
form is the keyboard's way."""

from __future__ import annotations

import streamlit as st

from components.annotation import span_actions
from components.core.literal import md
from koed_core.annotation.spans import MAX_COMMENT, Span, find, side_at, turn_text
from koed_core.annotation.taxonomy import AnnotationError
from koed_core.db.types import short_hash
from koed_core.i18n import _

KEY = "annotate.change"


def change_form(sheet: span_actions.Sheet, names: dict[str, str]) -> None:
    """A span picked, its new type and the Korean text it should cover (found in its turn,
    at the occurrence given); Change stores the edited span where the old one was."""
    spans, taxonomy = list(sheet.spans), sheet.taxonomy
    if not spans:
        return
    fresh = short_hash([s.key for s in spans])  # a choice never points at another span
    with st.form(f"{KEY}.{fresh}", border=True):
        st.markdown("**" + _("Change a span (type, edges or comment)") + "**")
        shown = {  # named once, in this run's language (a later call may speak another)
            i: _(
                "turn {position}: {text} ({type})",
                position=span.ko.position,
                text=span.ko.text,
                type=names.get(span.type, span.type),
            )
            for i, span in enumerate(spans)
        }
        which = st.selectbox(
            _("Span"), range(len(spans)), format_func=shown.__getitem__, key=f"{KEY}.span.{fresh}"
        )
        codes = list(taxonomy.codes)
        kind = st.selectbox(
            _("New type (empty: keep it)"),
            codes,
            index=None,
            placeholder=_("keep the type"),
            format_func=lambda c: names.get(c, c),
            key=f"{KEY}.type.{fresh}",
        )
        text = st.text_input(_("Korean text it covers (empty: keep it)"), key=f"{KEY}.ko.{fresh}")
        occurrence = st.number_input(_("Occurrence in the turn"), 1, 20, 1, key=f"{KEY}.at.{fresh}")
        comment = st.text_area(
            _("New comment (empty: keep it)"), max_chars=MAX_COMMENT, key=f"{KEY}.note.{fresh}"
        )
        drop = st.checkbox(_("Remove its comment"), key=f"{KEY}.drop.{fresh}")
        if not st.form_submit_button(_("Change the span")):
            return
    old = spans[int(which or 0)]
    try:
        ko = old.ko
        if text.strip():
            position = old.ko.position
            turn = turn_text(sheet.dialogue, "ko", position)
            start, end = find(turn, text.strip(), int(occurrence))
            ko = side_at(sheet.dialogue, "ko", position, start, end)
    except AnnotationError as err:
        st.error(md(str(err)), icon=":material/error:")
        return
    kept = "" if drop else (comment.strip() or old.comment)
    new = Span(
        ko=ko, type=kind or old.type, en=old.en, no_counterpart=old.no_counterpart, comment=kept
    )
    edited = [new if s is old else s for s in spans]
    if sheet.save(edited):
        st.rerun()
