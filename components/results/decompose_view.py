"""The Empathy gap page's "Language or culture?" section: the gap split into what the
language changes and what the cultural content changes, for runs with the four cells."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components.core import tables
from components.core.literal import md
from koed_core import i18n
from koed_core.annotation.variant_review import review_report
from koed_core.db import Store
from koed_core.db.variants import Variants
from koed_core.dialogues.variants import CELLS
from koed_core.i18n import _
from koed_core.results.decompose import Decomposition, decompose
from koed_core.results.decompose_figure import EFFECT_WORDS, decompose_figure

SOURCE_OF_CHOICE = {"judge + raters": "judge"}
"""The page's "judge + raters" choice splits the judge's scores (one source at a time)."""


def _split(frame: pd.DataFrame, chosen: str) -> Decomposition:
    """The decomposition per run (its label as the model) from the chosen source."""
    source = SOURCE_OF_CHOICE.get(chosen, chosen)
    part = frame[(frame["source"] == source) & frame["lang"].isin(CELLS)]
    return decompose(part.assign(model=part["run_label"]))


def talk_figures(frame: pd.DataFrame, chosen: str) -> list[go.Figure]:
    """Talk mode's picture of the split, beside the gap: the first run with four cells
    (none when no run has them)."""
    result = _split(frame, chosen)
    if result.effects.empty:
        return []
    run = sorted(set(result.effects["model"]))[0]
    effects = result.effects[result.effects["model"] == run]
    return [decompose_figure(effects, _("Language or culture? 95% intervals"), talk=True)]


def language_or_culture(store: Store, frame: pd.DataFrame, chosen: str) -> None:
    """The four cell means and every effect with its 95% interval, per run that answered
    all four cells, from the scores the page chose (``frame`` is the viewer's already)."""
    st.subheader(_("Language or culture?"), anchor=False)
    result = _split(frame, chosen)
    if result.effects.empty:
        st.caption(
            _(
                "No run has scores in all four cells yet. Translate the variants "
                "(`koed translate run --variant en-from-ko --model MODEL`, and ko-from-en), "
                "then run the model with `--lang ko,en,en-from-ko,ko-from-en` and score it."
            )
        )
        return
    st.caption(
        _(
            "Each KoED dialogue changes two things at once: the language and the content (the "
            "Korean reconstruction against the Western original). With the two translated "
            "variants, the gap splits into a language effect and a content effect. Over the "
            "dialogues scored in all four cells, paired by dialogue, with 95% intervals: "
            "language effect (Western content) + content effect (Korean) = content effect "
            "(English) + language effect (Korean content) = total gap. A translated cell's "
            "text is a translation: unless people checked it, its quality is part of the "
            "language effect."
        )
    )
    _provenance(store)
    runs = sorted(set(result.effects["model"]))
    run = st.selectbox(_("Run"), runs) if len(runs) > 1 else runs[0]
    effects = result.effects[result.effects["model"] == run]
    st.plotly_chart(
        decompose_figure(effects, _("Language or culture? 95% intervals")),
        width="stretch",
        theme=None,
    )
    cells = result.cells[result.cells["model"] == run]
    wide = cells.pivot_table(index="metric", columns="lang", values="mean")[list(CELLS)]
    tables.show(wide.reset_index(), hide_index=True)
    names = zip(effects["effect"], effects["held_fixed"], strict=True)
    shown = effects.assign(effect=[_(EFFECT_WORDS[key]) for key in names])
    shown = shown[["metric", "effect", "estimate", "ci_low", "ci_high", "n"]]
    tables.show(shown, hide_index=True)


def _provenance(store: Store) -> None:
    """Each variant's newest version, who made its latest change, and how many of its
    turns people have checked."""
    for variant in ("en-from-ko", "ko-from-en"):
        version = Variants(store).latest(variant)
        if version is None:
            continue
        checked = review_report(store, variant).turns_checked
        said = _(
            "{variant} v{version}, its latest change by {who}; {checked} turns checked by "
            "people (Annotate page)",
            variant=variant,
            version=i18n.number(version.version),
            who=(version.model if version.made_by == "model" else version.translator) or "",
            checked=i18n.number(checked),
        )
        st.caption(md(said))
