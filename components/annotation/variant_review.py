"""The Annotate page's variant review: a linguist reads a sample of a translated variant,
source beside translation, and accepts or edits each turn."""

from __future__ import annotations

import streamlit as st

from components.core import resources, state
from components.core.literal import md
from koed_core import i18n
from koed_core.annotation.variant_review import (
    ReviewError,
    accept,
    edit,
    review_report,
    review_sample,
    review_turns,
)
from koed_core.db.variants import Variants
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import _
from koed_core.models.variant_texts import read_variant

SAMPLE_SIZE = 20
"""Dialogues in a review sample: the same for every reviewer (seed 0)."""


def review_variants(dataset: Dataset, who: str) -> None:
    """An expander with the review, when a variant exists (nothing otherwise)."""
    store = resources.store()
    names = sorted({v.variant for v in Variants(store).versions()})
    if not names:
        return
    with st.expander(_("Check a translated variant"), expanded=False):
        variant = st.selectbox(_("Variant"), names, key=state.REVIEW_VARIANT)
        translated = read_variant(store, dataset.dialogues, variant).dialogues
        sample = review_sample(translated, SAMPLE_SIZE)
        if not sample:
            st.caption(_("This variant translates none of the loaded dataset's dialogues."))
            return
        _report(variant)
        conv_id = st.selectbox(_("Dialogue"), sample, key=state.REVIEW_DIALOGUE)
        dialogue = dataset.get(conv_id)
        if dialogue is not None:
            _turns(dialogue, variant, who)


def _report(variant: str) -> None:
    report = review_report(resources.store(), variant)
    st.caption(
        _(
            "{checked} turns checked by people: {accepted} accepted, {edited} edited.",
            checked=i18n.number(report.turns_checked),
            accepted=i18n.number(report.accepted),
            edited=i18n.number(report.edited),
        )
    )
    if report.chrf is not None:
        st.caption(
            _(
                "chrF of the model's translation against the checked text, over "
                "{n} turns: {chrf} (100: nothing changed).",
                n=i18n.number(report.model_turns_checked),
                chrf=i18n.number(round(report.chrf, 1)),
            )
        )


def _turns(dialogue, variant: str, who: str) -> None:  # type: ignore[no-untyped-def]
    store = resources.store()
    for item in review_turns(store, dialogue, variant):
        left, right = st.columns(2)
        left.markdown(md(item.source))
        key = state.review_text(variant, dialogue.conv_id, item.turn)
        text = right.text_area(
            _("Turn {n}", n=i18n.number(item.turn + 1)), item.translation, key=key
        )
        keep, save = right.columns(2)
        try:
            if keep.button(_("Accept"), key=f"{key}.accept"):
                accept(store, dialogue, variant, item.turn, who)
                st.toast(_("Accepted"))
            elif save.button(_("Save edit"), key=f"{key}.edit"):
                edit(store, dialogue, variant, item.turn, text, who)
                st.session_state.pop(key, None)
                st.toast(_("Saved as the variant's next version"))
                st.rerun()
        except ReviewError as err:
            st.error(md(str(err)))
