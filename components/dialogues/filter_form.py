"""The explorer's filter widgets, bound to the URL so a shared link opens the same view."""

from __future__ import annotations

from typing import cast

import streamlit as st

from components.core import state
from components.core.link_notice import linked_choice
from components.core.literal import md
from koed_core.dialogues.filters import (
    MODE_TEXT,
    ORIGIN_TEXT,
    DialogueFilter,
    FilterIndex,
    MatchMode,
    Origin,
)
from koed_core.dialogues.labels import by_name, label_names
from koed_core.i18n import N_, _

KO_ONLY_CHOICES = {"any": None, "with": True, "without": False}
KO_ONLY_WORDS = {"any": N_("any"), "with": N_("with"), "without": N_("without")}
MODE_WORDS = {"all": N_("all"), "exact": N_("exact"), "any": N_("any of them")}
ORIGIN_WORDS = {  # the link keeps the short codes; a newcomer reads what they are
    "any": N_("any"),
    "korean": N_("written for KoED (jeong, han)"),
    "ed": N_("adapted from EmpatheticDialogues"),
}
BIND = "query-params"


def filter_form(index: FilterIndex) -> DialogueFilter:
    """Draw the filters in the sidebar and return what they say.

    The link holds codes (``afraid``, ``exact``, ``ed``) in either language: the label
    picker's options are the codes, with their wording in a caption; the radios show
    words in the reader's language and write their codes (``linked_choice``).
    """
    bar = st.sidebar
    bar.header(_("Filter dialogues"))
    # Typing "sad" + Enter picks sad: label names match by their start, and there is no
    # "select every match" entry for Enter to take first.
    labels = bar.multiselect(
        _("Emotion labels"),
        label_names(),
        key=state.LABELS,
        bind=BIND,
        placeholder=_("Any emotion"),
        filter_mode="prefix",
        select_all=False,
    )
    if labels:
        bar.caption(md(" · ".join(by_name()[name].display for name in labels)))
    mode = linked_choice(
        bar,
        _("Match"),
        list(MODE_TEXT),
        state.MODE,
        MODE_WORDS,
        horizontal=True,
        help=_(
            "all: the dialogue has every chosen label (maybe more). exact: its label set "
            "is the chosen set. any: it has at least one of them."
        ),
    )
    origin = linked_choice(
        bar,
        _("Records"),
        list(ORIGIN_TEXT),
        state.ORIGIN,
        ORIGIN_WORDS,
        help=_(
            "Written for KoED: the 80 jeong and han dialogues, new in KoED. Adapted from "
            "EmpatheticDialogues: the others, reconstructions of English dialogues."
        ),
    )
    text = bar.text_input(
        _("Text contains"),
        key=state.TEXT,
        bind=BIND,
        placeholder=_("e.g. a Korean word, or grandmother"),
        help=_("Searches situations and turns in both languages."),
    )
    low, high = min(index.n_turns, default=1), max(index.n_turns, default=1)
    turns = (low, high)
    if high > low:
        turns = bar.slider(_("Number of turns"), low, high, (low, high), key=state.TURNS, bind=BIND)
    ko_only = linked_choice(
        bar,
        _("Korean-only turns"),
        list(KO_ONLY_CHOICES),
        state.KO_ONLY,
        KO_ONLY_WORDS,
        horizontal=True,
        help=_("Turns the reconstruction added with no English original."),
    )
    return DialogueFilter(
        labels=frozenset(labels),
        mode=cast(MatchMode, mode),
        origin=cast(Origin, origin),
        text=text,
        min_turns=turns[0] if turns[0] > low else None,
        max_turns=turns[1] if turns[1] < high else None,
        ko_only_turns=KO_ONLY_CHOICES[ko_only],
    )
