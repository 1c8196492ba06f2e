"""A crowd worker's whole visit, from the platform's link back to the platform: consent,
screening, onboarding, calibration, a batch of items, the completion code."""

import streamlit as st

from components.core import language, resources, state
from components.rating import crowd_visit
from components.rating.rating_view import calibration
from koed_core.i18n import _
from koed_core.rating import crowd

store = resources.store()
key = resources.server_key()
session = state.crowd_session()
token = st.query_params.get("invite") or (session or {}).get("invite", "")
if not token:
    language.switch()
    crowd_visit.no_link()
    st.stop()
try:
    invite = crowd.check_invite(store, key, token, joining=False)
    language.start(crowd_visit.item_language_of(resources.rules().config(invite.study_id)))
    if invite.platform == "account":
        crowd.check_invite(store, key, token)
        language.switch()
        crowd_visit.account_signup(store, invite)
        st.stop()
    worker = None
    params = st.query_params.to_dict()
    if session and session["invite"] == token and not st.query_params.get("invite"):
        worker = crowd.worker_of(store, session["username"], invite)  # still has a place?
    if worker is None and crowd.mturk_preview(invite, params):
        language.switch()
        crowd_visit.mturk_preview(invite)  # nothing stored, no place taken
        st.stop()
    if worker is None:
        ids = crowd.platform_ids(invite, params, key)
        worker = crowd.returning(store, invite, ids)
    if worker is None:  # someone new: the link must still let people in
        crowd.check_invite(store, key, token)
        worker = crowd.join(store, key, invite, ids)
        crowd.remember_submit_to(store, worker, params.get("turkSubmitTo"))
except crowd.CrowdError as err:
    language.switch()
    crowd_visit.refused(err)
    st.stop()
rules = resources.rules()
language.start(crowd_visit.item_language(worker, rules.config(invite.study_id).langs))
if session is None or session["username"] != worker.username:
    state.set_crowd_session(worker.username, token)
    if worker.resumed and st.query_params.get("invite") and worker.status in crowd.UNDER_WAY:
        st.toast(_("Welcome back: you go on where you left off."))
if worker.status in crowd.UNDER_WAY:
    crowd_visit.mark_visit(worker.username, token)  # a reload or typed URL stays here
language.switch()
st.title(_("KoED rating study"))
st.caption(
    _(
        "Rate how empathetic a listener's reply is, in Korean or English. Your scores and "
        "comments are stored under a pseudonym; your platform ID is used only to pay you."
    )
)
if worker.status == "stopped":
    crowd_visit.stopped(store, worker, invite)
elif worker.status == "consent":
    crowd_visit.consent_step(store, worker, invite)
elif worker.status == "screening":
    crowd_visit.screening_step(store, rules, worker, rules.config(invite.study_id).langs)
elif worker.status == "completed" or crowd_visit.progress_of(store, worker, invite).finished:
    if worker.status != "completed":
        crowd.finish(store, worker)
        st.rerun()
    crowd_visit.finished(store, worker, invite)
elif not rules.calibrated(worker.username):
    progress = crowd_visit.stored_calibration(store, worker)  # a reload goes on, not afresh
    if calibration(worker.languages):
        ended = crowd.end_calibration(store, worker, invite, progress.get("gaps", []))
        if ended == "passed":
            rules.mark_calibrated(worker.username)
        progress.update(index=0, feedback=None, gaps=[])
        st.rerun()
else:
    crowd_visit.batch_step(store, rules, worker, invite)
