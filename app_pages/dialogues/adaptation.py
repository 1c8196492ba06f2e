"""How far each Korean turn departs from its English original, sortable for linguists."""

import streamlit as st

from components.core import charts, state, tables
from components.core.link_notice import check_link, linked_choice, set_param
from components.dialogues.similarity_job import similarities_or_progress
from components.shared import adaptation_gap
from components.shared.source_banner import load_or_stop, render_source_banner
from koed_core import i18n
from koed_core.dialogues import adaptation
from koed_core.dialogues.filters import DialogueFilter, to_params
from koed_core.dialogues.links import DIALOGUE
from koed_core.i18n import N_, _

st.title(_("Adaptation: what the reconstruction changed"))
st.caption(
    _(
        "Each Korean turn is compared with its English original by a multilingual sentence "
        "encoder (Universal Sentence Encoder, multilingual v3, offline): the cosine "
        "similarity of the two. Read it against this file, not as a verdict: this encoder "
        "scores short faithful translations low too, so a low score points at turns worth "
        "reading, it does not prove a rewrite. The percentile says where a score sits among "
        "this file's (0 lowest). Korean-only turns have no English pair and no score."
    )
)
source, dataset = load_or_stop()
render_source_banner(source, dataset)
sims = similarities_or_progress(dataset)  # a shared job computes them once for all

departures = adaptation.dialogue_departures(dataset.dialogues, sims)
ORDERS = {"most rewritten first": N_("most rewritten first"), "closest first": N_("closest first")}
# the link's dialogue is d, as on every page; a value the page cannot use is named
link = check_link("adaptation", set(departures["conv_id"]), choices={state.ADAPT_ORDER: ORDERS})
spread = adaptation.distribution(sims)
if spread:
    st.caption(
        _(
            "In this file, turn similarities run from {p25} (25th percentile) through "
            "{median} (median) to {p75} (75th percentile).",
            p25=i18n.number(spread["p25"], 2),
            median=i18n.number(spread["median"], 2),
            p75=i18n.number(spread["p75"], 2),
        )
    )
st.plotly_chart(charts.similarity_histogram(departures), width="stretch")
order = linked_choice(st, _("Sort"), list(ORDERS), state.ADAPT_ORDER, ORDERS, horizontal=True)
closest = order == "closest first"
similarity_columns = {
    c: st.column_config.ProgressColumn(c, min_value=0.0, max_value=1.0, format="%.2f")
    for c in ("similarity", "situation_similarity", "mean_similarity", "min_similarity")
}
by_dialogue, by_turn = st.tabs([_("Dialogues"), _("Turns")])
with by_dialogue:
    shown = departures.iloc[::-1] if closest else departures
    tables.show(shown, hide_index=True, height=320, column_config=similarity_columns)
with by_turn:
    turns = adaptation.turn_departures(dataset.dialogues, sims)
    st.caption(_("{n} turns with both a Korean and an English text.", n=i18n.number(len(turns))))
    shown = turns.iloc[::-1] if closest else turns
    tables.show(shown, hide_index=True, height=320, column_config=similarity_columns)

options = departures["conv_id"].tolist()
wanted = (link.get(DIALOGUE) or [""])[0]
conv_id = st.selectbox(
    _("Turn by turn"),
    options,
    index=options.index(wanted) if wanted in options else None,
    key=state.ADAPT_DIALOGUE,
    placeholder=_("Pick a dialogue to see each turn's similarity"),
)
set_param(DIALOGUE, conv_id or [])  # the one name of a dialogue in a link
dialogue = dataset.get(conv_id) if conv_id else None
if dialogue is not None:
    tables.show(
        adaptation.turn_table(dialogue, sims), hide_index=True, column_config=similarity_columns
    )
    st.page_link(
        "app_pages/dialogues/explorer.py",
        label=_("Open side by side in the explorer"),
        icon=":material/forum:",
        query_params=to_params(DialogueFilter(), conv_id=dialogue.conv_id),
    )

adaptation_gap.adaptation_section(dataset, departures)
