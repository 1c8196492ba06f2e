"""The gap anchored in people (Gap page) and "Is the gap a judge artefact?" (Agreement
page): one study and one judge configuration, estimated three ways, PPI++ named as such
in every caption, chart title and file."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.core import computed, state, tables
from components.core.literal import md
from koed_core.db import JudgeConfig, Store
from koed_core.i18n import N_, _
from koed_core.results import ppi, ppi_table, score_sources
from koed_core.results.figures import gap_figure
from koed_core.results.viewer import Viewer
from koed_core.text import csv_safe

NUMBER = st.column_config.NumberColumn(format="%.3f")
STILL_OPEN = N_(
    "This study is still being rated: its numbers are published here once an admin closes it."
)


def _estimates(
    store: Store, judge: JudgeConfig, study: int, viewer: Viewer
) -> ppi_table.GapEstimates | None:
    """The kept estimates (numbers, and sentences in English), in the reader's words;
    None: computed once for every visitor, and its bar is drawn meanwhile."""
    kept = computed.gap_estimates(store, study, judge, viewer)
    return None if kept is None else ppi_table.in_reader_words(kept)


def _kept_english(
    store: Store, study: int, judge: JudgeConfig, viewer: Viewer
) -> ppi_table.GapEstimates:
    """The kept result as stored (English, as a file is): read after the page drew it."""
    kept = computed.gap_estimates(store, study, judge, viewer)
    assert kept is not None  # the page showed it this run: kept under the same stamp
    return kept


def _design_caption(store: Store, result: ppi_table.GapEstimates, study: int) -> None:
    st.caption(
        _(
            "{study}: {design}. People: a rated item's score is the mean of its k ratings; "
            "a dialogue's gap is its Korean item's score minus its English one's. PPI++ from "
            "ppi-python {version}: the judge on the dialogues nobody rated, corrected by "
            "judge minus people on the rated ones (a random sample is required).",
            study=md(score_sources.study_label(store, study)),
            design=md(result.provenance["study_sampling"]),
            version=md(result.provenance["ppi_python"]),
        )
    )


def gap_three_ways(
    store: Store, judge: JudgeConfig | None, study: int | None, viewer: Viewer
) -> None:
    """Judge only, people only and PPI++ of the gap, side by side; a chart of the chosen one."""
    st.subheader(_("The gap anchored in people: judge only, people only, PPI++"), anchor=False)
    if judge is None or study is None:
        st.caption(
            _(
                "Needs a study with ratings and a judge configuration that scored its runs: "
                "then the judge's gap is corrected by the people's on the rated sample."
            )
        )
        return
    if not viewer.allowed("see-study", study):  # hidden from you is not missing
        st.caption(_(STILL_OPEN))
        return
    result = _estimates(store, judge, study, viewer)
    if result is None:
        return
    if result.estimates.empty:
        st.caption(_("No run of this study has both judge scores and ratings yet."))
        return
    words = {name: _(word) for name, word in ppi_table.ESTIMATOR_WORDS.items()}
    estimator = st.radio(
        _("Estimate"),
        list(ppi.ESTIMATORS),
        index=2,
        format_func=words.__getitem__,
        horizontal=True,
        key=state.GAP_ESTIMATOR,
    )
    if estimator == "ppi" and result.refusal:
        st.warning(md(result.refusal))
    rows = ppi_table.gap_rows(result, estimator)
    title = _(
        "{estimator}: Korean minus English, paired by dialogue, 95% interval",
        estimator=words[estimator],
    )
    subtitle = _(
        "judge {judge} · {study}",
        judge=judge.spoken,
        study=score_sources.study_label(store, study),
    )
    if not rows.empty:
        st.plotly_chart(gap_figure(rows, title, subtitle=subtitle), width="stretch", theme=None)
    _design_caption(store, result, study)
    st.caption(
        _(
            "Shown: {estimator}. n people: dialogues rated in both languages; N judge: "
            "dialogues the judge scored in both; effective n: how many rated dialogues "
            "people alone would need for PPI++'s interval. Gain: effective n per rated "
            "dialogue; its ceiling: the most this judge's correlation with people and these "
            "counts allow; its limit: with the judge on unboundedly many dialogues. Near the "
            "ceiling, only a better judge or more judged dialogues buy more.",
            estimator=md(words[estimator]),
        )
    )
    wide = ppi_table.side_by_side(result)
    shown = wide.drop(columns=["run_id"])  # the label names the run; the CSV keeps the id
    tables.show(shown, hide_index=True, column_config=_columns(shown))
    file = ppi_table.FILE_NAMES[estimator]

    def whole() -> str:  # every interval, the means' too: computed when asked for
        full = computed.gap_estimates(store, study, judge, viewer, mean_intervals=True)
        assert full is not None  # computed here, never shared: a download waits for it
        return csv_safe.to_csv(ppi_table.for_estimator(full, estimator))

    left, right = st.columns(2)
    left.download_button(
        _("{estimator} (CSV)", estimator=words[estimator]),
        whole,
        file_name=f"koed_gap_{file}.csv",
        mime="text/csv",
    )
    english = _kept_english(store, study, judge, viewer)  # the file as drawn: made when asked

    def side_by_side() -> str:  # a file's notes in English, as exports are (the kept result's)
        wide = ppi_table.side_by_side(english)
        return csv_safe.to_csv(wide.assign(study_id=study, **judge.as_columns()))

    right.download_button(
        _("Judge only, people only and PPI++ side by side (CSV)"),
        side_by_side,
        file_name="koed_gap_judge_people_ppi.csv",
        mime="text/csv",
    )


def _columns(frame: pd.DataFrame) -> dict[str, object]:
    return {c: NUMBER for c in frame.columns if frame[c].dtype.kind == "f"}


def judge_artefact(store: Store, judge: JudgeConfig | None, study: int, viewer: Viewer) -> None:
    """The judge's gap minus the people's per run, dimension and rater group."""
    st.subheader(_("Is the gap a judge artefact?"), anchor=False)
    if judge is None:
        st.caption(_("Needs a judge configuration that scored this study's runs."))
        return
    if not viewer.allowed("see-study", study):
        st.caption(_(STILL_OPEN))
        return
    result = _estimates(store, judge, study, viewer)
    if result is None:
        return
    table = result.artefact
    if table.empty:
        st.caption(_("No dialogue has both judge scores and ratings in both languages yet."))
        return
    st.caption(
        _(
            "The judge's gap minus the people's, on the dialogues both scored in both "
            "languages, with a bootstrap 95% CI: above 0, the judge puts Korean further "
            "above English than people do. Per rater group, since whose norms count is the "
            "question."
        )
    )
    groups = {g: _(g) for g in ppi_table.RATER_GROUPS}
    group = st.segmented_control(
        _("Raters"),
        list(groups),
        default="all raters",
        format_func=groups.__getitem__,
        key=state.AGREEMENT_ARTEFACT_GROUP,
    )
    shown = table[table["rater_group"] == (group or "all raters")]
    columns = ["run_label", "metric", "judge_gap", "people_gap", "judge_minus_people"]
    columns += ["ci_low", "ci_high", "n_people", "N_judge", "note"]
    tables.show(shown[columns], hide_index=True, column_config=_columns(shown[columns]))
    st.download_button(
        _("Judge minus people, every rater group (CSV)"),
        csv_safe.to_csv(table),
        file_name="koed_judge_artefact.csv",
        mime="text/csv",
    )
