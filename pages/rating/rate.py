"""Rate model responses blind on the five rubric dimensions."""

import streamlit as st

from components.rating.crowd_admin import bound_study
from components.rating.rating_view import (
    calibration,
    finished_here,
    onboarding_form,
    rate_item,
    render_item,
    rubric_form,
)
from components.shared import auth, resources, state
from components.shared.literal import md
from koed_core.rating.studies import RatingError

st.title("Rate responses")
account = auth.require()
ratings = resources.ratings()
profile = ratings.profile(account.username)
if profile is None:
    new = onboarding_form(account.username)
    if new is not None:
        try:
            ratings.save_profile(new)
        except RatingError as err:
            st.error(md(str(err)))
        else:
            st.rerun()
    st.stop()
if not ratings.calibrated(account.username):
    if calibration(profile.languages):
        ratings.mark_calibrated(account.username)
        st.success("Calibration done. Live items follow.")
        st.rerun()
    st.stop()

studies = [
    s for s in ratings.studies() if set(s["langs"]) & set(profile.languages) and not s["closed"]
]
if not studies:
    st.info("No study is open for your languages yet. Your admin will set one up.")
    st.stop()
bound = bound_study(account.username)
if bound is not None:  # an account made through a study's invite link rates that study only
    studies = [s for s in studies if s["id"] == bound]
    if not studies:
        st.info("The study you joined is closed. Thank you for rating!")
        st.stop()
names = {s["id"]: s["name"] for s in studies}
study_id = st.selectbox("Study", list(names), format_func=names.get, key=state.RATE_STUDY)
done, total = ratings.done(study_id, account.username), ratings.workload(study_id, account.username)
st.progress(min(done / max(total, 1), 1.0), text=f"{done} of {total} rated")

last = ratings.last_rated(study_id, account.username)
if last is not None:
    with st.expander("Correct my last rating"):
        old_item, old_scores, old_comment = last
        render_item(old_item.context, old_item.response, old_item.lang)
        fix = rubric_form(
            f"fix.{old_item.assignment_id}",
            old_item.lang,
            old_scores,
            old_comment,
            submit="Save the correction",
        )
        if fix is not None:
            ratings.save_rating(old_item.assignment_id, account.username, fix.scores, fix.comment)
            st.toast("Rating corrected")
            st.rerun()

item = ratings.next_item(study_id, account.username)
if item is None:
    st.success("Nothing left for you in this study. Thank you!")
    st.stop()
if rate_item(ratings, item, account.username, "rate"):
    st.toast("Saved")
    st.rerun()
left, right = st.columns(2)
if left.button("Skip this item", key=state.rate_skip(item.assignment_id)):
    ratings.set_aside(item.assignment_id, account.username, "skipped")
    finished_here("rate")
    st.rerun()
reason = right.selectbox(
    "Flag as", ["broken", "offensive"], key=state.rate_flag_reason(item.assignment_id)
)
if right.button("Flag this item", key=state.rate_flag(item.assignment_id)):
    ratings.set_aside(item.assignment_id, account.username, "flagged", reason)
    finished_here("rate")
    st.rerun()
