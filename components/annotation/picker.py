"""The Annotate page's dialogue picker: which dialogue, your status and your partners'.

Kept apart from the span work (annotation_view) so each module stays small.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from components.core import state
from koed_core.annotation.projects import DRAFT, SUBMITTED
from koed_core.annotation.worklist import NEW, first_words, partner_status, text_or_none
from koed_core.db.types import short_hash
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import N_, _

YOURS = {NEW: N_("new"), DRAFT: N_("draft"), SUBMITTED: N_("submitted")}
"""An annotator's own status on a dialogue, and a partner's, as the picker says it."""
PARTNER = {NEW: N_("not started"), DRAFT: N_("draft"), SUBMITTED: N_("submitted")}


def _partners(row: Any, need: int) -> str | None:
    """The other annotators' progress, counts only (never who, nor what they answered):
    one partner by their status, several as counts; None with nobody else to wait on."""
    others = need - 1
    done, drafting = int(row.others_submitted), int(row.others_drafting)
    if others < 1:
        return None
    if others == 1:
        return _("partner: {status}", status=_(PARTNER[partner_status(done, drafting)]))
    return _(
        "others: {submitted} of {others} submitted, {drafting} drafting",
        submitted=done,
        others=others,
        drafting=drafting,
    )


def item_label(work: pd.DataFrame, dataset: Dataset, need: int) -> dict[str, str]:
    """conv_id -> how the picker shows it: the situation's first words, your status, and
    the partners' progress (``koed_core.annotation.worklist.worklist``: counts only)."""
    out = {}
    for r in work.itertuples():
        yours = text_or_none(r.yours) or NEW
        dialogue = dataset.get(r.conv_id)
        mine = _(
            "{conv_id} · {words}… · yours: {status}",
            conv_id=r.conv_id,
            words=first_words(dialogue.situation_ko if dialogue else ""),
            status=_(YOURS[yours]) if yours in YOURS else yours,
        )
        partners = _partners(r, need)
        out[r.conv_id] = mine if partners is None else f"{mine} · {partners}"
    return out


def dialogue_picker(choices: list[str], labels: dict[str, str], upcoming: str | None) -> str:
    """The dialogue picker. The choice is kept in ``state.ANN_ITEM``; the widget is keyed
    by its labels and by how often :func:`go_to` has opened a dialogue, so a changed label
    ("yours: new" becoming "draft" after a span was saved, caught in Chromium) or a
    dialogue opened from elsewhere makes a new widget. A new widget gets the choice as its
    ``index``, which every run of the script sends with the widget: the value set through
    the session state went out with one run only, and a browser that drew a later run
    first (a busy machine) showed the first dialogue under another one's heading."""
    chosen = st.session_state.get(state.ANN_ITEM)
    if chosen not in choices:
        chosen = upcoming if upcoming in choices else choices[0]
    opened = int(st.session_state.get(state.ANN_OPENED, 0))
    widget = f"{state.ANN_ITEM}.{opened}.{short_hash(*[labels[c] for c in choices])}"
    picked = st.selectbox(
        _("Dialogue"),
        choices,
        index=choices.index(chosen),
        format_func=labels.__getitem__,
        key=widget,
    )
    st.session_state[state.ANN_ITEM] = picked
    return str(picked)


def go_to(conv_id: str) -> None:
    """Open this dialogue (a button's callback, before the picker is drawn): a picker
    under a new key, which opens on it."""
    for key in [k for k in st.session_state if str(k).startswith(state.ANN_ITEM + ".")]:
        del st.session_state[key]  # the old picker's value: nothing left to come back to
    st.session_state[state.ANN_OPENED] = int(st.session_state.get(state.ANN_OPENED, 0)) + 1
    st.session_state[state.ANN_ITEM] = conv_id
