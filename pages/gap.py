"""The cultural empathy gap: Korean minus English per model, grouped by provenance."""

import streamlit as st

from components import resources
from components.source_banner import load_or_stop
from components.talk import talk_toggle
from koed_core import agreement_data, gaps
from koed_core.figures import gap_figure

st.title("The cultural empathy gap")
talk = talk_toggle()
source, dataset = load_or_stop()
store = resources.store()
judges = agreement_data.judges(store)
frame = gaps.score_frame(store)
if frame.empty:
    st.info(
        "No scores yet, so no gap to show. Run a model in both languages, then judge it:\n\n"
        "`koed run --model smollm2 --lang ko,en --limit 20`  \n"
        "`koed judge --run RUN_ID --judge NAME`\n\n"
        "Emotion-recognition gaps appear as soon as a `single` or `multi` run is stored; "
        "rater gaps once a study is rated."
    )
    st.stop()

left, mid, right = st.columns(3)
sources = [s for s in ("judge", "raters", "emotion") if s in set(frame["source"])]
if {"judge", "raters"} <= set(sources):
    sources.insert(2, "judge + raters")
chosen = left.segmented_control("Scores from", sources, default=sources[0], key="gap.source")
if judges and chosen in ("judge", "judge + raters"):
    labels = [f"{m} ({mode})" for m, mode in judges]
    pick = mid.selectbox("Judge", range(len(judges)), format_func=labels.__getitem__)
    frame = gaps.score_frame(store, *judges[pick])
breakdowns = {"none": None, "per emotion label": "label", "jeong/han vs the rest": "group"}
split = right.selectbox("Breakdown", list(breakdowns), key="gap.breakdown")
by = breakdowns[split]
groups = (
    gaps.label_groups(dataset.dialogues)
    if by == "label"
    else gaps.korean_groups(dataset.dialogues)
    if by == "group"
    else None
)
shown = ["judge", "raters"] if chosen == "judge + raters" else [chosen]
table = gaps.gap_table(frame[frame["source"].isin(shown)], groups, by)
if table.empty:
    st.info(
        "No dialogue has scores in both languages for this choice yet. Run the model "
        "with `--lang ko,en` (both languages) and judge or rate both."
    )
    st.stop()

suffix = ""
if by:
    group = st.selectbox(split.capitalize(), sorted(table[by].unique()), key="gap.group")
    table = table[table[by] == group]
    suffix = f" · {group}"
figures = [
    gap_figure(
        table[table["source"] == source],
        f"Korean minus English ({source}), paired by dialogue, 95% CI{suffix}",
        talk=talk,
    )
    for source in shown
]
for column, fig in zip(st.columns(len(figures)), figures, strict=True):
    # theme=None keeps the projector styling instead of the app theme
    column.plotly_chart(fig, width="stretch", theme=None)
fig = figures[0]
if not talk:
    with st.expander("Numbers behind the chart", expanded=False):
        st.dataframe(table, hide_index=True)
    cols = st.columns(4)
    cols[0].download_button("Table (CSV)", table.to_csv(index=False), file_name="koed_gap.csv")
    cols[1].download_button(
        "Chart (PNG)",
        lambda: fig.to_image(format="png", width=1600, height=900),
        file_name="koed_gap.png",
        mime="image/png",
    )
    cols[2].download_button(
        "Chart (SVG)",
        lambda: fig.to_image(format="svg", width=1600, height=900),
        file_name="koed_gap.svg",
        mime="image/svg+xml",
    )
    cols[3].download_button(
        "Export for a paper (zip)",
        lambda: resources.export_zip(dataset.sha256),
        file_name="koed_export.zip",
        mime="application/zip",
    )
