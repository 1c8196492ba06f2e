"""Admin: progress of a study, per rater and per item, and the ratings export."""

import streamlit as st

from components.rating.crowd_admin import render_crowd_dashboard
from components.shared import auth, resources, tables
from koed_core.rating import report as rating_report

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
checks = int((items["kind"] == "attention").sum()) if not items.empty else 0
cols[0].metric(
    "Responses with all their raters",
    f"{totals['complete']} of {totals['items']}",
    help=f"Model responses only; raters also get attention checks ({checks} in this study): "
    "a rater's own n of m on Rate responses includes them, a crowd worker's never does.",
)
cols[1].metric("Items rated (all raters)", totals["rated"])
cols[2].metric("Raters", totals["raters"])
cols[3].metric(
    "Median time per item", f"{totals['median_s']:.0f} s" if totals["median_s"] else "n/a"
)

st.subheader("Raters", anchor=False)
st.caption(
    "Leave-one-out agreement: Spearman correlation of a rater's scores with the mean of the "
    "other raters on the same items and dimensions. Below 0.4, look at that rater's work. "
    "Attention checks passed: a check that said what to choose is passed when every "
    "dimension has that score (one rule for raters and crowd workers alike)."
)
if raters.empty:
    st.caption("Nobody has rated in this study yet.")
tables.show(
    raters,
    hide_index=True,
    column_config={
        "username": "Rater",
        "done": "Rated",
        "skipped": "Skipped",
        "flagged": "Flagged",
        "median_s_per_item": st.column_config.NumberColumn("Median s per item", format="%.0f"),
        "attention_pass_rate": st.column_config.NumberColumn(
            "Attention checks passed", format="percent"
        ),
        "loo_spearman": st.column_config.NumberColumn("Agreement with the others", format="%.2f"),
        "loo_pairs": "Shared item-dimensions",
        "loo_note": "Reading",
    },
)
st.subheader("Items", anchor=False)
tables.show(
    items.assign(item=[f"#{n + 1}" for n in range(len(items))]).drop(columns=["item_id"])
    if not items.empty
    else items,
    hide_index=True,
    height=300,
    column_order=["item", "kind", "lang", "conv_id", "done", "in_progress", "set_aside", "target"],
    column_config={
        "item": "Item",
        "kind": "Kind",
        "lang": "Language",
        "conv_id": "Dialogue",
        "done": "Rated",
        "in_progress": "Being rated",
        "set_aside": "Skipped or flagged",
        "target": "Raters wanted",
    },
)
st.subheader("Raters in aggregate", anchor=False)
summary = rating_report.rater_summary(ratings)
if summary.get("raters"):
    st.markdown(
        f"Raters: {summary['raters']:d} · rating Korean: {summary['rate_ko']:d} · rating "
        f"English: {summary['rate_en']:d} · native Korean speakers: "
        f"{summary['native_korean']:d} · median years lived in Korea: "
        f"{summary['median_years_korea']:.0f}, in an English-speaking country: "
        f"{summary['median_years_english']:.0f}"
    )
else:
    st.caption("No rater has finished onboarding yet.")

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

render_crowd_dashboard(study_id)
