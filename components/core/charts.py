"""Plotly figures built from the long-form tables koed_core returns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from components.core import terms
from koed_core.dialogues.labels import gloss
from koed_core.i18n import _
from koed_core.results.figures import FONT


def label_frequency_chart(freq: pd.DataFrame) -> go.Figure:
    """Horizontal bars, one per label, most frequent on top, gloss in the hover."""
    shown = freq.iloc[::-1].assign(shown=lambda f: f["label"].map(terms.label))
    fig = px.bar(
        shown,
        x="dialogues",
        y="shown",  # with its Korean gloss on a Korean page, as every label chip
        orientation="h",
        custom_data=["label", "gloss", "share"],
        text="dialogues",
        title=_("How many dialogues carry each label"),
    )
    fig.update_traces(
        marker_color="#c2410c",
        textangle=0,
        textposition="outside",
        hovertemplate="%{customdata[0]} · %{customdata[1]}<br>"
        + _("dialogues")
        + ": %{x} (%{customdata[2]:.1%})<extra></extra>",
    )
    fig.update_layout(
        height=820,
        font_family=FONT,
        yaxis_title=None,
        xaxis_title=_("dialogues"),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def cooccurrence_heatmap(matrix: pd.DataFrame) -> go.Figure:
    """34 x 34 counts of labels given together; the diagonal is each label alone.

    The colour scale is set by the pairings, not by the diagonal (each label's own count,
    several times larger), so the real co-occurrences are not washed out; diagonal cells
    show their number in the hover and saturate.
    """
    ticks = [f"{name} {gloss(name)}" for name in matrix.index]
    values = matrix.to_numpy()
    off_diagonal = values[~np.eye(len(values), dtype=bool)] if len(values) > 1 else values
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=ticks,
            y=ticks,
            zmin=0,
            zmax=max(1, int(off_diagonal.max())) if off_diagonal.size else None,
            colorscale="Oranges",
            hovertemplate="%{y} + %{x}: %{z} " + _("dialogues") + "<extra></extra>",
        )
    )
    fig.update_layout(
        title=_(
            "Which labels are given together (colours scaled to the pairings; diagonal: "
            "dialogues with the label)"
        ),
        height=900,
        font_family=FONT,
        yaxis_autorange="reversed",
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    # 34 labels with their gloss ("anticipating 기대하는") side by side overlapped at
    # Plotly's slant and were cut at the bottom: upright, each is one line's height
    # wide, and the margins grow to hold the longest (automargin)
    fig.update_xaxes(tickangle=-90, automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def similarity_histogram(departures: pd.DataFrame) -> go.Figure:
    """Distribution of per-dialogue mean ko/en similarity."""
    fig = px.histogram(
        departures.dropna(subset=["mean_similarity"]),
        x="mean_similarity",
        nbins=40,
        title=_("Mean ko/en similarity per dialogue (low = rewritten more)"),
        labels={"mean_similarity": _("mean similarity"), "count": _("dialogues")},
    )
    fig.update_layout(yaxis_title=_("dialogues"))
    fig.update_traces(marker_color="#0f766e")
    fig.update_layout(height=320, font_family=FONT, margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig


def confusion_heatmap(counts: pd.DataFrame, dimension: str) -> go.Figure:
    """Judge score (rows) against the rounded human median (columns), with counts."""
    fig = go.Figure(
        go.Heatmap(
            z=counts.to_numpy(),
            x=[str(c) for c in counts.columns],
            y=[str(r) for r in counts.index],
            colorscale="Blues",
            text=counts.to_numpy(),
            texttemplate="%{text}",
            hovertemplate=_(
                "judge {judge}, people {people}: {n}", judge="%{y}", people="%{x}", n="%{z}"
            )
            + "<extra></extra>",
        )
    )
    fig.update_layout(
        title=_("{dimension}: judge score against the human median", dimension=dimension),
        xaxis_title=_("human median (rounded)"),
        yaxis_title=_("judge score"),
        height=420,
        font_family=FONT,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig
