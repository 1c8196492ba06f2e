"""The Empathy gap page's pieces below the chart: the paper's table and the downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import computed, resources, state, tables
from components.literal import md
from koed_core import csv_safe
from koed_core.db import JudgeConfig, Store
from koed_core.dialogues.dataset import Dataset
from koed_core.models.runs import run_labels
from koed_core.results import adaptation_gaps
from koed_core.results.figures import (
    METRIC_ORDER,
    breakdown_figure,
    gap_figure,
    sensitivity_figure,
    turn_gap_figure,
)


def paper_table(store: Store, dataset_sha256: str, judge: JudgeConfig, blind: bool) -> None:
    """The paper's table (a row per model and protocol) for one judge configuration."""
    with st.expander("The paper's table: a row per model and protocol", expanded=False):
        paper = computed.paper_table(store, dataset_sha256, judge, blind)
        st.caption(
            "ED = English, KoED = Korean: means of the judge's scores and of emotion "
            "recognition; gap = KoED minus ED (mean of the five dimensions per dialogue, "
            f"paired), bootstrap 95% CI. Judge: {md(judge.label)}. `koed reproduce` writes the "
            "same table as CSV, Markdown and LaTeX."
        )
        tables.show(
            paper.drop(columns=[c for c in paper.columns if c.startswith("judge_")]),
            hide_index=True,
        )


def downloads(table: pd.DataFrame, source: str, title: str, subtitle: str, admin: bool) -> None:
    """The numbers under the chart, CSV, PNG and SVG; the paper export for admins.

    The images use the talk style (a slide's type sizes) and are drawn only when a
    button is pressed: building a second figure on every click cost 0.15 s."""

    def image(kind: str) -> bytes:
        fig = gap_figure(table[table["source"] == source], title, talk=True, subtitle=subtitle)
        return bytes(fig.to_image(format=kind, width=1600, height=900))

    with st.expander("Numbers behind the chart", expanded=False):
        tables.show(table, hide_index=True)
    cols = st.columns(4 if admin else 3)
    cols[0].download_button("Table (CSV)", csv_safe.to_csv(table), file_name="koed_gap.csv")
    cols[1].download_button(
        "Chart (PNG)",
        lambda: image("png"),
        file_name="koed_gap.png",
        mime="image/png",
    )
    cols[2].download_button(
        "Chart (SVG)",
        lambda: image("svg"),
        file_name="koed_gap.svg",
        mime="image/svg+xml",
    )
    if admin:  # every study's agreement and every run's configuration: admins only
        cols[3].download_button(
            "Export for a paper (zip)",
            resources.export_zip,
            file_name="koed_export.zip",
            mime="application/zip",
        )


def what_moves_the_gap(store: Store, hidden: set[str]) -> None:
    """The sensitivity chart: for a run with the authors' steps, how much each one-step
    variant stored beside it moves the gap (``plans/sensitivity.toml`` makes them)."""
    bases = [(run, judge) for run, judge in computed.sensitivity_bases(store) if run not in hidden]
    if not bases:
        return
    with st.expander("What moves the gap: each step of the pipeline changed alone"):
        labels = run_labels(store)
        named = {
            i: f"{labels.get(run, run)} · judge {judge.spoken}"
            for i, (run, judge) in enumerate(bases)
        }
        pick = st.selectbox(
            "Base (the authors' pipeline)",
            list(named),
            format_func=named.get,
            key=state.GAP_SENSITIVITY_BASE,
        )
        run_id, judge = bases[pick]
        table = computed.sensitivity_table(store, run_id, judge)
        table = table[~table["run_id"].isin(hidden)]
        metrics = [m for m in METRIC_ORDER if m in set(table["metric"])]
        metric = (
            st.segmented_control(
                "Metric", metrics, default=metrics[0], key=state.GAP_SENSITIVITY_METRIC
            )
            or metrics[0]
        )
        fig = sensitivity_figure(
            table,
            metric,
            "What moves the gap: change from the authors' pipeline, paired, 95% CI",
            subtitle=f"{labels.get(run_id, run_id)} · judge {judge.spoken}",
        )
        st.plotly_chart(fig, width="stretch", theme=None)
        st.caption(
            "Each bar is one step changed alone, with the rest as the authors had it: the "
            "gap (KoED minus ED, per dialogue) under the variant minus the gap under the "
            "authors' pipeline, over the dialogues both have, with a bootstrap 95% CI. "
            "`koed reproduce plans/sensitivity.toml` makes the variants; the same table is "
            "written as sensitivity.csv."
        )
        tables.show(table, hide_index=True)
        st.download_button(
            "Download the table (CSV)",
            csv_safe.to_csv(table),
            file_name="sensitivity.csv",
            mime="text/csv",
            key=state.GAP_SENSITIVITY_CSV,
        )


def gap_over_turns(store: Store, judge: JudgeConfig | None, study: int | None, blind: bool) -> None:
    """The gap at each Listener turn of the episode runs, per model: does it close as
    the Speaker reveals more, or widen? (Only when episodes are stored.)"""
    table = computed.turn_gap_table(store, judge, study, blind)
    if table.empty:
        return
    with st.expander("The gap over turns (multi-turn episodes)", expanded=False):
        sources = [s for s in ("judge", "raters", "emotion") if s in set(table["source"])]
        source = (
            st.segmented_control(
                "Turn gap from", sources, default=sources[0], key=state.GAP_TURN_SOURCE
            )
            or sources[0]
        )
        part = table[table["source"] == source]
        metrics = [m for m in METRIC_ORDER if m in set(part["metric"])]
        metric = (
            st.segmented_control("Metric", metrics, default=metrics[0], key=state.GAP_TURN_METRIC)
            or metrics[0]
        )
        named = {
            "judge": f"judge {judge.spoken}" if judge else "judge",
            "raters": f"study {study}",
            "emotion": "emotion named at each turn (hit rate for single, F1 for multi)",
        }
        fig = turn_gap_figure(
            part,
            metric,
            "The gap over turns: KoED minus ED at each Listener turn, paired, 95% CI",
            subtitle=named[source],
        )
        st.plotly_chart(fig, width="stretch", theme=None)
        st.caption(
            "EX, IP, ER, EEA, CA: the rubric's five dimensions (Explorations, "
            "Interpretations, Emotional Reactions, Evoked Emotion Alignment, Cultural "
            "Appropriateness). Each episode starts from the dataset's context; a simulated "
            "Speaker, told the situation and the emotion (the Listener is told neither), "
            "answers each Listener turn. At turn t only the dialogues whose episodes "
            "reached t in both languages count; the pairs are in the table. "
            "`koed episodes` makes them; the export writes this table as turn_gaps.csv."
        )
        tables.show(
            part[part["metric"] == metric].drop(columns=["run_id"]),
            hide_index=True,
            column_config={"run_label": "Run", "turn": "Turn", "pairs": "Pairs"},
        )
        st.download_button(
            "Download the table (CSV)",
            csv_safe.to_csv(table),
            file_name="turn_gaps.csv",
            mime="text/csv",
            key=state.GAP_TURN_CSV,
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
