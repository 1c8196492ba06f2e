"""The planner's second way to grow a study: an active batch (``koed study plan --build
--active``), drawn with known probabilities that favour the dialogues the judge is least
sure of (koed_core.results.active_batch)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from components.core import resources, state
from components.core.literal import md
from koed_core import i18n
from koed_core.db import JudgeConfig, StudyConfig
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.results import active_batch

OWN_SAMPLES = -1
"""The uncertainty choice "the judge's own strict-mode samples" (else: a second judge's index)."""


def render_active_batch(
    study_id: int, config: StudyConfig, uses: list[Any], judge: int, size: int
) -> None:
    """Say what an active batch of about ``size`` dialogues does, offer where the judge's
    doubt is read from, and add it on the button (PPI++'s planned size: ``size``)."""
    st.caption(
        _(
            "Or an active batch: about {n} dialogues ({ratings} ratings), the size PPI++ "
            "plans, drawn at random with known probabilities that favour the dialogues "
            "the judge is least sure of. Each dialogue's probability is stored with the "
            "study and the estimates weight by it; the number drawn varies around {n}.",
            n=i18n.number(size),
            ratings=i18n.number(size * 2 * config.overlap),
        )
    )
    others = [i for i in range(len(uses)) if i != judge]
    source = st.selectbox(
        _("Where the judge is unsure"),
        [OWN_SAMPLES, *others],
        format_func=_source_words(uses),
        key=state.STUDIES_PLAN_UNSURE,
        help=_(
            "Its own strict-mode samples (judged two or more times per response), or how "
            "far its gap lies from a second judge configuration's on each dialogue."
        ),
    )
    grows = config.sampling.method in active_batch.GROWS_ACTIVELY
    if not grows:
        st.caption(
            _(
                "An active batch follows a uniform random sample or an earlier active batch; "
                "this study's dialogues were chosen otherwise."
            )
        )
    label = _("Add an active batch of about {n} dialogues", n=i18n.number(size))
    if st.button(label, disabled=not grows or size == 0):
        second = uses[source].config if source != OWN_SAMPLES else None
        _add(study_id, uses[judge].config, size, second)


def _source_words(uses: list[Any]) -> Any:
    words = {OWN_SAMPLES: _("the judge's own strict-mode samples")}
    words |= {
        i: _("disagreement with {judge}", judge=use.config.label) for i, use in enumerate(uses)
    }
    return words.__getitem__


def _add(study_id: int, judge: JudgeConfig, size: int, second: JudgeConfig | None) -> None:
    try:
        batch = active_batch.add_active_batch(resources.store(), study_id, judge, size, second)
    except KoedError as err:
        st.error(md(str(err)))
        return
    probabilities = batch.rows["probability"]
    st.success(
        _(
            "Added {added} dialogues (about {n} planned), drawn with known probabilities; "
            "inclusion probabilities from {low} to {high} stored for {count} dialogues.",
            added=i18n.number(len(batch.added)),
            n=i18n.number(size),
            low=i18n.number(float(probabilities.min()), 3),
            high=i18n.number(float(probabilities.max()), 3),
            count=i18n.number(len(probabilities)),
        )
    )
