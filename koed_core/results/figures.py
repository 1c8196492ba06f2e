"""Figures that leave the app (the export, slides), built with plotly only.

Colours are chosen to survive a projector: strong hues, the provenance groups far apart
(blues for western models, oranges for Korean-centric, grey for other, black for the
human reference), white background, large type in talk mode. Korean text uses Nanum
Gothic when installed (Debian's fonts-nanum), so exported PNGs show Hangul.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from koed_core.i18n import N_, _, stored_word
from koed_core.models.protocol import protocol_name
from koed_core.models.registry import PROVENANCE
from koed_core.results.sensitivity import NOISE_FLOOR, NOISE_FLOORS
from koed_core.text import plain_text

NOISE_GREY = "#6b7280"
"""The noise-floor bar and its band: not a step, the yardstick the steps are read against."""
FONT = "NanumGothic, Noto Sans CJK KR, Malgun Gothic, sans-serif"
PROVENANCE_COLOURS = {
    "western": ["#1d4ed8", "#3b82f6", "#1e3a8a", "#60a5fa"],
    "korean-centric": ["#c2410c", "#f97316", "#9a3412", "#fb923c"],
    "other": ["#6b7280", "#9ca3af", "#374151"],
}
PROMPT_SET_WORDS = {"paper": N_("as in the paper"), "native": N_("dialogue-language")}
"""The shipped prompt sets as a chart names them (a set of one's own: its name)."""
METRIC_WORDS = {
    "emotion": N_("emotion recognition"),
    "emotion (answered)": N_("emotion recognition (answered only)"),
}
"""The emotion metrics as a Korean chart names them (the rubric's codes stay codes)."""


def metric_name(metric: str) -> str:
    """A metric as a chart's axis says it: its stored name on an English page (what the
    export's column holds), its words on a Korean one."""
    return stored_word(metric, METRIC_WORDS)


METRIC_ORDER = ["EX", "IP", "ER", "EEA", "CA", "emotion", "emotion (answered)"]


def run_label(
    model: str, provenance: str, protocol: str | None = None, reference: bool = False
) -> str:
    """How a run is named on every chart and picker: "gpt-4o (western, single)",
    "human (human reference)"."""
    kind = _("human reference") if reference else _(PROVENANCE.get(provenance, provenance))
    return f"{model} ({kind}, {protocol_name(protocol)})" if protocol else f"{model} ({kind})"


def gap_figure(
    table: pd.DataFrame, title: str, talk: bool = False, subtitle: str | None = None
) -> go.Figure:
    """Grouped bars: Korean minus English per metric, one bar per model, with 95% CIs.

    ``subtitle`` names the source (judge configuration, study) on its own line, so a long
    provenance never pushes the title out of the frame. Axis titles keep their distance
    from the tick labels (automargin), in the app and in exported PNG and SVG alike.
    """
    fig = go.Figure()
    if table.empty:
        fig.add_annotation(text=_("No scores in both languages yet"), showarrow=False, font_size=20)
        fig.update_layout(
            title=_title(_plain(title), _plain(subtitle) if subtitle else None, 20),
            font_family=FONT,
            template="plotly_white",
        )
        return fig
    order = {"western": 0, "korean-centric": 1, "other": 2}
    several = table.groupby("model")["run_id"].nunique()
    prompt_sets = (
        table.groupby(["model", "protocol"])["prompt_set"].nunique()
        if "prompt_set" in table
        else None
    )
    models = (
        table[["run_id", "model", "provenance", "protocol", "reference"]]
        .drop_duplicates()
        .assign(
            rank=lambda f: f["reference"].astype(int) * 10 + f["provenance"].map(order).fillna(3)
        )
        .sort_values(["rank", "model"])
    )
    used: dict[str, int] = {}
    names_used: set[str] = set()
    for model in models.itertuples():
        rows = table[table["run_id"] == model.run_id].copy()
        rows["order"] = rows["metric"].map({m: i for i, m in enumerate(METRIC_ORDER)})
        rows = rows.sort_values("order")
        # A model run under several protocols gets one bar per protocol, named so.
        protocol = f", {model.protocol}" if several[model.model] > 1 else ""
        label_protocol = model.protocol if protocol else None
        if prompt_sets is not None and prompt_sets.get((model.model, model.protocol), 1) > 1:
            # the same model and protocol under two prompt sets: instruction language compared
            prompt_set = rows["prompt_set"].iloc[0]
            label_protocol = _(
                "{protocol}, {prompts} prompts",
                protocol=protocol_name(model.protocol),
                prompts=stored_word(prompt_set, PROMPT_SET_WORDS),
            )
        name = run_label(model.model, model.provenance, label_protocol, model.reference)
        if name in names_used and "run_label" in rows:
            name = str(rows["run_label"].iloc[0])  # alike on every shown setting: the full label
        names_used.add(name)
        name = _plain(name)
        if model.reference:
            colour = "#111827"
        else:
            palette = PROVENANCE_COLOURS.get(model.provenance, PROVENANCE_COLOURS["other"])
            colour = palette[used.get(model.provenance, 0) % len(palette)]
            used[model.provenance] = used.get(model.provenance, 0) + 1
        fig.add_bar(
            x=[metric_name(m) for m in rows["metric"]],
            y=rows["gap"],
            name=name,
            marker_color=colour,
            # an outline in the bar's colour: a gap of exactly 0 still shows, as a line
            marker_line={"color": colour, "width": 3},
            error_y={
                "type": "data",
                "symmetric": False,
                # no CI (fewer than two pairs): no whisker rather than a fake one
                "array": pd.to_numeric(rows["ci_high"], errors="coerce") - rows["gap"],
                "arrayminus": rows["gap"] - pd.to_numeric(rows["ci_low"], errors="coerce"),
                "thickness": 2,
            },
            customdata=rows[["en", "ko", "pairs"]].to_numpy(),
            hovertemplate="%{x}: gap %{y:.2f}<br>en %{customdata[0]:.2f}, ko %{customdata[1]:.2f}"
            "<br>%{customdata[2]} dialogues<extra>%{fullData.name}</extra>",
        )
    size = 22 if talk else 14
    fig.update_layout(
        title=_title(_plain(title), _plain(subtitle) if subtitle else None, size + 6),
        barmode="group",
        font_family=FONT,
        font_size=size,
        plot_bgcolor="white",
        paper_bgcolor="white",
        separators=".,",
        yaxis={
            "title": {"text": _("Korean minus English"), "standoff": 14},
            "automargin": True,
            "zeroline": True,
            "zerolinewidth": 3,
            "zerolinecolor": "#111827",
            "gridcolor": "#e5e7eb",
        },
        xaxis={"automargin": True},
        # On a page: beside the bars, in view whenever they are. In a talk and in exported
        # images: one row under the bars, so the bars keep the width of the slide.
        legend=(
            {"orientation": "h", "x": 0, "y": -0.12, "xanchor": "left", "yanchor": "top"}
            if talk
            else {"x": 1.01, "y": 1, "xanchor": "left", "yanchor": "top"}
        ),
        showlegend=True,
        height=500 if talk else 480,  # the talk page fits 1280x720 under its title
        margin={"l": 60, "r": 20, "t": 110 if subtitle else 80, "b": 40},
    )
    return fig


def _title(text: str, subtitle: str | None, size: int) -> dict[str, object]:
    title: dict[str, object] = {
        "text": text,
        "font": {"size": size},
        "x": 0.01,
        "xanchor": "left",
    }
    if subtitle:
        title["subtitle"] = {"text": subtitle, "font": {"size": max(12, size - 8)}}
    return title


def _plain(text: str) -> str:
    """Plotly reads a few HTML tags in labels: names from a plan or models.toml (a variant,
    a run label, a model id) are shown as written, tags and all, on one line (a control
    character or line break never reaches the SVG)."""
    return plain_text.chart(text)


def sensitivity_figure(
    table: pd.DataFrame, metric: str, title: str, subtitle: str | None = None
) -> go.Figure:
    """What moves the gap: one bar per changed step, its paired change of the KoED-ED gap
    from the authors' pipeline, with its 95% CI; zero is drawn, so "no effect" reads."""
    rows = table[(table["metric"] == metric) & table["change"].notna()]
    fig = go.Figure()
    if rows.empty:
        fig.add_annotation(text=_("No variant with scores in both languages"), showarrow=False)
    else:
        rows = rows.sort_values("change")
        fig.add_bar(
            x=rows["change"],
            y=[_plain(str(v)) for v in rows["variant"]],
            orientation="h",
            marker_color=[
                NOISE_GREY if name in NOISE_FLOORS else "#c2410c" if v < 0 else "#1d4ed8"
                for name, v in zip(rows["variant"], rows["change"], strict=True)
            ],
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (rows["change_ci_high"] - rows["change"]).fillna(0),
                "arrayminus": (rows["change"] - rows["change_ci_low"]).fillna(0),
            },
            text=[f"{v:+.2f}" for v in rows["change"]],
            textposition="outside",
            cliponaxis=False,
            hovertemplate="%{y}: %{x:+.2f}<extra></extra>",
        )
        fig.add_vline(x=0, line_color="#111827", line_width=1)
        floor = rows[rows["variant"] == NOISE_FLOOR]
        if not floor.empty and floor["change_ci_low"].notna().all():
            # what judging the same answers again alone moves: read every bar against it
            fig.add_vrect(
                x0=float(floor["change_ci_low"].iloc[0]),
                x1=float(floor["change_ci_high"].iloc[0]),
                fillcolor=NOISE_GREY,
                opacity=0.18,
                line_width=0,
                layer="below",
            )
        # room on both sides of zero for the bars' values (a +0.00 is not cut at the edge)
        low = float(min(0.0, (rows["change_ci_low"].fillna(rows["change"])).min()))
        high = float(max(0.0, (rows["change_ci_high"].fillna(rows["change"])).max()))
        pad = max(0.25, 0.25 * (high - low))
        fig.update_xaxes(range=[low - pad, high + pad])
    fig.update_layout(
        title=_title(_plain(title), _plain(subtitle) if subtitle else None, 18),
        font_family=FONT,
        template="plotly_white",
        xaxis_title=_(
            "change of the KoED-ED gap in {metric} (variant minus authors' pipeline)",
            metric=metric,
        ),
        yaxis={"automargin": True},
        margin={"l": 20, "r": 60, "t": 90, "b": 60},
        height=120 + 48 * max(len(rows), 1),
        showlegend=False,
    )
    return fig


def turn_gap_figure(
    table: pd.DataFrame,
    metric: str,
    title: str,
    subtitle: str | None = None,
    talk: bool = False,
) -> go.Figure:
    """The gap over turns: one line per episode run, the paired KoED-ED gap at each
    Listener turn with its 95% CI; zero drawn, and the pairs behind each point in its
    hover (later turns have fewer: episodes end)."""
    rows = table[table["metric"] == metric].sort_values("turn")
    fig = go.Figure()
    if rows.empty:
        fig.add_annotation(text=_("No turn with scores in both languages"), showarrow=False)
    for label, line in rows.groupby("run_label", sort=True):
        fig.add_scatter(
            x=line["turn"],
            y=line["gap"],
            mode="lines+markers",
            name=_plain(str(label)),
            error_y={
                "type": "data",
                "symmetric": False,
                "array": (line["ci_high"] - line["gap"]).fillna(0),
                "arrayminus": (line["gap"] - line["ci_low"]).fillna(0),
            },
            customdata=line["pairs"],
            hovertemplate="turn %{x}: %{y:+.2f} (%{customdata} pairs)<extra></extra>",
        )
    fig.add_hline(y=0, line_color="#111827", line_width=1)
    size = 26 if talk else 18
    fig.update_layout(
        title=_title(_plain(title), _plain(subtitle) if subtitle else None, size),
        font_family=FONT,
        font_size=20 if talk else 13,
        template="plotly_white",
        xaxis={"title": _("Listener turn in the episode"), "dtick": 1},
        yaxis_title=_("KoED minus ED, {metric}", metric=metric),
        showlegend=True,  # one run is named too
        legend={"orientation": "h", "y": -0.25, "x": 0},
        margin={"l": 60, "r": 30, "t": 90, "b": 40},
    )
    return fig


def breakdown_figure(
    table: pd.DataFrame, by: str, metric: str, title: str, subtitle: str
) -> go.Figure:
    """Bars of the Korean-minus-English gap per group (adaptation category or signal
    type), one bar per run, with 95% CIs: where does the gap sit?

    A gap of exactly 0 is a result, not a missing bar: every bar has an outline and its
    value written at its end, and the run is always named in the legend (even alone)."""
    fig = go.Figure()
    part = table[table["metric"] == metric]
    used: dict[str, int] = {}
    for label, rows in part.groupby("run_label", sort=True, dropna=False):
        if pd.isna(label):  # a table from before run labels: the run's id names it
            label = str(rows["run_id"].iloc[0]) if "run_id" in rows else _("run")
        low = (rows["gap"] - rows["ci_low"]).where(rows["ci_low"].notna(), 0)
        high = (rows["ci_high"] - rows["gap"]).where(rows["ci_high"].notna(), 0)
        provenance = str(rows["provenance"].iloc[0]) if "provenance" in rows else "other"
        palette = PROVENANCE_COLOURS.get(provenance, PROVENANCE_COLOURS["other"])
        colour = palette[used.get(provenance, 0) % len(palette)]
        used[provenance] = used.get(provenance, 0) + 1
        fig.add_bar(
            x=[_plain(str(group)) for group in rows[by]],
            y=rows["gap"],
            name=_plain(str(label)),
            marker_color=colour,
            marker_line={"color": colour, "width": 3},
            text=[f"{value:+.2f}" for value in rows["gap"]],
            textposition="outside",
            cliponaxis=False,
            error_y={"type": "data", "array": high, "arrayminus": low},
            customdata=rows["pairs"],
            hovertemplate=_("%{x}: %{y:.2f} over %{customdata} pairs")
            + "<extra>%{fullData.name}</extra>",
        )
    fig.add_hline(y=0, line_color="#111827", line_width=2)
    fig.update_layout(
        title=_title(_plain(title), _plain(subtitle), 18),
        font_family=FONT,
        template="plotly_white",
        barmode="group",
        yaxis_title=_("{metric}: Korean minus English", metric=metric),
        legend_title_text=_("run"),
        showlegend=True,
    )
    return fig
