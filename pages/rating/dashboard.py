"""Admin: progress of a study, per rater and per item, and the ratings export."""

import streamlit as st

from components import auth, resources
from koed_core import rating_report

st.title("Study dashboard")
auth.require("admin")
ratings = resources.ratings()
studies = ratings.studies()
if not studies:
    st.info("No study yet: create one on the Studies page.")
    st.stop()
names = {s["id"]: f"{s['id']} · {s['name']}" for s in studies}
study_id = st.selectbox("Study", list(names), format_func=names.get)

items = rating_report.item_progress(ratings, study_id)
raters = rating_report.rater_report(ratings, study_id)
totals = rating_report.study_totals(items, raters)
cols = st.columns(4)
cols[0].metric("Items complete", f"{totals['complete']} of {totals['items']}")
cols[1].metric("Items rated (all raters)", totals["rated"])
cols[2].metric("Raters", totals["raters"])
cols[3].metric(
    "Median time per item", f"{totals['median_s']:.0f} s" if totals["median_s"] else "n/a"
)

st.subheader("Raters", anchor=False)
st.caption(
    "Leave-one-out agreement: Spearman correlation of a rater's scores with the mean of the "
    "other raters on the same items and dimensions. Below 0.4, look at that rater's work. "
    "Attention pass rate: share of attention checks scored at most 2 on ER and EEA."
)
st.dataframe(raters, hide_index=True)
st.subheader("Items", anchor=False)
st.dataframe(items, hide_index=True, height=300)
st.subheader("Raters in aggregate", anchor=False)
st.json(rating_report.rater_summary(ratings))

rows = rating_report.export_rows(ratings, study_id, resources.server_key())
left, right, _ = st.columns([1, 1, 3])
left.download_button(
    "Ratings CSV",
    rating_report.rows_csv(rows),
    file_name=f"koed_ratings_study{study_id}.csv",
    disabled=not rows,
)
right.download_button(
    "Ratings JSONL",
    rating_report.rows_jsonl(rows),
    file_name=f"koed_ratings_study{study_id}.jsonl",
    disabled=not rows,
)
