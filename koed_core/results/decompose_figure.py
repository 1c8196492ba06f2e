"""The "Language or culture?" picture: per metric, the language effect at each content,
the content effect in each language and the total gap, each with its 95% interval."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from koed_core.i18n import N_, _
from koed_core.results.figures import FONT, METRIC_ORDER

EFFECT_WORDS = {
    ("language_effect", "western_content"): N_("Language effect, Western content"),
    ("language_effect", "korean_content"): N_("Language effect, Korean content"),
    ("language_effect", "average_over_content"): N_("Language effect, averaged over content"),
    ("content_effect", "in_english"): N_("Content effect, in English"),
    ("content_effect", "in_korean"): N_("Content effect, in Korean"),
    ("content_effect", "average_over_language"): N_("Content effect, averaged over language"),
    ("interaction", ""): N_("Interaction"),
    ("total_gap", ""): N_("Total gap (Korean minus English)"),
}
"""Each effect as a reader names it, on the chart and in the table."""
SHOWN = (
    ("language_effect", "western_content", "#93c5fd"),
    ("language_effect", "korean_content", "#1d4ed8"),
    ("content_effect", "in_english", "#fdba74"),
    ("content_effect", "in_korean", "#c2410c"),
    ("total_gap", "", "#111827"),
)
"""The bars drawn (the averages and the interaction stay in the table): light for the
Western/English side of each effect, strong for the Korean side."""


def decompose_figure(effects: pd.DataFrame, title: str, talk: bool = False) -> go.Figure:
    """Grouped bars per metric with 95% intervals, from one model's rows of
    :func:`koed_core.results.decompose.decompose`'s ``effects``."""
    fig = go.Figure()
    order = {m: i for i, m in enumerate(METRIC_ORDER)}
    for effect, held, colour in SHOWN:
        rows = effects[(effects["effect"] == effect) & (effects["held_fixed"] == held)]
        rows = rows.sort_values("metric", key=lambda s: s.map(order).fillna(len(order)))
        has_ci = rows["ci_low"].notna()
        fig.add_bar(
            name=_(EFFECT_WORDS[(effect, held)]),
            x=rows["metric"],
            y=rows["estimate"],
            marker_color=colour,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": (rows["ci_high"] - rows["estimate"]).where(has_ci, 0),
                "arrayminus": (rows["estimate"] - rows["ci_low"]).where(has_ci, 0),
            },
        )
    size = 22 if talk else 14
    fig.update_layout(
        barmode="group",
        title=title,
        font_family=FONT,
        font_size=size,
        template="plotly_white",
        yaxis_title=_("difference in mean score"),
        legend={"orientation": "h", "y": -0.2},
    )
    fig.add_hline(y=0, line_color="#6b7280", line_width=1)
    return fig
