"""The Empathy gap page's pieces below the chart: the paper's table and the downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import computed, resources, tables
from components.literal import md
from koed_core import csv_safe
from koed_core.db import JudgeConfig, Store
from koed_core.results.figures import gap_figure


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
