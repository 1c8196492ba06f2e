"""The steps of a crowd worker's visit (consent, screening, calibration, a batch, the
code), each a function the join page calls for the worker's status.

Every text that came from a link, a file or a person goes through ``md`` (shown
literally), so a crafted ``PROLIFIC_PID`` or consent file cannot restyle the page.
"""

from __future__ import annotations

import html

import streamlit as st

from components.rating.crowd_admin import app_url
from components.rating.rating_view import finished_here, rate_item
from components.shared import resources, state
from components.shared.literal import consent_markdown, md
from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.rating import crowd
from koed_core.rating.studies import RatingStore


def account_signup(store: Store, invite: crowd.Invite) -> None:
    """An account link: consent, screening and a rater account for this study alone."""
    st.title("KoED rating study")
    st.subheader("Consent / 동의", anchor=False)
    left, right = st.columns(2)
    left.markdown(consent_markdown(invite.consent_ko))
    right.markdown(consent_markdown(invite.consent_en))
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


COOKIE_SET = "crowd.cookie_set"


def resume_visit() -> bool:
    """A browser whose cookie names a worker still under way is that worker again."""
    try:
        cookie = st.context.cookies.get(crowd.VISIT_COOKIE)
    except (AttributeError, RuntimeError):  # no browser context (a script run in tests)
        return False
    if not isinstance(cookie, str) or not cookie:
        return False
    found = crowd.read_visit_cookie(resources.store(), resources.server_key(), cookie)
    if found is None:
        return False
    state.set_crowd_session(*found)
    return True


def mark_visit(username: str, token: str) -> None:
    """Set the visit cookie (a constant script of ours; the value is signed and made of
    letters, digits and ``.|_-`` only, so it cannot break out of the string)."""
    value = crowd.visit_cookie(resources.server_key(), username, token)
    if value in (st.context.cookies.get(crowd.VISIT_COOKIE), st.session_state.get(COOKIE_SET)):
        return
    st.session_state[COOKIE_SET] = value
    safe = "".join(ch for ch in value if ch.isalnum() or ch in "|._-")
    st.html(
        f"<script>document.cookie = '{crowd.VISIT_COOKIE}={safe}; path=/; SameSite=Lax';</script>",
        unsafe_allow_javascript=True,
        width="content",
    )


def no_link() -> None:
    """The page opened without an invite: say where it is meant to be opened from."""
    st.title("KoED rating study")
    st.info(
        "This page opens from a study's invite link (for example on Prolific). Raters with "
        "an account: Log in first, then open Rate responses."
    )


def refused(err: crowd.CrowdError) -> None:
    """A link or platform id that does not let this person in, and why."""
    st.title("KoED rating study")
    st.error(md(str(err)), icon=":material/link_off:")


def stopped(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> None:
    """Screened out, nothing left, or stopped by the quality checks: each with its code."""
    if (worker.stop_reason or "").startswith("screening"):
        st.info(
            "Thank you for your time. This study needs native-level speakers of its "
            "languages, so we cannot offer you items."
        )
    elif worker.stop_reason == crowd.NO_ITEMS:
        st.info(
            "Thank you for your time. Every item has all the ratings it needs now, so "
            "nothing is left for you to rate."
        )
    else:
        st.info(
            "Thank you for your time. Some of your answers did not match our quality checks, "
            "so this session ends here. The study's organisers will review it."
        )
    _code_and_way_back(store, worker, invite)


def finished(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> None:
    """The completion code and the way back to the platform."""
    st.success("Thank you! You have finished. / 참여해 주셔서 감사합니다!")
    _code_and_way_back(store, worker, invite)


OUTCOME_NAMES = {
    "completed": "completion code / 완료 코드",
    "screened_out": "screen-out code / 선별 종료 코드",
    "failed_checks": "code / 코드",
}


def _code_and_way_back(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> None:
    given = crowd.give_code(store, worker, invite)
    if given is None:
        return
    kind, code = given
    st.markdown(f"Your {md(OUTCOME_NAMES[kind])}: **{md(code)}**")
    post_to = crowd.submit_to(store, worker) if invite.platform == "mturk" else None
    if post_to:
        assignment = (Crowd(store).worker(worker.username) or {}).get("study_ref") or ""
        show_mturk_form(post_to, assignment, code)
    elif url := invite.back_url(code):
        st.link_button("Back to the platform / 플랫폼으로 돌아가기", url)


def mturk_form(action: str, assignment_id: str, code: str) -> str:
    """The ExternalQuestion's answer: a POST of assignmentId and the code to MTurk (the
    action is MTurk's own host, checked; every value escaped)."""
    fields = {"assignmentId": assignment_id, "completion_code": code}
    inputs = "".join(
        f'<input type="hidden" name="{name}" value="{html.escape(value, quote=True)}">'
        for name, value in fields.items()
    )
    return (
        f'<form method="post" action="{html.escape(action, quote=True)}" target="_top" '
        'data-koed-mturk="1">'
        f'{inputs}<button type="submit" style="padding:0.5rem 1rem;font-size:1rem">'
        "Submit the HIT / HIT 제출</button></form>"
    )


TARGET_TOP = (
    "<script>for (const form of document.querySelectorAll('form[data-koed-mturk]')) "
    "{ form.target = '_top'; }</script>"
)
"""Gives the answer form back the ``target`` that Streamlit's HTML sanitiser removes."""


def show_mturk_form(action: str, assignment_id: str, code: str) -> None:
    """The answer form, with its ``target="_top"`` kept: st.html's sanitiser drops a
    form's target, and inside MTurk's frame a POST without it would load MTurk's answer
    page in the frame. A constant script of ours puts it back; the markup is ours and
    every value in it is escaped."""
    st.html(mturk_form(action, assignment_id, code) + TARGET_TOP, unsafe_allow_javascript=True)


def mturk_preview(invite: crowd.Invite) -> None:
    """An MTurk worker looking at the HIT before accepting it: what the task is and the
    consent text; nothing starts until they accept."""
    st.title("KoED rating study")
    st.info(
        "Preview: accept the HIT to start. / 미리보기: 시작하려면 HIT을 수락하세요.",
        icon=":material/visibility:",
    )
    st.markdown(
        f"You will rate how empathetic a listener's replies are, in batches of "
        f"{invite.batch_size:d} items ({invite.batches:d} batch(es))."
    )
    left, right = st.columns(2)
    left.markdown(consent_markdown(invite.consent_ko))
    right.markdown(consent_markdown(invite.consent_en))


def stored_calibration(store: Store, worker: crowd.Worker) -> dict[str, object]:
    """This session's calibration progress, kept in step with the database: what was
    scored before a reload is restored, with the feedback that was on the screen (so a
    reload starts no fresh attempt and skips no feedback), and each new score and each
    move past a feedback is stored as it happens."""
    progress = state.calibration_progress()
    stored, tries = crowd.stored_calibration(store, worker)
    shown = crowd.calibration_feedback(store, worker)
    mine = list(progress.get("gaps", []))
    if len(mine) < len(stored) or progress.get("tries") != tries:
        pending = shown is not None and bool(stored)
        progress.update(
            index=len(stored) - (1 if pending else 0),
            feedback=shown if pending else None,
            gaps=stored,
            tries=tries,
        )
        if tries:
            st.info(
                "Your scores were far from the references, so here is the calibration "
                "again. / 기준 점수와 차이가 커서 연습 문항을 다시 진행합니다."
            )
    elif len(mine) > len(stored) or progress.get("feedback") != shown:
        feedback = progress.get("feedback")
        shown_now = feedback if isinstance(feedback, dict) else None
        crowd.save_calibration(store, worker, mine, shown_now)
    return progress


def consent_step(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> None:
    """The consent text in both languages and one box to tick."""
    st.subheader("Consent / 동의", anchor=False)
    left, right = st.columns(2)
    left.markdown(consent_markdown(invite.consent_ko))
    right.markdown(consent_markdown(invite.consent_en))
    agreed = st.checkbox(
        "I have read this and agree to take part. / 위 내용을 읽었으며 참여에 동의합니다.",
        key=state.CROWD_AGREE,
    )
    if st.button("Continue / 계속", type="primary", disabled=not agreed):
        crowd.consent(store, worker, invite)
        st.rerun()


def screening_step(
    store: Store, ratings: RatingStore, worker: crowd.Worker, langs: tuple[str, ...]
) -> None:
    """Native language and years abroad: who may rate which language."""
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
        ok = crowd.screen(store, worker, langs, native, float(years_korea), float(years_english))
        if ok:
            ratings.save_profile(
                crowd.profile_of(worker, native, float(years_korea), float(years_english), ok)
            )
        st.rerun()


def progress_of(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> crowd.BatchState:
    """The worker's batch progress, with what they can still be given kept in the session
    between clicks (asked again only when an item is done)."""
    known = st.session_state.setdefault(WORKLOAD, {})
    return crowd.batch_state(store, worker, invite, known)


WORKLOAD = "crowd.workload"


def batch_step(
    store: Store, ratings: RatingStore, worker: crowd.Worker, invite: crowd.Invite
) -> None:
    """The next item of the worker's batch, with the batch's progress (responses only:
    attention checks come on top) and a flag for real responses."""
    progress = progress_of(store, worker, invite)
    st.progress(
        progress.in_batch / progress.batch_size,
        text=f"Batch {progress.batch} of {invite.batches}: {progress.in_batch} of "
        f"{progress.batch_size} rated",
    )
    item = crowd.next_item(store, worker, invite)
    if item is None:
        crowd.finish(store, worker)
        st.rerun()
        return
    if rate_item(ratings, item, worker.username, "crowd"):
        crowd.check_attention(store, worker)
        st.rerun()
    if item.instructed_score is not None:
        return  # a check says what to choose: it cannot be flagged instead
    reason = st.selectbox(
        "Something wrong with this item? / 문제가 있나요?",
        ["broken", "offensive"],
        format_func={"broken": "broken / 깨짐", "offensive": "offensive / 불쾌함"}.get,
        key=state.rate_flag_reason(item.assignment_id),
    )
    if st.button("Flag it and go on / 신고하고 계속", key=state.rate_flag(item.assignment_id)):
        try:
            crowd.flag(store, worker, item, reason)
        except KoedError as err:
            st.error(md(str(err)))
            return
        finished_here("crowd")
        st.rerun()
