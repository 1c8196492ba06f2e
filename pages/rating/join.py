"""A crowd worker's whole visit, from the platform's link back to the platform: consent,
screening, onboarding, calibration, a batch of items, the completion code."""

import streamlit as st

from components import resources, state
from components.crowd_admin import app_url
from components.literal import md
from components.rating_view import calibration, rate_item
from koed_core import crowd
from koed_core.errors import KoedError


def account_signup(invite: crowd.Invite) -> None:
    """An account link: consent, screening and a rater account for this study alone."""
    st.title("KoED rating study")
    st.subheader("Consent / 동의", anchor=False)
    left, right = st.columns(2)
    left.markdown(md(invite.consent_ko))
    right.markdown(md(invite.consent_en))
    study_langs = resources.ratings().config(invite.study_id).langs
    with st.form("crowd.account"):
        agreed = st.checkbox("I have read this and agree to take part. / 위 내용에 동의합니다.")
        native = st.radio("Your native language / 모국어", ["ko", "en", "other"], horizontal=True)
        years_korea = st.number_input("Years lived in Korea / 한국 거주 연수", 0, 100, 0)
        years_english = st.number_input(
            "Years lived in an English-speaking country / 영어권 국가 거주 연수", 0, 100, 0
        )
        username = st.text_input("Username (lowercase letters, digits, . _ -)")
        password = st.text_input("Password (at least 8 characters)", type="password")
        again = st.text_input("Password again", type="password")
        sent = st.form_submit_button("Create my rater account", type="primary")
    if not sent:
        return
    if not agreed:
        st.warning("Please read the consent text and tick the box first.")
        return
    if password != again:
        st.error("The two passwords differ.")
        return
    try:
        worker = crowd.join_with_account(
            store, invite, resources.settings().users_path, username.strip(), password
        )
    except KoedError as err:
        st.error(md(str(err)))
        return
    crowd.consent(store, worker, invite)
    langs = crowd.screen(
        store, worker, study_langs, native, float(years_korea), float(years_english)
    )
    if not langs:
        st.info(
            "Thank you. This study needs native-level speakers of its languages, so it has "
            "no items for you; your account will not be used."
        )
        return
    resources.ratings().save_profile(
        crowd.profile_of(worker, native, float(years_korea), float(years_english), langs)
    )
    st.success(
        f"Account {md(worker.username)} created. Log in with it to rate this study "
        "(calibration first)."
    )
    st.link_button("Log in / 로그인", app_url("login"))


store = resources.store()
key = resources.server_key()
session = state.crowd_session()
token = st.query_params.get("invite") or (session or {}).get("invite", "")
if not token:
    st.title("KoED rating study")
    st.info(
        "This page opens from a study's invite link (for example on Prolific). Raters with "
        "an account: Log in first, then open Rate responses."
    )
    st.stop()
try:
    invite = crowd.check_invite(store, key, token, joining=False)
    if invite.platform == "account":
        crowd.check_invite(store, key, token)
        account_signup(invite)
        st.stop()
    worker = None
    if session and session["invite"] == token and not st.query_params.get("invite"):
        worker = crowd.worker_of(store, session["username"])
    if worker is None:
        ids = crowd.platform_ids(invite.platform, st.query_params.to_dict())
        worker = crowd.returning(store, invite, ids)
    if worker is None:  # someone new: the link must still let people in
        crowd.check_invite(store, key, token)
        worker = crowd.join(store, key, invite, ids)
except crowd.CrowdError as err:
    st.title("KoED rating study")
    st.error(str(err), icon=":material/link_off:")
    st.stop()
if session is None or session["username"] != worker.username:
    state.set_crowd_session(worker.username, token)
    if worker.resumed:
        st.toast("Welcome back: you go on where you left off.")

study = resources.ratings().config(invite.study_id)
ratings = resources.ratings()
st.title("KoED rating study")
st.caption(
    "Rate how empathetic a listener's reply is, in Korean or English. Your answers are "
    "stored under a pseudonym; your platform id is used only to pay you."
)

if worker.status == "stopped":
    if (worker.stop_reason or "").startswith("screening"):
        st.info(
            "Thank you for your time. This study needs native-level speakers of its "
            "languages, so we cannot offer you items. Please return the study on the platform."
        )
    else:
        st.info(
            "Thank you for your time. Some of your answers did not match our quality checks, "
            "so this session ends here. The study's organisers will review it."
        )
    st.stop()

if worker.status == "consent":
    st.subheader("Consent / 동의", anchor=False)
    left, right = st.columns(2)
    left.markdown(md(invite.consent_ko))
    right.markdown(md(invite.consent_en))
    agreed = st.checkbox(
        "I have read this and agree to take part. / 위 내용을 읽었으며 참여에 동의합니다.",
        key=state.CROWD_AGREE,
    )
    if st.button("Continue / 계속", type="primary", disabled=not agreed):
        crowd.consent(store, worker, invite)
        st.rerun()
    st.stop()

if worker.status == "screening":
    st.subheader("About you / 참여자 정보", anchor=False)
    with st.form("crowd.screening"):
        native = st.radio(
            "Your native language / 모국어",
            ["ko", "en", "other"],
            format_func={"ko": "한국어 Korean", "en": "English", "other": "Other / 기타"}.get,
            horizontal=True,
        )
        years_korea = st.number_input("Years lived in Korea / 한국 거주 연수", 0, 100, 0)
        years_english = st.number_input(
            "Years lived in an English-speaking country / 영어권 국가 거주 연수", 0, 100, 0
        )
        sent = st.form_submit_button("Continue / 계속", type="primary")
    if sent:
        langs = crowd.screen(
            store, worker, study.langs, native, float(years_korea), float(years_english)
        )
        if langs:
            ratings.save_profile(
                crowd.profile_of(worker, native, float(years_korea), float(years_english), langs)
            )
        st.rerun()
    st.stop()

if worker.status == "completed" or crowd.batch_state(store, worker, invite).finished:
    if worker.status != "completed":
        crowd.finish(store, worker)
    st.success("Thank you! You have finished. / 참여해 주셔서 감사합니다!")
    st.markdown(f"Your completion code / 완료 코드: **`{md(invite.completion_code)}`**")
    if invite.redirect_url:
        st.link_button("Back to the platform / 플랫폼으로 돌아가기", invite.redirect_url)
    st.stop()

if not ratings.calibrated(worker.username):
    if calibration(worker.languages):
        if crowd.check_calibration(store, worker, state.calibration_progress().get("gaps", [])):
            ratings.mark_calibrated(worker.username)
        st.rerun()
    st.stop()

progress = crowd.batch_state(store, worker, invite)
st.progress(
    progress.in_batch / progress.batch_size,
    text=f"Batch {progress.batch} of {invite.batches}: {progress.in_batch} of "
    f"{progress.batch_size} rated",
)
item = ratings.next_item(invite.study_id, worker.username)
if item is None:
    crowd.finish(store, worker)
    st.rerun()
if rate_item(ratings, item, worker.username, "crowd"):
    crowd.check_attention(store, worker)
    st.rerun()
reason = st.selectbox(
    "Something wrong with this item? / 문제가 있나요?",
    ["broken", "offensive"],
    format_func={"broken": "broken / 깨짐", "offensive": "offensive / 불쾌함"}.get,
    key=state.rate_flag_reason(item.assignment_id),
)
if st.button("Flag it and go on / 신고하고 계속", key=state.rate_flag(item.assignment_id)):
    ratings.set_aside(item.assignment_id, worker.username, "flagged", reason)
    st.rerun()
