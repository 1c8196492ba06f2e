"""Label frequencies, co-occurrence and combinations; a combination opens the explorer."""

import streamlit as st

from components.core import charts, state, tables
from components.shared.source_banner import load_or_stop, render_source_banner
from koed_core import i18n
from koed_core.dialogues import overview
from koed_core.dialogues.filters import DialogueFilter, to_params
from koed_core.i18n import N_, _

st.title(_("Label overview"))
source, dataset = load_or_stop()
render_source_banner(source, dataset)
stats = dataset.stats()
cols = st.columns(4)
cols[0].metric(_("Dialogues"), i18n.number(stats.dialogues))
cols[1].metric(_("Labels used"), stats.labels)
cols[2].metric(_("Distinct label sets"), stats.label_sets)
cols[3].metric(
    _("Korean-only turns"),
    _("{n} of {total}", n=i18n.number(stats.ko_only_turns), total=i18n.number(stats.turns)),
)

freq = overview.label_frequencies(dataset.dialogues)
st.plotly_chart(charts.label_frequency_chart(freq), width="stretch")
st.plotly_chart(
    charts.cooccurrence_heatmap(overview.cooccurrence(dataset.dialogues)), width="stretch"
)

st.subheader(_("Label combinations"), anchor=False)
st.caption(_("Select a row to open the explorer filtered to exactly that combination."))
combos = overview.combinations(dataset.dialogues)
COMBO_COLUMNS = {
    "combination": N_("combination"),
    "gloss": N_("gloss"),
    "size": N_("labels in it"),
    "dialogues": N_("dialogues"),
}
picked = tables.show(
    combos.rename(columns={c: _(COMBO_COLUMNS[c]) for c in combos.columns if c in COMBO_COLUMNS}),
    hide_index=True,
    height=400,
    key=state.OVERVIEW_TABLE,
    on_select="rerun",
    selection_mode="single-row",
)
rows = picked.selection.rows if picked else []
if rows:
    labels = overview.split_combination(combos["combination"].iloc[rows[0]])
    params = to_params(DialogueFilter(labels=labels, mode="exact"))
    st.switch_page("app_pages/dialogues/explorer.py", query_params=params)
