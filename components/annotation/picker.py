"""The Annotate page's dialogue picker: which dialogue, your status and the others' count.

Kept apart from the span work (annotation_view) so each module stays small.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.annotation.annotation_view import STATUS
from components.shared import state
from koed_core.db.types import short_hash
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import _


def item_label(items: pd.DataFrame, dataset: Dataset, need: int) -> dict[str, str]:
    """conv_id -> how the picker shows it: the situation's first words, your status, and
    how many of the annotators it needs have submitted (never who, nor what)."""
    out = {}
    for r in items.itertuples():
        yours = None if pd.isna(r.yours) else str(r.yours)
        dialogue = dataset.get(r.conv_id)
        words = " ".join((dialogue.situation_ko if dialogue else "").split()[:4])
        out[r.conv_id] = _(
            "{conv_id} · {words}… · yours: {status} · submitted {n} of {need}",
            conv_id=r.conv_id,
            words=words,
            status=_(STATUS[yours]) if yours in STATUS else str(yours),
            n=int(r.submitted),
            need=need,
        )
    return out


def dialogue_picker(choices: list[str], labels: dict[str, str], upcoming: str | None) -> str:
    """The dialogue picker. Its widget is keyed by its labels: a picker whose labels
    changed under the same key kept showing the old one ("yours: new" after a span was
    saved, "draft" after Submit, caught in Chromium), so the choice itself is kept in
    ``state.ANN_ITEM`` and a new widget shows it whenever a label changes."""
    chosen = st.session_state.get(state.ANN_ITEM)
    if chosen not in choices:
        chosen = upcoming if upcoming in choices else choices[0]
    widget = f"{state.ANN_ITEM}.{short_hash(*[labels[c] for c in choices])}"
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
    """Open this dialogue (a button's callback, before the picker is drawn)."""
    for key in [k for k in st.session_state if str(k).startswith(state.ANN_ITEM + ".")]:
        del st.session_state[key]  # the picker's widget, so that it opens on this one
    st.session_state[state.ANN_ITEM] = conv_id
