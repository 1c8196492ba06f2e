"""Rate model responses blind on the five rubric dimensions."""

import streamlit as st

from components.core import auth, resources, state
from components.core.literal import md
from components.rating.crowd_admin import bound_study
from components.rating.crowd_visit import FLAG_REASONS
from components.rating.rating_view import (
    calibration,
    finished_here,
    onboarding_form,
    rate_item,
    render_item,
    rubric_form,
)
from koed_core import i18n
from koed_core.i18n import _
from koed_core.rating.studies import RatingError

st.title(_("Rate responses"))
account = auth.require()
rules = resources.rules()
profile = rules.profile(account.username)
if profile is None:
    new = onboarding_form(account.username)
    if new is not None:
        try:
            rules.save_profile(new)
        except RatingError as err:
            st.error(md(str(err)))
        else:
            st.rerun()
    st.stop()
if not rules.calibrated(account.username):
    if calibration(profile.languages):
        rules.mark_calibrated(account.username)
        st.success(_("Calibration done. Live items follow."))
        st.rerun()
    st.stop()

studies = [
    s for s in rules.studies() if set(s["langs"]) & set(profile.languages) and not s["closed"]
]
if not studies:
    st.info(_("No study is open for your languages yet. Your admin will set one up."))
    st.stop()
bound = bound_study(account.username)
if bound is not None:  # an account made through a study's invite link rates that study only
    studies = [s for s in studies if s["id"] == bound]
    if not studies:
        st.info(_("The study you joined is closed. Thank you for rating!"))
        st.stop()
names = {s["id"]: s["name"] for s in studies}
study_id = st.selectbox(_("Study"), list(names), format_func=names.get, key=state.RATE_STUDY)
done, total = rules.done(study_id, account.username), rules.workload(study_id, account.username)
st.progress(
    min(done / max(total, 1), 1.0), text=_("{done} of {total} rated", done=done, total=total)
)

last = rules.last_rated(study_id, account.username)
if last is not None:
    with st.expander(_("Correct my last rating")):
        old_item, old_scores, old_comment = last
        render_item(old_item.context, old_item.response, old_item.lang, old_item.kind)
        fix = rubric_form(
            f"fix.{old_item.assignment_id}",
            old_item.lang,
            old_scores,
            old_comment,
            submit=_("Save the correction"),
        )
        if fix is not None:
            rules.save_rating(old_item.assignment_id, account.username, fix.scores, fix.comment)
            st.toast(_("Rating corrected"))
            st.rerun()

item = rules.next_item(study_id, account.username)
if item is None:
    st.success(_("Nothing left for you in this study. Thank you!"))
    st.stop()
if rate_item(rules, item, account.username, "rate"):
    st.toast(_("Saved"))
    st.rerun()
left, right = st.columns(2)
if left.button(_("Skip this item"), key=state.rate_skip(item.assignment_id)):
    rules.set_aside(item.assignment_id, account.username, "skipped")
    finished_here("rate")
    st.rerun()
reason = right.selectbox(
    _("Flag as"),
    list(FLAG_REASONS),
    format_func=i18n.choices(FLAG_REASONS).__getitem__,
    key=state.rate_flag_reason(item.assignment_id),
)
if right.button(_("Flag this item"), key=state.rate_flag(item.assignment_id)):
    rules.set_aside(item.assignment_id, account.username, "flagged", reason)
    finished_here("rate")
    st.rerun()
