"""The cultural empathy gap: Korean minus English per model, grouped by provenance."""

import streamlit as st

from components.core import auth, computed, resources, state
from components.results import decompose_view, gap_view, ppi_view
from components.results.score_pickers import judge_picker, study_picker
from components.results.talk import screen_charts, talk_toggle
from components.shared import adaptation_gap
from components.shared.source_banner import load_or_stop
from koed_core import i18n
from koed_core.i18n import _
from koed_core.results.figures import gap_figure

st.title(_("The cultural empathy gap"))
talk = talk_toggle()
source, dataset = load_or_stop()
store = resources.store()

# In talk mode the choices fold away so that the chart fits a 1280x720 projector.
choices = st.expander(_("Choices"), expanded=False) if talk else st.container()
left, mid, right = choices.columns([3, 3, 2])
viewer = auth.viewer()  # what this person may see: every number below asks it
admin = viewer.sees_all
judge = judge_picker(store, None, key=state.GAP_JUDGE, where=mid)
study = study_picker(store, key=state.GAP_STUDY, where=mid, include_open=admin)
frame = computed.score_frame(store, judge, study, viewer)
hidden = viewer.hidden_in(study)  # a published study shows its runs, shared or not
gap_view.hidden_caption(len(hidden))
if frame.empty:
    gap_view.no_scores_yet(len(hidden))  # hidden from you is not missing
    if not talk:  # episodes have their own gap, over turns; annotations their breakdown
        gap_view.gap_over_turns(store, judge, study, viewer)
        adaptation_gap.gap_by_adaptation(store, judge, study, dataset, viewer)
    st.stop()

sources = [s for s in ("judge", "raters", "emotion") if s in set(frame["source"])]
if {"judge", "raters"} <= set(sources):
    sources.insert(2, "judge + raters")
chosen = left.selectbox(
    _("Scores from"),
    sources,
    key=state.GAP_SOURCE,
    format_func=i18n.choices(gap_view.SOURCE_WORDS).__getitem__,
)
datasets = sorted(set(frame["dataset_sha256"].dropna()))
sha = None
if len(datasets) > 1:
    current = dataset.sha256 if dataset.sha256 in datasets else datasets[0]
    sha = left.selectbox(
        _("Dataset (sha256)"), datasets, index=datasets.index(current), key=state.GAP_DATASET
    )
breakdowns = gap_view.BREAKDOWNS
split = right.selectbox(
    _("Breakdown"),
    list(breakdowns),
    key=state.GAP_BREAKDOWN,
    format_func=i18n.choices(gap_view.BREAKDOWN_WORDS).__getitem__,
)
by = breakdowns[split]
shown = ["judge", "raters"] if chosen == "judge + raters" else [chosen]
table = computed.gap_table(store, judge, study, shown, sha, by, dataset, viewer)
if table is None:  # a breakdown computed once for every visitor: its bar is drawn
    st.stop()
if table.empty:
    st.info(
        _(
            "No dialogue has scores in both languages for this choice yet. Run the model "
            "with `--lang ko,en` (both languages) and judge or rate both."
        )
    )
    if not talk:  # episodes have their own gap, over turns
        gap_view.gap_over_turns(store, judge, study, viewer)
    st.stop()

suffix = ""
group = None
if by:
    group = right.selectbox(
        _(gap_view.BREAKDOWN_WORDS[split]).capitalize(),
        sorted(table[by].unique()),
        key=state.GAP_GROUP,
    )
    table = table[table[by] == group]
    suffix = f" · {group}"
names = gap_view.source_names(store, judge, study)  # the hashes are in the export
title = _("Korean minus English, paired by dialogue, 95% CI") + suffix
figures = [
    gap_figure(
        table[table["source"] == source],
        title,
        talk=talk,
        subtitle=names[source],
    )
    for source in shown
]
if talk:  # the screen's height, whatever the projector; the split beside the gap
    screen_charts(figures + decompose_view.talk_figures(frame, chosen))
else:
    for column, fig, source in zip(st.columns(len(figures)), figures, shown, strict=True):
        config = gap_view.chart_config(gap_view.chart_name(source, group))  # its PNG's name
        column.plotly_chart(fig, width="stretch", theme=None, config=config)  # our styling
if not talk and judge is not None:
    gap_view.paper_table(store, dataset.sha256, judge, viewer)
    gap_view.perception_split(store, judge, viewer)  # perception or response
if not talk:
    ppi_view.gap_three_ways(store, judge, study, viewer)  # judge, people, PPI++ side by side
    decompose_view.language_or_culture(store, frame, chosen, study)  # language or culture?
    gap_view.what_moves_the_gap(store, viewer)
    gap_view.gap_over_turns(store, judge, study, viewer)
    adaptation_gap.gap_by_adaptation(store, judge, study, dataset, viewer)
if not talk:  # PNG and SVG in the talk style, for slides (drawn when asked for)
    name = gap_view.chart_name(shown[0], group)  # the chart's own PNG has it too
    gap_view.downloads(table, shown[0], title, names[shown[0]], admin, name)
