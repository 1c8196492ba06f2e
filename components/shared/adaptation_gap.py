"""The gap by adaptation: where the linguists' annotation meets the scores.

Shown on two sections' pages, so it lives here: the Empathy gap page's breakdown by
adaptation category and cultural-signal type, and the Adaptation page's similarity per
category with "does drift predict adaptation?". Both read one annotation project's final
answers, never a mix of projects.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.shared import auth, computed, resources, state, tables
from components.shared.literal import md
from koed_core import csv_safe
from koed_core.annotation.taxonomy import CATEGORIES
from koed_core.db import JudgeConfig, Store
from koed_core.dialogues.dataset import Dataset
from koed_core.results import adaptation_gaps, score_sources
from koed_core.results.figures import METRIC_ORDER, breakdown_figure


def category_name(code: str | None) -> str:
    """A category as people read it (the code stays in exports)."""
    return CATEGORIES.get(code or "", "not chosen") if code else "not chosen"


def adaptation_section(dataset: Dataset, departures: pd.DataFrame) -> None:
    """On the Adaptation page: does drift predict the linguists' category, and where
    does the gap sit? From one annotation project's final answers."""
    annotations = resources.annotations()
    projects = [p for p in annotations.projects() if p["dataset_sha256"] == dataset.sha256]
    if not projects:
        st.caption(
            "Linguists' annotations of the adaptation (category, cultural signals) appear "
            "here once an annotation project has final answers (Annotation projects page)."
        )
        return
    st.subheader("Similarity against the linguists' category")
    names = {p["id"]: f"{p['id']}: {p['name']}" for p in projects}
    project_id = st.selectbox(
        "Annotation project",
        list(names),
        format_func=names.__getitem__,
        key="adaptation.similarity.project",
    )
    final = annotations.final(project_id, dataset)
    table = adaptation_gaps.similarity_by_category(departures, final)
    if table.empty:
        st.info("No dialogue of this project has a final category yet.")
    else:
        tables.show(table.assign(category=table["category"].map(category_name)), hide_index=True)
        drift = adaptation_gaps.drift_predicts(departures, final)
        if drift["auc"] is None:
            st.caption(
                "Does drift predict adaptation? Needs both simply-transferred and "
                f"context-modified dialogues ({md(drift['dialogues'])} decided so far)."
            )
        else:
            st.caption(
                f"Does drift predict adaptation? ROC AUC of low mean similarity for "
                "context-modified against simply-transferred: "
                f"**{md(format(drift['auc'], '.2f'))}** (95% CI "
                f"{md(format(drift['ci_low'], '.2f'))} to {md(format(drift['ci_high'], '.2f'))}, "
                f"bootstrap over {md(drift['dialogues'])} dialogues; 0.5 is chance)."
            )
    store = resources.store()
    choice = score_sources.choose_judge(store)
    gap_by_adaptation(
        store, choice.config if choice else None, None, dataset, blind=not auth.is_admin()
    )


def gap_by_adaptation(
    store: Store, judge: JudgeConfig | None, study: int | None, dataset: Dataset, blind: bool
) -> None:
    """The gap per adaptation category and per cultural-signal type, from one annotation
    project's final answers (only when a project on this dataset has some)."""
    annotations = resources.annotations()
    projects = [p for p in annotations.projects() if p["dataset_sha256"] == dataset.sha256]
    finals = {p["id"]: annotations.final(p["id"], dataset) for p in projects}
    projects = [p for p in projects if finals[p["id"]]["category"].notna().any()]
    if not projects:
        return
    with st.expander("The gap by adaptation (linguists' annotations)", expanded=False):
        names = {p["id"]: f"{p['id']}: {p['name']}" for p in projects}
        left, mid, right = st.columns(3)
        project_id = left.selectbox(
            "Annotation project",
            list(names),
            format_func=names.__getitem__,
            key=state.BREAKDOWN_PROJECT,
        )
        project = next(p for p in projects if p["id"] == project_id)
        by = mid.radio(
            "Broken down by",
            [adaptation_gaps.BY_CATEGORY, adaptation_gaps.BY_TYPE],
            format_func=BREAKDOWN_NAMES.__getitem__,
            key=state.BREAKDOWN_BY,
            horizontal=True,
        )
        scores = computed.score_frame(store, judge, study, blind=blind)
        scores = scores[scores["dataset_sha256"] == dataset.sha256]
        table = adaptation_gaps.breakdown(scores, finals[project_id], by, project)
        final = finals[project_id]
        st.caption(
            f"{int(final['category'].notna().sum())} of {len(final)} dialogues of the project "
            "have a final answer (the reviewer's, else the annotators' when they agree); only "
            "those count. Each row is a paired KoED-ED gap with a bootstrap 95% CI, from one "
            f"source; taxonomy {md(project['taxonomy_version'])}."
        )
        if table.empty:
            st.info("No dialogue with a final answer has scores in both languages yet.")
            return
        sources = sorted(set(table["source"]))
        source = (
            st.segmented_control(
                "Scores from", sources, default=sources[0], key=state.BREAKDOWN_SOURCE
            )
            or sources[0]
        )
        part = table[table["source"] == source]
        if by == adaptation_gaps.BY_CATEGORY:  # in words on screen; the CSV keeps the codes
            part = part.assign(
                category=part["category"].map(SHORT_CATEGORY).fillna(part["category"])
            )
        metrics = [m for m in METRIC_ORDER if m in set(part["metric"])]
        metrics += sorted(set(part["metric"]) - set(metrics))
        metric = right.selectbox("Metric", metrics, key=state.BREAKDOWN_METRIC)
        named = {
            "judge": f"judge {judge.spoken}" if judge else "judge",
            "raters": f"study {study}",
            "emotion": "emotion recognition",
        }
        subtitle = f"{named.get(source, source)}; annotation project {names[project_id]}"
        st.plotly_chart(
            breakdown_figure(part, by, metric, f"The gap by {BREAKDOWN_NAMES[by]}", subtitle),
            width="stretch",
            theme=None,
        )
        tables.show(table.drop(columns=["run_id"]), hide_index=True)
        st.download_button(
            "Download the table (CSV)",
            csv_safe.to_csv(table),
            file_name=f"adaptation_gaps-{project_id}.csv",
            mime="text/csv",
            key=f"adaptation.csv.{project_id}",
        )


SHORT_CATEGORY = {
    "simply_transferred": "simply transferred",
    "context_modified": "context modified",
    "handcrafted": "handcrafted (jeong/han)",
}
BREAKDOWN_NAMES = {"category": "adaptation category", "signal_type": "cultural-signal type"}
