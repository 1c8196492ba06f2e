"""The gap by adaptation: where the linguists' annotation meets the scores.

Shown on two sections' pages, so it lives here: the Empathy gap page's breakdown by
adaptation category and cultural-signal type, and the Adaptation page's similarity per
category with "does drift predict adaptation?". Both read one annotation project's final
answers, never a mix of projects.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.core import auth, computed, resources, state, tables
from components.core.literal import md
from koed_core import i18n
from koed_core.annotation.taxonomy import CATEGORIES
from koed_core.db import JudgeConfig, Store
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import N_, _
from koed_core.results import adaptation_gaps, score_sources
from koed_core.results.figures import METRIC_ORDER, breakdown_figure
from koed_core.results.viewer import Viewer
from koed_core.text import csv_safe


def category_name(code: str | None) -> str:
    """A category as people read it (the code stays in exports)."""
    return _(CATEGORIES[code]) if code in CATEGORIES else _("not chosen")


def adaptation_section(dataset: Dataset, departures: pd.DataFrame) -> None:
    """On the Adaptation page: does drift predict the linguists' category, and where
    does the gap sit? From one annotation project's final answers."""
    annotations = resources.annotations()
    projects = [p for p in annotations.projects() if p["dataset_sha256"] == dataset.sha256]
    if not projects:
        st.caption(
            _(
                "Linguists' annotations of the adaptation (category, cultural signals) "
                "appear here once an annotation project has final answers (Annotation "
                "projects page)."
            )
        )
        return
    st.subheader(_("Similarity against the linguists' category"))
    names = {p["id"]: f"{p['id']}: {p['name']}" for p in projects}
    project_id = st.selectbox(
        _("Annotation project"),
        list(names),
        format_func=names.__getitem__,
        key="adaptation.similarity.project",
    )
    final = annotations.final(project_id, dataset)
    table = adaptation_gaps.similarity_by_category(departures, final)
    if table.empty:
        st.info(_("No dialogue of this project has a final category yet."))
    else:
        tables.show(table.assign(category=table["category"].map(category_name)), hide_index=True)
        drift = adaptation_gaps.drift_predicts(departures, final)
        if drift["auc"] is None:
            st.caption(
                _(
                    "Does drift predict adaptation? Needs both simply-transferred and "
                    "context-modified dialogues ({n} decided so far).",
                    n=int(drift["dialogues"]),
                )
            )
        else:
            st.caption(
                _(
                    "Does drift predict adaptation? ROC AUC of low mean similarity for "
                    "context-modified against simply-transferred: **{auc}** (95% CI {low} to "
                    "{high}, bootstrap over {n} dialogues; 0.5 is chance).",
                    auc=i18n.number(drift["auc"], 2),
                    low=i18n.number(drift["ci_low"], 2),
                    high=i18n.number(drift["ci_high"], 2),
                    n=int(drift["dialogues"]),
                )
            )
    store = resources.store()
    choice = score_sources.choose_judge(store)
    gap_by_adaptation(store, choice.config if choice else None, None, dataset, auth.viewer())


def gap_by_adaptation(
    store: Store, judge: JudgeConfig | None, study: int | None, dataset: Dataset, viewer: Viewer
) -> None:
    """The gap per adaptation category and per cultural-signal type, from one annotation
    project's final answers (only when a project on this dataset has some)."""
    annotations = resources.annotations()
    projects = [p for p in annotations.projects() if p["dataset_sha256"] == dataset.sha256]
    finals = {p["id"]: annotations.final(p["id"], dataset) for p in projects}
    projects = [p for p in projects if finals[p["id"]]["category"].notna().any()]
    if not projects:
        return
    with st.expander(_("The gap by adaptation (linguists' annotations)"), expanded=False):
        names = {p["id"]: f"{p['id']}: {p['name']}" for p in projects}
        left, mid, right = st.columns(3)
        project_id = left.selectbox(
            _("Annotation project"),
            list(names),
            format_func=names.__getitem__,
            key=state.BREAKDOWN_PROJECT,
        )
        project = next(p for p in projects if p["id"] == project_id)
        by = mid.radio(
            _("Broken down by"),
            [adaptation_gaps.BY_CATEGORY, adaptation_gaps.BY_TYPE],
            format_func=i18n.choices(BREAKDOWN_NAMES).__getitem__,
            key=state.BREAKDOWN_BY,
            horizontal=True,
        )
        scores = computed.score_frame(store, judge, study, viewer)
        scores = scores[scores["dataset_sha256"] == dataset.sha256]
        table = adaptation_gaps.breakdown(scores, finals[project_id], by, project)
        final = finals[project_id]
        st.caption(
            _(
                "{n} of {total} dialogues of the project have a final answer (the reviewer's, "
                "else the annotators' when they agree); only those count. Each row is a "
                "paired KoED-ED gap with a bootstrap 95% CI, from one source; taxonomy "
                "{version}.",
                n=int(final["category"].notna().sum()),
                total=len(final),
                version=md(project["taxonomy_version"]),
            )
        )
        if table.empty:
            st.info(_("No dialogue with a final answer has scores in both languages yet."))
            return
        # the page's own source first (the Gap page's choice, else the judge)
        page_source = st.session_state.get(state.GAP_SOURCE)
        order = [page_source, "judge", "raters", "emotion"]
        sources = sorted(set(table["source"]), key=lambda s: order.index(s) if s in order else 9)
        source = (
            st.segmented_control(
                _("Scores from"),
                sources,
                default=sources[0],
                key=state.BREAKDOWN_SOURCE,
                format_func=i18n.choices(SOURCE_NAMES).__getitem__,
            )
            or sources[0]
        )
        part = table[table["source"] == source]
        if by == adaptation_gaps.BY_CATEGORY:  # in words on screen; the CSV keeps the codes
            part = part.assign(
                category=part["category"].map(i18n.choices(SHORT_CATEGORY)).fillna(part["category"])
            )
        metrics = [m for m in METRIC_ORDER if m in set(part["metric"])]
        metrics += sorted(set(part["metric"]) - set(metrics))
        metric = right.selectbox(_("Metric"), metrics, key=state.BREAKDOWN_METRIC)
        named = {
            "judge": _("judge {judge}", judge=judge.spoken) if judge else _("judge"),
            "raters": _("study {id}", id=study),
            "emotion": _("emotion recognition"),
        }
        subtitle = _(
            "{source}; annotation project {project}",
            source=named.get(source, source),
            project=names[project_id],
        )
        title = _("The gap by {breakdown}", breakdown=_(BREAKDOWN_NAMES[by]))
        st.plotly_chart(
            breakdown_figure(part, by, metric, title, subtitle),
            width="stretch",
            theme=None,
        )
        # what tells the rows apart first: the group, the metric, the run
        shown = [by, "metric", "run_label", "pairs", "en", "ko", "gap", "ci_low", "ci_high"]
        tables.show(
            part[part["metric"] == metric][[c for c in shown if c in part]],
            hide_index=True,
            column_config={
                by: _(BREAKDOWN_NAMES[by]),
                "run_label": _("run"),
                "ci_low": _("95% CI low"),
                "ci_high": _("95% CI high"),
            },
        )
        st.download_button(
            _("Download the table (CSV)"),
            csv_safe.to_csv(table),
            file_name=f"adaptation_gaps-{project_id}.csv",
            mime="text/csv",
            key=f"adaptation.csv.{project_id}",
        )


SHORT_CATEGORY = {
    "simply_transferred": N_("simply transferred"),
    "context_modified": N_("context modified"),
    "handcrafted": N_("handcrafted (jeong/han)"),
}
BREAKDOWN_NAMES = {"category": N_("adaptation category"), "signal_type": N_("cultural-signal type")}
SOURCE_NAMES = {"judge": N_("judge"), "raters": N_("raters"), "emotion": N_("emotion recognition")}
