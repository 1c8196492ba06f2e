"""Finding work on the Annotate page: filters over the dialogue picker, the picker itself,
and "My spans" across the project's dialogues, each opening its dialogue.

The numbers come from ``koed_core.annotation.worklist`` (one annotator's own answers and
the partners' progress only, so nothing here can show another annotator's answer).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from components.annotation import picker
from components.annotation.span_form import type_name
from components.core import state, tables
from components.core.literal import md
from components.shared.adaptation_gap import category_name
from koed_core import i18n
from koed_core.annotation.projects import DRAFT, SUBMITTED, AnnotationRules
from koed_core.annotation.taxonomy import CATEGORIES, Taxonomy
from koed_core.annotation.worklist import (
    NEW,
    NO_CATEGORY,
    Filters,
    matching,
    my_spans,
    text_or_none,
    worklist,
)
from koed_core.db.types import short_hash
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import N_, _

FILTER_STATUS = "annotate.filter.status"
FILTER_CATEGORY = "annotate.filter.category"
FILTER_TYPE = "annotate.filter.type"
DROPPED = "annotate.filter.dropped"
"""The open dialogue a filter left out, the filters then, and the match shown instead."""
SPANS_TYPE = "annotate.my_spans.type"
SPANS_PICK = "annotate.my_spans.pick"
MATCHES = "annotate.filter.matches"
"""The dialogues the filters let through on the page's last full run: "My spans" is drawn
with the span part (a fragment, so its count follows an add) and opens one through them."""
STATUS_NAMES = {NEW: N_("new"), DRAFT: N_("draft"), SUBMITTED: N_("submitted")}


def _filters(taxonomy: Taxonomy) -> Filters:
    """Three filters in a row above the picker; none chosen keeps every dialogue."""
    left, middle, right = st.columns(3)
    statuses = left.multiselect(
        _("Your status"),
        list(STATUS_NAMES),
        format_func=i18n.choices(STATUS_NAMES).__getitem__,
        key=FILTER_STATUS,
        placeholder=_("any"),
    )
    categories = {code: category_name(code) for code in CATEGORIES}
    categories[NO_CATEGORY] = category_name(None)
    chosen = middle.multiselect(
        _("Your category"),
        list(categories),
        format_func=categories.__getitem__,
        key=FILTER_CATEGORY,
        placeholder=_("any"),
    )
    names = {kind.code: type_name(kind) for kind in taxonomy.types}
    types = right.multiselect(
        _("A span of yours of type"),
        list(names),
        format_func=names.__getitem__,
        key=FILTER_TYPE,
        placeholder=_("any"),
    )
    return Filters.of(statuses, chosen, types)


def _clear_filters(conv_id: str | None = None) -> None:
    """A button's callback: every filter off (and this dialogue open again)."""
    for key in (FILTER_STATUS, FILTER_CATEGORY, FILTER_TYPE):
        st.session_state[key] = []
    st.session_state.pop(DROPPED, None)
    if conv_id is not None:
        picker.go_to(conv_id)


def _open(conv_id: str, shown: bool) -> None:
    """A button's callback: open this dialogue; filters that hide it are cleared first."""
    if not shown:
        _clear_filters()
    st.session_state.pop(DROPPED, None)
    picker.go_to(conv_id)


def _drop_out(choices: list[str], matches: list[str], filters: Filters) -> None:
    """When the filters leave out the dialogue open now, open the first match instead and
    remember which one was left out (said under the picker while these filters stay)."""
    now = st.session_state.get(state.ANN_ITEM)
    if now in choices and now not in matches:
        st.session_state[DROPPED] = {
            "conv_id": now,
            "filters": filters.signature,
            "shown": matches[0],
        }
        picker.go_to(matches[0])


def _say_dropped(slot: Any, picked: str, filters: Filters) -> None:
    held = st.session_state.get(DROPPED)
    if not held or held["filters"] != filters.signature or held["shown"] != picked:
        return
    slot.info(
        _(
            "{conv_id}, open before, is not among the dialogues these filters leave: "
            "showing the first that matches, {first}.",
            conv_id=md(held["conv_id"]),
            first=md(picked),
        ),
        icon=":material/filter_alt:",
    )
    slot.button(
        _("Clear the filters and go back to {conv_id}", conv_id=md(held["conv_id"])),
        on_click=_clear_filters,
        args=(held["conv_id"],),
        key="annotate.filter.back",
    )


def find_work(
    annotations: AnnotationRules, project: dict[str, Any], dataset: Dataset, who: str
) -> str | None:
    """The filters, the picker and "My spans"; returns the dialogue to show, or None when
    nothing is left (or nothing matches), having said so."""
    work = worklist(annotations, project["id"], who)
    mine = work[work["open"]]
    choices = [str(c) for c in mine["conv_id"]]
    if not choices:
        st.success(_("Nothing left for you in this project."))
        return None
    taxonomy = annotations.taxonomy(project)
    filters = _filters(taxonomy)
    matches = matching(mine, filters)
    if not matches:
        st.info(_("No dialogue of yours matches these filters."), icon=":material/filter_alt_off:")
        st.button(_("Clear the filters"), on_click=_clear_filters, key="annotate.filter.clear")
        _spans_panel(annotations, project, dataset, who, taxonomy, matches)
        return None
    _drop_out(choices, matches, filters)
    upcoming = annotations.next_item(project["id"], who)
    labels = picker.item_label(mine, dataset, int(project["per_item"]))
    if filters.active:
        st.caption(
            _(
                "{n} of {total} dialogues match the filters.",
                n=i18n.number(len(matches)),
                total=i18n.number(len(choices)),
            )
        )
    conv_id = picker.dialogue_picker(matches, labels, upcoming)
    _say_dropped(st.container(), conv_id, filters)
    if upcoming and upcoming != conv_id and upcoming in matches:
        st.button(_("Go to the next one to do"), on_click=picker.go_to, args=(upcoming,))
    st.session_state[MATCHES] = matches  # "My spans" is drawn with the spans (spans_panel)
    return conv_id


def _span_key(r: Any) -> str:
    return f"{r.conv_id}|{r.position}|{r.start}|{r.end}|{r.type}"


def spans_panel(
    annotations: AnnotationRules, project: dict[str, Any], dataset: Dataset, who: str
) -> None:
    """ "My spans" beside an open dialogue: drawn in the span part of the page, so an add
    there counts at once; opening another dialogue runs the whole page."""
    matches = st.session_state.get(MATCHES, [])
    _spans_panel(annotations, project, dataset, who, annotations.taxonomy(project), matches)


def _spans_panel(
    annotations: AnnotationRules,
    project: dict[str, Any],
    dataset: Dataset,
    who: str,
    taxonomy: Taxonomy,
    matches: list[str],
) -> None:
    """Every span of yours in this project, filterable by type; one opens its dialogue."""
    spans = my_spans(annotations, project["id"], who, dataset)
    with st.expander(_("My spans in this project ({n})", n=i18n.number(len(spans)))):
        if spans.empty:
            st.caption(_("You have not marked any span in this project yet."))
            return
        names = {kind.code: type_name(kind) for kind in taxonomy.types}
        offered = [*names, *sorted(set(spans["type"]) - set(names))]  # codes it lacks too
        types = st.multiselect(
            _("Only spans of type"),
            offered,
            format_func=lambda code: names.get(code, code),
            key=SPANS_TYPE,
            placeholder=_("any"),
        )
        shown = spans[spans["type"].isin(types)] if types else spans
        status = i18n.choices(STATUS_NAMES)
        none = _("(no counterpart)")
        table = pd.DataFrame(
            {
                _("dialogue"): shown["conv_id"],
                _("situation"): shown["situation"],
                _("turn"): shown["position"],
                _("Korean"): shown["ko"],
                _("English"): [text_or_none(v) or none for v in shown["en"]],
                _("type"): [names.get(c, c) for c in shown["type"]],
                _("your status"): [status.get(s, s) for s in shown["status"]],
            }
        )
        tables.show(table, hide_index=True)
        rows = {
            _span_key(r): _(
                "{conv_id} · turn {position}: {text} [{type}]",
                conv_id=r.conv_id,
                position=r.position,
                text=r.ko,
                type=names.get(r.type, r.type),
            )
            for r in shown.itertuples()
        }
        left, right = st.columns([4, 1], vertical_alignment="bottom")
        key = left.selectbox(  # keyed by its choices, as the picker is (picker.py)
            _("Open the dialogue of a span"),
            list(rows),
            format_func=rows.__getitem__,
            key=f"{SPANS_PICK}.{short_hash(*rows)}",
        )
        conv_id = str(key).rsplit("|", 4)[0] if key else None
        opened = right.button(
            _("Open this dialogue"),
            key="annotate.my_spans.open",
            on_click=_open,  # a callback: the filters' widgets may only be reset before a run
            args=(conv_id, conv_id in matches),
            disabled=conv_id is None,
        )
        if opened:  # drawn in a fragment: the picker and the dialogue are outside it
            st.rerun(scope="app")
