"""How far the judge agrees with people, and people with each other."""

import streamlit as st

from components import charts, resources
from koed_core import agreement_data
from koed_core.agreement import NUMBERS

st.title("Judge-human agreement")
store = resources.store()
available = agreement_data.judges(store)
if available:
    labels = [f"{model} ({mode})" for model, mode in available]
    chosen = st.selectbox("Judge", range(len(available)), format_func=labels.__getitem__)
    judge_model, mode = available[chosen]
else:
    judge_model, mode = None, None
    st.info(
        "No judgments yet: run `koed judge --run RUN_ID --judge NAME` or use the Judge page. "
        "Human-human agreement is shown below once people have rated."
    )
inputs = agreement_data.load_inputs(store, judge_model, mode)
table = agreement_data.table(inputs)
if table.empty:
    st.info(
        "No human ratings yet. Build a study (Studies page), have raters rate, then "
        "come back: the table needs two or more raters on the same items."
    )
    st.stop()

st.caption(
    "alpha: Krippendorff's ordinal alpha among raters, with a bootstrap 95% CI over items. "
    "kappa: quadratic-weighted Cohen's kappa of the judge against the rounded human median. "
    "Spearman: judge against the human mean. Ceiling: every rating against the other "
    "raters' mean (what people reach). Length: response length alone against the human "
    "mean (a baseline the judge should beat). Readings sit next to each number; "
    "'undefined' says why."
)
st.dataframe(
    table,
    hide_index=True,
    column_config={c: st.column_config.NumberColumn(format="%.3f") for c in NUMBERS},
)
st.download_button(
    "Agreement table (CSV)",
    table.to_csv(index=False),
    file_name="koed_agreement.csv",
    mime="text/csv",
)

pairs = agreement_data.paired(inputs)
if pairs.empty:
    st.stop()
dimension = st.segmented_control(
    "Dimension", sorted(pairs["dimension"].unique()), default=sorted(pairs["dimension"].unique())[0]
)
shown = pairs[pairs["dimension"] == dimension]
st.plotly_chart(
    charts.confusion_heatmap(agreement_data.confusion(shown), dimension), width="stretch"
)
st.subheader("Where the judge and people differ most", anchor=False)
st.dataframe(agreement_data.disagreements(store, shown, judge_model, mode), hide_index=True)
