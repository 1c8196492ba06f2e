"""The Empathy gap page's "Language or culture?" section: the gap split into what the
language changes and what the cultural content changes, for runs with the four cells."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from components.core import state, tables
from components.core.literal import md
from koed_core import i18n
from koed_core.annotation.variant_review import review_report
from koed_core.db import Store
from koed_core.db.variants import Variants
from koed_core.dialogues.variants import CELLS
from koed_core.i18n import _
from koed_core.rating.sampling import refusal
from koed_core.rating.studies import StudyRules
from koed_core.results import ppi_table
from koed_core.results.decompose import Decomposition, decompose
from koed_core.results.decompose_figure import EFFECT_WORDS, decompose_figure
from koed_core.results.decompose_ppi import decompose_ppi

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


def _estimates(store: Store, frame: pd.DataFrame, study: int | None) -> dict[str, Decomposition]:
    """The split by each estimator the scores allow: the judge's always; people's and
    PPI++'s too when the study rated some run's replies in all four cells."""
    found = {"judge": _split(frame, "judge")}
    people = _split(frame, "raters")
    if study is None or people.effects.empty:
        return found
    found["human"] = people
    part = frame[frame["source"].isin(["judge", "raters"]) & frame["lang"].isin(CELLS)]
    sampling = StudyRules(store).config(study).sampling
    found["ppi"] = decompose_ppi(
        part.assign(model=part["run_label"]), dict(sampling.strata), refusal(sampling)
    )
    return found


def language_or_culture(
    store: Store, frame: pd.DataFrame, chosen: str, study: int | None = None
) -> None:
    """The four cell means and every effect with its 95% interval, per run that answered
    all four cells, from the scores the page chose (``frame`` is the viewer's already);
    when the study rated a run's replies in the four cells, judge only, people only or
    PPI++, chosen as in the gap section, with n rated and N judged."""
    st.subheader(_("Language or culture?"), anchor=False)
    found = _estimates(store, frame, study)
    estimator = None
    if len(found) > 1:
        words = {name: _(word) for name, word in ppi_table.ESTIMATOR_WORDS.items()}
        estimator = st.radio(
            _("Split from"),
            list(found),
            index=len(found) - 1,
            format_func=words.__getitem__,
            horizontal=True,
            key=state.GAP_DECOMPOSE_ESTIMATOR,
        )
        result = found[estimator]
    else:
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
    if estimator is not None:
        _counts(found, run, estimator, study)
    if effects["estimate"].notna().any():
        st.plotly_chart(
            decompose_figure(effects, _("Language or culture? 95% intervals")),
            width="stretch",
            theme=None,
        )
    cells = result.cells[result.cells["model"] == run]
    wide = cells.pivot_table(index="metric", columns="lang", values="mean")
    tables.show(wide.reindex(columns=list(CELLS)).reset_index(), hide_index=True)
    names = zip(effects["effect"], effects["held_fixed"], strict=True)
    shown = effects.assign(effect=[_(EFFECT_WORDS[key]) for key in names])
    columns = ["metric", "effect", "estimate", "ci_low", "ci_high", "n"]
    columns += [c for c in ("N_judge", "note") if c in shown.columns]
    tables.show(shown[columns], hide_index=True)


def _counts(found: dict[str, Decomposition], run: str, estimator: str, study: int | None) -> None:
    """How many dialogues each source holds in all four cells for this run (n rated, N
    judged), what the shown estimate rests on, and PPI++'s refusal if the study's design
    does not allow it."""
    rated = _dialogues(found["human"], run)
    judged = _dialogues(found["judge"], run)
    st.caption(
        md(
            _(
                "Study {study}: people rated {n} dialogues of this run in all four cells "
                "(n); the judge scored {N} (N). People only rests on the n, the judge "
                "only on the N, PPI++ on the judge's N corrected by judge minus people on "
                "the n (valid where the n are a random sample of the N).",
                study=study,
                n=i18n.number(rated),
                N=i18n.number(judged),
            )
        )
    )
    notes = found["ppi"].effects["note"].dropna() if estimator == "ppi" else pd.Series(dtype=object)
    notes = notes[notes.astype(bool)]
    if not notes.empty:
        st.warning(md(str(notes.iloc[0])))


def _dialogues(result: Decomposition, run: str) -> int:
    """The dialogues a split of this run is over (0: none in all four cells)."""
    rows = result.effects[result.effects["model"] == run]
    return int(rows["n"].max()) if not rows.empty else 0


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
