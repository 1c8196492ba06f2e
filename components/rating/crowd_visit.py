"""The steps of a crowd worker's visit (consent, screening, calibration, a batch, the
code), each a function the join page calls for the worker's status.

Every text that came from a link, a file or a person goes through ``md`` (shown
literally), so a crafted ``PROLIFIC_PID`` or consent file cannot restyle the page.
"""

from __future__ import annotations

import html

import streamlit as st

from components.core import resources, state
from components.core.literal import consent_markdown, md
from components.rating.crowd_admin import app_url
from components.rating.rating_view import finished_here, rate_item
from koed_core import i18n
from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.i18n import N_, _, ngettext
from koed_core.rating import crowd
from koed_core.rating.studies import StudyConfig, StudyRules


def account_signup(store: Store, invite: crowd.Invite) -> None:
    """An account link: consent, screening and a rater account for this study alone."""
    st.title(_("KoED rating study"))
    st.subheader(_("Consent"), anchor=False)
    left, right = st.columns(2)
    left.markdown(consent_markdown(invite.consent_ko))
    right.markdown(consent_markdown(invite.consent_en))
    study_langs = resources.rules().config(invite.study_id).langs
    with st.form("crowd.account"):
        agreed = st.checkbox(_("I have read this and agree to take part."))
        native = st.radio(
            _("Your native language"),
            NATIVE,
            format_func=native_names().__getitem__,
            horizontal=True,
        )
        years_korea = st.number_input(_("Years lived in Korea"), 0, 100, 0)
        years_english = st.number_input(_("Years lived in an English-speaking country"), 0, 100, 0)
        username = st.text_input(_("Username (lowercase letters, digits, . _ -)"))
        password = st.text_input(_("Password (at least 8 characters)"), type="password")
        again = st.text_input(_("Password again"), type="password")
        sent = st.form_submit_button(_("Create my rater account"), type="primary")
    if not sent:
        return
    if not agreed:
        st.warning(_("Please read the consent text and tick the box first."))
        return
    if password != again:
        st.error(_("The two passwords differ."))
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
            _(
                "Thank you. This study needs native-level speakers of its languages, so it "
                "has no items for you; your account will not be used."
            )
        )
        return
    resources.rules().save_profile(
        crowd.profile_of(worker, native, float(years_korea), float(years_english), langs)
    )
    st.success(
        _(
            "Account {name} created. Log in with it to rate this study (calibration first).",
            name=md(worker.username),
        )
    )
    st.link_button(_("Log in"), app_url("login"))


COOKIE_SET = "crowd.cookie_set"


def item_language_of(config: StudyConfig) -> str | None:
    """A study's item language before anyone is screened (its only one, else None)."""
    return config.langs[0] if len(set(config.langs)) == 1 else None


def item_language(worker: crowd.Worker, study_langs: tuple[str, ...]) -> str | None:
    """The language of the items this worker rates, when there is one (Korean items:
    Korean pages); None when they may rate both (the browser's language decides)."""
    rated = tuple(worker.languages) or tuple(study_langs)
    return rated[0] if len(set(rated)) == 1 else None


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
    st.title(_("KoED rating study"))
    st.info(
        _(
            "This page opens from a study's invite link (for example on Prolific). Raters "
            "with an account: Log in first, then open Rate responses."
        )
    )


def refused(err: crowd.CrowdError) -> None:
    """A link or platform id that does not let this person in, and why."""
    st.title(_("KoED rating study"))
    st.error(md(str(err)), icon=":material/link_off:")


def stopped(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> None:
    """Screened out, nothing left, or stopped by the quality checks: each with its code."""
    if (worker.stop_reason or "").startswith("screening"):
        st.info(
            _(
                "Thank you for your time. This study needs native-level speakers of its "
                "languages, so we cannot offer you items."
            )
        )
    elif worker.stop_reason == crowd.NO_ITEMS:
        st.info(
            _(
                "Thank you for your time. Every item has all the ratings it needs now, so "
                "nothing is left for you to rate."
            )
        )
    else:
        st.info(
            _(
                "Thank you for your time. Some of your answers did not match our quality "
                "checks, so this session ends here. The study's organisers will review it."
            )
        )
    _code_and_way_back(store, worker, invite)


def finished(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> None:
    """The completion code and the way back to the platform."""
    st.success(_("Thank you! You have finished."))
    _code_and_way_back(store, worker, invite)


OUTCOME_NAMES = {
    "completed": N_("Your completion code: {code}"),
    "screened_out": N_("Your code: {code}"),
    "failed_checks": N_("Your code: {code}"),
}
NEXT_STEP = {
    "completed": N_(
        "Next: go back to the platform with this code (the button below, or copy the code "
        "there). The researchers review your work, then approve your pay."
    ),
    "screened_out": N_(
        "This visit is paid: go back to the platform with this code (the button below, or "
        "copy the code there). Please do not return the study (Return): a returned study is "
        "not paid."
    ),
    "failed_checks": N_(
        "Next: go back to the platform with this code (the button below, or copy the code "
        "there). The researchers review your answers before they decide on payment."
    ),
}
"""What a worker does with each code, and whether the visit is paid (a screen-out is
paid by the study's rule; completions and failed checks wait for the researchers'
review): a code with no next step leaves a worker guessing."""
NATIVE = ("ko", "en", "other")
OTHER = N_("Other")


def native_names() -> dict[str, str]:
    """The native-language choices as the radio shows them: each language by its own
    name (a reader finds theirs whatever the page's language), and "other"."""
    return {**i18n.NAMES, "other": _(OTHER)}


def _code_and_way_back(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> None:
    given = crowd.give_code(store, worker, invite)
    if given is None:
        return
    kind, code = given
    st.markdown(_(OUTCOME_NAMES[kind], code="**" + md(code) + "**"))
    st.markdown(_(NEXT_STEP[kind]))
    post_to = crowd.submit_to(store, worker) if invite.platform == "mturk" else None
    if post_to:
        assignment = (Crowd(store).worker(worker.username) or {}).get("study_ref") or ""
        show_mturk_form(post_to, assignment, code)
    elif invite.platform == "mturk":
        st.warning(
            _(
                "This page was not opened with MTurk's own return address, so it cannot "
                "submit the HIT for you: copy the code above into the HIT on MTurk."
            )
        )
    elif url := invite.back_url(code):
        st.link_button(_("Back to the platform"), url)


def mturk_form(action: str, assignment_id: str, code: str) -> str:
    """The ExternalQuestion's answer: a POST of assignmentId and the code to MTurk (the
    action is MTurk's own host, checked; every value escaped)."""
    fields = {"assignmentId": assignment_id, "completion_code": code}
    inputs = "".join(
        f'<input type="hidden" name="{name}" value="{html.escape(value, quote=True)}">'
        for name, value in fields.items()
    )
    label = html.escape(_("Submit the HIT"))
    return (
        f'<form method="post" action="{html.escape(action, quote=True)}" target="_top" '
        'data-koed-mturk="1">'
        f'{inputs}<button type="submit" style="padding:0.5rem 1rem;font-size:1rem">'
        f"{label}</button></form>"
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
    st.title(_("KoED rating study"))
    st.info(_("Preview: accept the HIT to start."), icon=":material/visibility:")
    st.markdown(
        ngettext(
            "You will rate how empathetic a listener's replies are, in {n} batch of {size} items.",
            "You will rate how empathetic a listener's replies are, in {n} batches of "
            "{size} items.",
            int(invite.batches),
            size=int(invite.batch_size),
        )
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
                _("Your scores were far from the references, so here is the calibration again.")
            )
    elif len(mine) > len(stored) or progress.get("feedback") != shown:
        feedback = progress.get("feedback")
        shown_now = feedback if isinstance(feedback, dict) else None
        crowd.save_calibration(store, worker, mine, shown_now)
    return progress


def consent_step(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> None:
    """The consent text in both languages and one box to tick."""
    st.subheader(_("Consent"), anchor=False)
    left, right = st.columns(2)
    left.markdown(consent_markdown(invite.consent_ko))
    right.markdown(consent_markdown(invite.consent_en))
    agreed = st.checkbox(_("I have read this and agree to take part."), key=state.CROWD_AGREE)
    if st.button(_("Continue"), type="primary", disabled=not agreed):
        crowd.consent(store, worker, invite)
        st.rerun()


def screening_step(
    store: Store, rules: StudyRules, worker: crowd.Worker, langs: tuple[str, ...]
) -> None:
    """Native language and years abroad: who may rate which language."""
    st.subheader(_("About you"), anchor=False)
    with st.form("crowd.screening"):
        native = st.radio(
            _("Your native language"),
            NATIVE,
            format_func=native_names().__getitem__,
            horizontal=True,
        )
        years_korea = st.number_input(_("Years lived in Korea"), 0, 100, 0)
        years_english = st.number_input(_("Years lived in an English-speaking country"), 0, 100, 0)
        sent = st.form_submit_button(_("Continue"), type="primary")
    if sent:
        ok = crowd.screen(store, worker, langs, native, float(years_korea), float(years_english))
        if ok:
            rules.save_profile(
                crowd.profile_of(worker, native, float(years_korea), float(years_english), ok)
            )
        st.rerun()


def progress_of(store: Store, worker: crowd.Worker, invite: crowd.Invite) -> crowd.BatchState:
    """The worker's batch progress, with what they can still be given kept in the session
    between clicks (asked again only when an item is done)."""
    known = st.session_state.setdefault(WORKLOAD, {})
    return crowd.batch_state(store, worker, invite, known)


WORKLOAD = "crowd.workload"
FLAG_REASONS = {"broken": N_("broken (the text is garbled or cut)"), "offensive": N_("offensive")}


def batch_step(store: Store, rules: StudyRules, worker: crowd.Worker, invite: crowd.Invite) -> None:
    """The next item of the worker's batch, with the batch's progress (responses only:
    attention checks come on top) and a flag for real responses."""
    progress = progress_of(store, worker, invite)
    st.progress(
        progress.in_batch / progress.batch_size,
        text=_(
            "Batch {batch} of {batches}: {done} of {size} rated",
            batch=progress.batch,
            batches=invite.batches,
            done=progress.in_batch,
            size=progress.batch_size,
        ),
    )
    item = crowd.next_item(store, worker, invite)
    if item is None:
        crowd.finish(store, worker)
        st.rerun()
        return
    if rate_item(rules, item, worker.username, "crowd"):
        crowd.check_attention(store, worker)
        st.rerun()
    if item.instructed_score is not None:
        return  # a check says what to choose: it cannot be flagged instead
    reason = st.selectbox(
        _("Something wrong with this item?"),
        list(FLAG_REASONS),
        format_func=i18n.choices(FLAG_REASONS).__getitem__,
        key=state.rate_flag_reason(item.assignment_id),
    )
    if st.button(_("Flag it and go on"), key=state.rate_flag(item.assignment_id)):
        try:
            crowd.flag(store, worker, item, reason)
        except KoedError as err:
            st.error(md(str(err)))
            return
        finished_here("crowd")
        st.rerun()
