"""The cultural empathy gap: Korean minus English per model, grouped by provenance."""

import streamlit as st

from components import auth, resources, state
from components.score_pickers import judge_picker, study_picker
from components.source_banner import load_or_stop
from components.talk import talk_toggle
from koed_core import csv_safe, gaps, reproduce, scoring
from koed_core.figures import gap_figure

st.title("The cultural empathy gap")
talk = talk_toggle()
source, dataset = load_or_stop()
store = resources.store()

# In talk mode the choices fold away so that the chart fits a 1280x720 projector.
choices = st.expander("Choices", expanded=False) if talk else st.container()
left, mid, right = choices.columns([3, 3, 2])
admin = auth.is_admin()
judge = judge_picker(store, None, key=state.GAP_JUDGE, where=mid)
study = study_picker(store, key=state.GAP_STUDY, where=mid, include_open=admin)
frame = gaps.score_frame(store, judge=judge, study_id=study)
if frame.empty:
    st.info(
        "No scores yet, so no gap to show. Run a model in both languages, then judge it:\n\n"
        "`koed run --model smollm2 --lang ko,en --limit 20`  \n"
        "`koed judge --run RUN_ID --judge NAME`\n\n"
        "Emotion-recognition gaps appear as soon as a `single` or `multi` run is stored; "
        "rater gaps once a study is rated."
    )
    st.stop()

sources = [s for s in ("judge", "raters", "emotion") if s in set(frame["source"])]
if {"judge", "raters"} <= set(sources):
    sources.insert(2, "judge + raters")
chosen = left.selectbox("Scores from", sources, key=state.GAP_SOURCE)
datasets = sorted(set(frame["dataset_sha256"].dropna()))
if len(datasets) > 1:
    current = dataset.sha256 if dataset.sha256 in datasets else datasets[0]
    sha = left.selectbox(
        "Dataset (sha256)", datasets, index=datasets.index(current), key=state.GAP_DATASET
    )
    frame = frame[frame["dataset_sha256"] == sha]
breakdowns = {"none": None, "per emotion label": "label", "jeong/han vs the rest": "group"}
split = right.selectbox("Breakdown", list(breakdowns), key=state.GAP_BREAKDOWN)
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
    group = right.selectbox(split.capitalize(), sorted(table[by].unique()), key=state.GAP_GROUP)
    table = table[table[by] == group]
    suffix = f" · {group}"
names = {
    "judge": f"judge {judge.label}" if judge else "judge",
    "raters": scoring.study_label(store, study) if study is not None else "raters",
    "emotion": "emotion recognition (hit rate for single runs, F1 for multi)",
}
figures = [
    gap_figure(
        table[table["source"] == source],
        f"Korean minus English, paired by dialogue, 95% CI{suffix}",
        talk=talk,
        subtitle=names[source],
    )
    for source in shown
]
for column, fig in zip(st.columns(len(figures)), figures, strict=True):
    # theme=None keeps the projector styling instead of the app theme
    column.plotly_chart(fig, width="stretch", theme=None)
fig = figures[0]
if not talk and judge is not None:
    with st.expander("The paper's table: a row per model and protocol", expanded=False):
        paper = reproduce.paper_table(store, reproduce.stored_runs(store, dataset.sha256), judge)
        st.caption(
            "ED = English, KoED = Korean: means of the judge's scores and of emotion "
            "recognition; gap = KoED minus ED (mean of the five dimensions per dialogue, "
            f"paired), bootstrap 95% CI. Judge: {judge.label}. `koed reproduce` writes the "
            "same table as CSV, Markdown and LaTeX."
        )
        st.dataframe(
            paper.drop(columns=[c for c in paper.columns if c.startswith("judge_")]),
            hide_index=True,
        )
if not talk:
    with st.expander("Numbers behind the chart", expanded=False):
        st.dataframe(table, hide_index=True)
    cols = st.columns(4 if admin else 3)
    cols[0].download_button("Table (CSV)", csv_safe.to_csv(table), file_name="koed_gap.csv")
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
    if admin:  # every study's agreement and every run's configuration: admins only
        cols[3].download_button(
            "Export for a paper (zip)",
            resources.export_zip,
            file_name="koed_export.zip",
            mime="application/zip",
        )
