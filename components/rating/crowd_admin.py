"""The admin's side of inviting people: rater accounts, a crowd study's invite links, and
the workers to pay or not."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from components.core import auth, resources, tables
from components.core.literal import md
from koed_core import i18n
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.i18n import N_, _, ngettext
from koed_core.rating import accounts, crowd
from koed_core.rating.crowd import address

PLATFORM_NAMES = {
    "prolific": "Prolific", "mturk": "MTurk", "none": N_("none"), "account": N_("account"),
}  # fmt: skip
"""The platforms as the form shows them: the two services by their own names."""
DECISION_NAMES = {
    "accept": N_("accept"), "reject": N_("reject"), "replace": N_("replace"),
    "screen_out": N_("screen_out"),
}  # fmt: skip
SUGGESTION_NAMES = {
    **DECISION_NAMES, "review": N_("review"), "wait": N_("wait"), "timed out": N_("timed out"),
}  # fmt: skip
STATUS_NAMES = {
    "consent": N_("consent"), "screening": N_("screening"), "rating": N_("rating"),
    "completed": N_("completed"), "stopped": N_("stopped"), "timed out": N_("timed out"),
}  # fmt: skip
CODE_NAMES = {
    "completed": N_("completed"), "screened_out": N_("screened_out"),
    "failed_checks": N_("failed_checks"),
}  # fmt: skip
"""What the worker table's cells say, in the reader's language (the downloads keep the
English values)."""


def public_base() -> str | None:
    """The app's public address, as the command line reads it: KOED_PUBLIC_URL, else what
    ``koed serve --domain`` recorded in the database; None when neither is set."""
    return address.public_address(resources.store(), None, resources.settings().public_url)


def app_url(path: str) -> str:
    """An address in this app: on the public address when one is set (KOED_PUBLIC_URL or
    ``koed serve --domain``), else on the one the browser is on (works behind a proxy)."""
    public = public_base()
    if public:
        return f"{public}/{path}"
    base = str(st.context.url or "").split("?")[0].rstrip("/")
    root = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    return f"{root}/{path}"


def invite_url(token: str, platform: str) -> str:
    """The link to paste into the platform (its own placeholders included)."""
    return app_url(f"join?invite={token}{crowd.PLACEHOLDERS.get(platform, '')}")


def bound_study(username: str | None) -> int | None:
    """The one study an account made through an account invite may rate, or None."""
    if not username:
        return None
    return Crowd(resources.store()).bound_study(username)


def render_account_form(users_path: Path) -> None:
    """A rater (or admin, annotator) account with a password the admin hands over, and
    the accounts there are."""
    with st.form("studies.invite", clear_on_submit=True):
        st.subheader(_("Invite a rater"), anchor=False)
        left, right = st.columns(2)
        username = left.text_input(_("Username"))
        display = left.text_input(_("Display name"))
        role = left.radio(
            _("Role"),
            accounts.ROLES,
            index=1,
            format_func=i18n.choices({r: r for r in accounts.ROLES}).__getitem__,
            horizontal=True,
        )
        password = right.text_input(_("Password (give it to the rater yourself)"), type="password")
        again = right.text_input(_("Password again"), type="password")
        if st.form_submit_button(_("Create account")):
            if password != again:
                st.error(_("The two passwords differ."))
            else:
                try:
                    accounts.add_user(
                        users_path, username.strip(), role, display.strip() or None, password
                    )
                except KoedError as err:
                    st.error(md(str(err)))
                else:
                    st.success(_("Account {name} created.", name=md(username.strip())))
    users = [
        {
            **user,
            "role": _(user["role"]),
            "waiting_until": user["waiting_until"]
            and i18n.moment(datetime.fromtimestamp(float(user["waiting_until"]))),
        }
        for user in accounts.list_users(users_path)
    ]
    tables.show(
        users,
        hide_index=True,
        column_config={
            "username": _("username"),
            "name": _("name"),
            "role": _("role"),
            "failed_logins": _("failed_logins"),
            "locked": _("locked"),
            "waiting_until": _("waiting_until"),
        },
    )


def platform_names() -> dict[str, str]:
    """The platform radio's labels, in the page's language."""
    return {
        key: label if key in ("prolific", "mturk") else _(label)
        for key, label in PLATFORM_NAMES.items()
    }


def render_crowd_dashboard(study_id: int) -> None:
    """Per invite: places, time to the code, effective hourly pay, who to pay, the
    platform's bulk files."""
    rows = Crowd(resources.store()).invites(study_id)
    if not rows:
        return
    st.subheader(_("Crowd workers"), anchor=False)
    key = resources.server_key()
    for row in rows:
        invite = crowd.Invite.from_row(row)
        places = _places(crowd.places(resources.store(), invite))
        label = _(
            "{platform} link {id}: {places}",
            platform=md(platform_names().get(invite.platform, invite.platform)),
            id=md(invite.id),
            places=places,
        )
        with st.expander(label, expanded=True):
            if invite.platform != "none":
                st.code(
                    invite_url(crowd.token_for(invite.id, key), invite.platform),
                    language=None,
                    wrap_lines=True,
                )
            _cap_form(invite)
            frame, summary = crowd.pay_report(resources.store(), invite)
            guess = crowd.estimate(resources.store(), invite)
            _estimate(invite, guess)
            st.caption(
                _(
                    "{places}; a worker inactive for {minutes} minutes at any step gives their "
                    "place back.",
                    places=md(places),
                    minutes=i18n.number(crowd.timeout_minutes(resources.store(), invite)),
                )
            )
            _pay_figures(invite, summary)
            if frame.empty:
                st.caption(_("Nobody has joined through this link yet."))
                continue
            _warnings(frame)
            tables.show(
                _readable_cells(frame),
                hide_index=True,
                column_config=worker_columns(),
                column_order=WORKER_ORDER,
            )
            _decisions(invite, frame)


def _places(places: crowd.Places) -> str:
    return _(
        "places: {used} / {cap} ({freed} freed)",
        used=places.used,
        cap=places.cap,
        freed=places.freed,
    )


def _estimate(invite: crowd.Invite, guess: dict[str, float | None]) -> None:
    """The minutes and pay per hour a worker is likely to get, worked out before launch."""
    minutes, pay = guess["minutes"], guess["hourly_pay"]
    if minutes is None:
        return
    if pay is None:
        st.caption(
            _(
                "Estimated before launch: {minutes} minutes from joining to the code (consent, "
                "screening, calibration, every batch at this study's mean item length).",
                minutes=i18n.number(minutes),
            )
        )
        return
    st.caption(
        _(
            "Estimated before launch: {minutes} minutes from joining to the code (consent, "
            "screening, calibration, every batch at this study's mean item length); {pay} "
            "{currency} an hour.",
            minutes=i18n.number(minutes),
            pay=i18n.number(pay, 2),
            currency=md(invite.currency),
        )
    )


def _pay_figures(invite: crowd.Invite, summary: dict[str, float | None]) -> None:
    """Time from joining to the code and the effective pay per hour, measured."""
    a, b, c = st.columns(3)
    a.metric(_("Median minutes, joining to completion"), _num(summary["median_min"]))
    b.metric(_("Slowest 10% (minutes)"), _num(summary["p90_min"]))
    reward = "-" if invite.reward is None else i18n.number(invite.reward, 2)
    c.metric(
        _("Effective pay per hour ({currency})", currency=md(invite.currency)),
        _num(summary["hourly_pay"]),
        help=_(
            "{reward} {currency} per completion over the median minutes from joining to the "
            "completion code (consent, screening and calibration included), as the platform "
            "measures a submission. Completions only: screen-outs are paid apart.",
            reward=reward,
            currency=md(invite.currency),
        ),
    )
    screened = int(summary["screened_out"] or 0)
    if screened:
        st.caption(
            ngettext(
                "Screened out: {n} worker, median {minutes} minutes to the screen-out code; "
                "with the completions, {total} {currency} paid, {hourly} {currency} an hour.",
                "Screened out: {n} workers, median {minutes} minutes to the screen-out code; "
                "with the completions, {total} {currency} paid, {hourly} {currency} an hour.",
                screened,
                minutes=md(_num(summary["screenout_median_min"])), currency=md(invite.currency),
                total=md(_num(summary["paid_total"])), hourly=md(_num(summary["paid_hourly_pay"])),
            )
        )  # fmt: skip


def _warnings(frame: pd.DataFrame) -> None:
    """Workers to look at before paying: many flags, or one score everywhere."""
    flagging = len(frame[frame["flag_share"] > crowd.FLAG_SHARE_WARN])
    if flagging:
        st.warning(
            ngettext(
                "{n} worker flagged more than {share} of their items: review them.",
                "{n} workers flagged more than {share} of their items: review them.",
                flagging,
                share=i18n.percent(crowd.FLAG_SHARE_WARN),
            ),
            icon=":material/flag:",
        )
    straight = len(frame[frame["straight_lined"].astype(bool)])
    if straight:
        st.warning(
            ngettext(
                "{n} worker gave one score on every dimension of every response (at least "
                "{least}): straight-lining; review them.",
                "{n} workers gave one score on every dimension of every response (at least "
                "{least}): straight-lining; review them.",
                straight,
                least=crowd.STRAIGHT_MIN_ITEMS,
            ),
            icon=":material/horizontal_rule:",
        )


def _readable_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The worker table with its statuses, codes, suggestions and decisions named in the
    reader's language (the values themselves are English in every download)."""

    def named(column: str, names: dict[str, str]) -> pd.Series:
        return frame[column].map(lambda value: _(names[value]) if value in names else value)

    return frame.assign(
        status=named("status", STATUS_NAMES),
        code_kind=named("code_kind", CODE_NAMES),
        suggested=named("suggested", SUGGESTION_NAMES),
        decision=named("decision", DECISION_NAMES),
    )


def worker_columns() -> dict[str, object]:
    """The worker table's headers, in the page's language."""
    meanings = "; ".join(
        _(SUGGESTION_NAMES.get(name, name)) + ": " + _(why)
        for name, why in crowd.SUGGESTIONS.items()
    )
    return {
        "username": _("Worker (pseudonym)"),
        "worker_id": _("Platform id"),
        "status": _("Status"),
        "stop_reason": _("Why stopped"),
        "rated": _("Responses rated"),
        "checks": _("Attention checks rated"),
        "flagged": _("Items flagged"),
        "flag_share": st.column_config.NumberColumn(_("Flag share"), format="%.2f"),
        "last_activity": _("Last activity (UTC)"),
        "idle_min": st.column_config.NumberColumn(_("Idle minutes"), format="%.0f"),
        "minutes": st.column_config.NumberColumn(_("Minutes to code"), format="%.1f"),
        "code_kind": _("Code shown"),
        "code_given": _("Code"),
        "attention_failed": _("Attention checks failed"),
        "straight_lined": st.column_config.CheckboxColumn(_("One score everywhere")),
        "suggested": st.column_config.TextColumn(_("Suggested"), help=meanings),
        "decision": _("Your decision"),
        "decision_reason": _("Reason"),
    }


WORKER_ORDER = [
    "username", "status", "suggested", "rated", "checks", "idle_min", "attention_failed",
    "straight_lined", "flagged", "flag_share", "code_kind", "minutes", "last_activity",
    "stop_reason", "decision", "decision_reason", "worker_id", "code_given",
]  # fmt: skip
"""What an admin decides from first (at 1366 px the first columns are what shows)."""


def _cap_form(invite: crowd.Invite) -> None:
    left, right = st.columns([3, 1])
    cap = left.number_input(
        _("Places (raise or lower while live)"),
        1,
        100_000,
        invite.cap,
        key=f"crowd.cap.{invite.id}",
    )
    if right.button(_("Set places"), key=f"crowd.setcap.{invite.id}") and cap != invite.cap:
        crowd.set_cap(resources.store(), invite, int(cap))
        st.rerun()


def _decisions(invite: crowd.Invite, frame: pd.DataFrame) -> None:
    """Record decisions (a rejection with its written reason), accept the suggestions in
    one step, and download the platform's bulk files."""
    with st.form(f"crowd.decide.{invite.id}"):
        who = st.selectbox(_("Worker"), frame["username"].tolist())
        decision = st.radio(
            _("Decision"),
            crowd.DECISIONS,
            format_func=i18n.choices(DECISION_NAMES).__getitem__,
            horizontal=True,
        )
        reason = st.text_input(_("Reason (required to reject; the platform shows it the worker)"))
        if st.form_submit_button(_("Record the decision")):
            try:
                crowd.decide(resources.store(), who, decision, auth.username(), reason)
            except crowd.CrowdError as err:
                st.error(md(str(err)))
            else:
                st.rerun()
    if st.button(
        _("Record all suggested (accept, screen out, replace)"), key=f"crowd.all.{invite.id}"
    ):
        count = crowd.accept_suggested(resources.store(), invite, auth.username())
        st.toast(
            ngettext(
                "{n} decision recorded; rejections wait for your reason.",
                "{n} decisions recorded; rejections wait for your reason.",
                count,
            )
        )
        st.rerun()
    files = crowd.decision_files(resources.store(), invite)
    files[f"koed-{invite.platform}-{invite.id}-decisions.csv"] = crowd.platform_csv(
        resources.store(), invite
    )  # every decided worker: ids, decision, reason and the code they received
    for column, (name, text) in zip(st.columns(len(files)), files.items(), strict=True):
        column.download_button(name, text, file_name=name, key=f"crowd.{name}.{invite.id}")
    if not invite.revoked and st.button(_("Withdraw the link"), key=f"crowd.revoke.{invite.id}"):
        Crowd(resources.store()).revoke(invite.id)
        st.rerun()


def _num(value: float | None) -> str:
    return "-" if value is None else i18n.number(value, 1)
