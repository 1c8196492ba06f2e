"""How far the judge agrees with people, and people with each other."""

import streamlit as st

from components.core import auth, charts, computed, resources, state, tables
from components.results import ppi_view
from components.results.alt_test_view import render_alt_test
from components.results.score_pickers import judge_picker, study_picker
from koed_core.i18n import _
from koed_core.judge.rubric import codes
from koed_core.results import agreement, score_sources
from koed_core.results.reliability import NUMBERS
from koed_core.text import csv_safe

st.title(_("Judge-human agreement"))
store = resources.store()
viewer = auth.viewer()  # what this person may see: every number below asks it
admin = viewer.sees_all
left, right = st.columns(2)
study = study_picker(store, key=state.AGREEMENT_STUDY, where=left, include_open=admin)
if study is None:
    st.info(
        _(
            "No published human ratings yet. Results of a study appear here once an admin "
            "closes it; until then raters stay blind to the judge and to each other."
        )
        if not admin
        else _(
            "No human ratings yet. Build a study on the Studies page (it appears once an "
            "admin account exists: `koed users add NAME --role admin`), have raters rate, "
            "then come back: the table needs two or more raters on the same items."
        )
        if not auth.username()  # one person's app, no accounts yet
        else _(
            "No human ratings yet. Build a study on the Studies page, have raters rate, "
            "then come back: the table needs two or more raters on the same items."
        )
    )
    st.stop()
judge = judge_picker(
    store, score_sources.study_runs(store, study), key=state.AGREEMENT_JUDGE, where=right
)
if judge is None:
    right.info(
        _(
            "No judge scored this study's responses yet: run `koed judge --run RUN_ID` or "
            "use the Judge page. Human-human agreement is below."
        )
    )
inputs = computed.agreement_inputs(store, study, judge, viewer)
table = computed.agreement_table(store, study, judge, viewer=viewer)
if table.empty:
    st.info(_("This study has no ratings of model responses yet."))
    st.stop()

st.caption(
    _(
        "alpha: Krippendorff's ordinal alpha among raters, with a bootstrap 95% CI over "
        "items. kappa: quadratic-weighted Cohen's kappa of the judge against the rounded "
        "human median. Spearman: judge against the human mean. Ceiling: every rating against "
        "the other raters' mean (what people reach). Length: response length alone against "
        "the human mean (a baseline the judge should beat). Readings sit next to each "
        "number; 'undefined' says why."
    )
)
tables.show(
    tables.group_names(table),
    hide_index=True,
    column_config={c: st.column_config.NumberColumn(format="%.3f") for c in NUMBERS},
)
tables.readings_in_full(table, ["dimension", "lang", "group"], key=state.AGREEMENT_ROW)
columns = judge.as_columns() if judge else {}
st.download_button(
    _("Agreement table (CSV)"),
    csv_safe.to_csv(
        computed.agreement_table(store, study, judge, "en", viewer).assign(
            study_id=study, **columns
        )
    ),
    file_name="koed_agreement.csv",
    mime="text/csv",
)

render_alt_test(store, study, judge, viewer)

pairs = agreement.paired(inputs)
if pairs.empty:
    st.stop()
present = [c for c in codes() if c in set(pairs["dimension"])]
dimension = st.segmented_control(_("Dimension"), present, default=present[0]) or present[0]
shown = pairs[pairs["dimension"] == dimension]
st.plotly_chart(charts.confusion_heatmap(agreement.confusion(shown), dimension), width="stretch")
if viewer.allowed("see-words"):  # response texts, rationales, raters' comments
    st.subheader(_("Where the judge and people differ most"), anchor=False)
    tables.show(computed.disagreements(store, study, judge, dimension, viewer), hide_index=True)
ppi_view.judge_artefact(store, judge, study, viewer)
