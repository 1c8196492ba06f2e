"""The span controls beside the widget: a selection typed from the keyboard, the Add form
and removing several spans at once (the widget's panel does the same for one span), and
how a signal type is named in them."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components.annotation import span_actions, span_edit
from components.core import state
from components.core.literal import md
from koed_core import i18n
from koed_core.annotation.spans import Side, Span, find, side_at, turn_text
from koed_core.annotation.taxonomy import AnnotationError, SignalType, Taxonomy
from koed_core.db.types import short_hash
from koed_core.dialogues.adaptation import SITUATION_POSITION
from koed_core.dialogues.dialogue import Dialogue
from koed_core.i18n import _


def type_name(kind: SignalType) -> str:
    """A signal type as people read it: both names, the page's language first."""
    return f"{kind.ko}({kind.en})" if i18n.language() == "ko" else kind.label


def _typed_selection(dialogue: Dialogue, pending: dict[str, Any]) -> None:
    """The keyboard way: name the turn and type the text (found in code points)."""
    with (
        st.expander(_("Mark a span by typing it (keyboard, or when dragging is awkward)")),
        st.form("annotate.typed", border=False),
    ):
        positions = [SITUATION_POSITION, *(t.position for t in dialogue.turns)]
        position = st.selectbox(
            _("Turn"), positions, key=state.ANN_TYPED_TURN, help=_("0 is the situation")
        )
        ko = st.text_input(_("Korean text, exactly as in the turn"), key=state.ANN_TYPED_KO)
        occurrence = st.number_input(
            _("Which occurrence"), min_value=1, max_value=50, value=1, key=state.ANN_TYPED_AT
        )
        en = st.text_input(
            _("English counterpart in the same turn (empty: none chosen)"),
            key=state.ANN_TYPED_EN,
        )
        if st.form_submit_button(_("Select these")):
            try:
                start, end = find(turn_text(dialogue, "ko", position), ko, int(occurrence))
                pending["ko"] = side_at(dialogue, "ko", position, start, end).as_dict()
                if en:
                    es, ee = find(turn_text(dialogue, "en", position), en)
                    pending["en"] = side_at(dialogue, "en", position, es, ee).as_dict()
            except AnnotationError as err:
                st.error(md(str(err)), icon=":material/error:")


def _side(raw: dict[str, Any] | None) -> Side | None:
    return Side(raw["position"], raw["start"], raw["end"], raw["text"]) if raw else None


def other_ways(sheet: span_actions.Sheet, pending: dict[str, Any]) -> None:
    """The keyboard-typed selection, the Add form and removing several spans at once."""
    dialogue, taxonomy, spans = sheet.dialogue, sheet.taxonomy, list(sheet.spans)
    _typed_selection(dialogue, pending)
    ko, en = _side(pending["ko"]), _side(pending["en"])
    if ko or en:
        st.button(
            _("Clear the selection"), on_click=pending.update, kwargs={"ko": None, "en": None}
        )
    left, right = st.columns(2)
    with left:
        st.markdown("**" + _("Korean span") + "**")
        st.text(_turn_text(ko) if ko else _("(select text in a Korean turn)"))
    with right:
        st.markdown("**" + _("English counterpart") + "**")
        st.text(_turn_text(en) if en else _("(none selected)"))
    codes = list(taxonomy.codes)
    last = st.session_state.get(state.ANN_LAST_TYPE)
    with st.form("annotate.add", border=True, clear_on_submit=True):
        kind = st.selectbox(
            _("Signal type"),
            codes,
            index=codes.index(last) if last in codes else 0,  # emptied, it keeps the type
            format_func=_type_labels(taxonomy).__getitem__,
            # keyed by the last type: an emptied form's widget goes back to the default it
            # was first made with, so a new last type needs a new widget
            key=f"{state.ANN_TYPE}.{last}",
            help=_type_help(taxonomy),
        )
        none = st.checkbox(_("No English counterpart"), key=state.ANN_NONE)
        if st.form_submit_button(_("Add span"), disabled=False):
            st.session_state[state.ANN_LAST_TYPE] = kind  # kept after an error too
            if ko is None:
                st.error(_("Select a span in a Korean turn first."))
            else:
                new = Span(ko=ko, type=kind, en=None if none else en, no_counterpart=none)
                if sheet.save([*spans, new]):
                    sheet.remember("add", new)
                    pending.update(ko=None, en=None)
                    st.rerun()
    if spans:
        labels = [
            _(
                "{n}. turn {position}: {text} ({type})",
                n=i + 1,
                position=s.ko.position,
                text=s.ko.text,
                type=s.type,
            )
            for i, s in enumerate(spans)
        ]
        gone = st.multiselect(
            _("Remove spans"),
            range(len(spans)),
            format_func=labels.__getitem__,
            placeholder=_("Choose the spans to remove"),
            # A fresh key whenever the spans change: a choice never points at another span.
            key=f"{state.ANN_REMOVE}.{short_hash([s.key for s in spans])}",
        )
        if gone and st.button(_("Remove the chosen spans")):
            kept_spans = [s for i, s in enumerate(spans) if i not in set(gone)]
            if sheet.save(kept_spans):
                for i in sorted(set(gone)):
                    sheet.remember("remove", spans[i])
                st.rerun()
    names = {kind.code: type_name(kind) for kind in taxonomy.types}
    span_edit.change_form(sheet, names)


def widget_types(taxonomy: Taxonomy) -> list[dict[str, str]]:
    """The types as the span panel offers them: code, name, and its guideline."""
    return [
        {
            "code": kind.code,
            "label": type_name(kind),
            "short": kind.ko if i18n.language() == "ko" else kind.en,
            "guide": kind.guide(i18n.language()),
            "examples": examples_line(kind),
        }
        for kind in taxonomy.types
    ]


def examples_line(kind: SignalType) -> str:
    """A type's examples on one line: "편의점 → a convenience store · 부산 → Chicago"."""
    return " · ".join(f"{ko} → {en}" if en else ko for ko, en in kind.examples)


def guidelines_panel(taxonomy: Taxonomy) -> None:
    """Every type's guideline (the page's language first, then the other) and examples,
    one click away while annotating. Texts are the taxonomy file's, shown literally."""
    first = i18n.language()
    other = "en" if first == "ko" else "ko"
    with st.expander(_("Guidelines (every signal type, with examples)"), expanded=False):
        st.caption(_("Taxonomy {version}", version=md(taxonomy.version)))
        for kind in taxonomy.types:
            st.markdown(f"**{md(kind.ko if first == 'ko' else type_name(kind))}**")
            own = kind.guide_ko if first == "ko" else kind.guide_en
            theirs = kind.guide_ko if other == "ko" else kind.guide_en
            st.text(own or kind.hint)
            if theirs and theirs != own:
                st.text(theirs)
            if kind.examples:
                st.text(_("e.g. {examples}", examples=examples_line(kind)))


def _turn_text(side: Side) -> str:
    return _("turn {position}: {text}", position=side.position, text=side.text)


def _type_labels(taxonomy: Taxonomy) -> dict[str, str]:
    """Each type as the picker shows it. In English the name with its hint, as the file
    wrote them; in Korean both names only (a file's hints are in one language, the shipped
    file's in English), the hints being in the picker's help."""
    english = i18n.language() == "en"
    return {
        kind.code: f"{kind.label}: {kind.hint}" if english and kind.hint else type_name(kind)
        for kind in taxonomy.types
    }


def _type_help(taxonomy: Taxonomy) -> str | None:
    if i18n.language() == "en":
        return None
    return (
        "  \n".join(
            f"**{md(type_name(kind))}**: {md(kind.hint)}" for kind in taxonomy.types if kind.hint
        )
        or None
    )
