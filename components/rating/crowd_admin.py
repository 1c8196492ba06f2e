"""The admin's side of a crowd study: invite links, and the workers to pay or not."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.shared import auth, resources, tables
from components.shared.literal import md
from koed_core import csv_safe
from koed_core.db.crowd import Crowd
from koed_core.rating import crowd


def app_url(path: str) -> str:
    """An address in this app, from the one the browser is on (works behind a proxy)."""
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


def render_invite_form(open_studies: dict[int, str]) -> None:
    """Create a signed, expiring invite link with a cap on places."""
    if not open_studies:
        return
    with st.form("studies.crowd_invite"):
        st.subheader("Invite link for a crowd study", anchor=False)
        st.caption(
            "People who open the link join the study with no password, under a pseudonym "
            "bound to their platform id; they see only the rating page. A returning worker "
            "goes on where they stopped."
        )
        left, right = st.columns(2)
        study_id = left.selectbox("Study", list(open_studies), format_func=open_studies.get)
        platform = left.radio(
            "Platform",
            ["prolific", "mturk", "none", "account"],
            horizontal=True,
            help="account: people create a rater account for this study alone (password "
            "login), instead of coming from a platform",
        )
        days = left.number_input("Valid for (days)", 1, 365, 14)
        cap = left.number_input("Places", 1, 10_000, 30)
        batch_size = right.number_input(
            "Responses per batch", 1, 500, 20, help="the study's attention checks come on top"
        )
        batches = right.number_input("Batches per worker", 1, 50, 1)
        reward = right.number_input("Reward per worker (for the pay figures)", 0.0, 1000.0, 3.0)
        currency = right.text_input("Currency", "GBP", max_chars=3)
        attempts = right.number_input("Calibration attempts", 1, 5, 1)
        code = left.text_input("Completion code (empty: generated)")
        screenout = left.text_input("Screen-out code (empty: generated)")
        failed = left.text_input("Failed-checks code (empty: generated)")
        prolific_id = right.text_input("Prolific study id (checks STUDY_ID; optional)")
        redirect = right.text_input("Redirect when done (Prolific: made from the code)")
        people = st.text_area(
            "Ids of your own list (platform none): one per line, each gets its own link"
        )
        default_ko, default_en = crowd.default_consent()
        consent_ko = st.text_area("Consent (Korean)", default_ko)
        consent_en = st.text_area("Consent (English)", default_en)
        made = st.form_submit_button("Create the link", type="primary")
    if made:
        try:
            invite, token = crowd.create_invite(
                resources.store(),
                resources.server_key(),
                int(study_id),
                platform=platform,
                days=float(days),
                cap=int(cap),
                batch_size=int(batch_size),
                batches=int(batches),
                completion_code=code.strip() or None,
                screenout_code=screenout.strip() or None,
                failed_code=failed.strip() or None,
                prolific_study_id=prolific_id.strip() or None,
                calibration_attempts=int(attempts),
                redirect_url=redirect.strip() or None,
                consent_ko=consent_ko,
                consent_en=consent_en,
                reward=float(reward),
                currency=currency.strip() or "GBP",
                created_by=auth.username(),
            )
            links = (
                crowd.personal_links(resources.server_key(), invite, token, people.splitlines())
                if platform == "none"
                else {}
            )
        except crowd.CrowdError as err:
            st.error(md(str(err)))
        else:
            st.success(
                f"Invite link created. Codes: completion {md(invite.completion_code)}, "
                f"screen-out {md(invite.screenout_code)}, failed checks "
                f"{md(invite.failed_code)}. Paste the link as the study's URL on the "
                "platform; its placeholders fill in the worker's ids."
            )
            share = crowd.check_share(resources.store(), invite)
            if share > crowd.CHECK_SHARE_WARN:
                st.warning(
                    f"{share:.0%} of what a worker is shown are attention checks (the study's "
                    "checks per batch over the batch's responses): unpaid reading for them. "
                    "Larger batches, or a study with fewer checks, lower it.",
                    icon=":material/warning:",
                )
            if links:
                personal_links_download(links, invite.id)
            else:
                st.code(invite_url(token, platform), language=None, wrap_lines=True)


def personal_links_download(links: dict[str, str], invite_id: str) -> None:
    """A researcher's own list: one link per id, to send each person theirs."""
    rows = [{"id": person, "link": app_url(f"join?{query}")} for person, query in links.items()]
    tables.show(rows, hide_index=True)
    st.download_button(
        "Personal links (CSV)",
        csv_safe.to_csv(pd.DataFrame(rows)),
        file_name=f"koed-links-{invite_id}.csv",
        mime="text/csv",
    )


def render_crowd_dashboard(study_id: int) -> None:
    """Per invite: places, time to the code, effective hourly pay, who to pay, the
    platform's bulk files."""
    rows = Crowd(resources.store()).invites(study_id)
    if not rows:
        return
    st.subheader("Crowd workers", anchor=False)
    key = resources.server_key()
    for row in rows:
        invite = crowd.Invite.from_row(row)
        places = crowd.places(resources.store(), invite)
        with st.expander(f"{md(invite.platform)} link {md(invite.id)}: {places}", expanded=True):
            if invite.platform != "none":
                st.code(
                    invite_url(crowd.token_for(invite.id, key), invite.platform),
                    language=None,
                    wrap_lines=True,
                )
            _cap_form(invite)
            frame, summary = crowd.pay_report(resources.store(), invite)
            guess = crowd.estimate(resources.store(), invite)
            if guess["minutes"] is not None:
                pay = guess["hourly_pay"]
                st.caption(
                    f"Estimated before launch: {guess['minutes']:.0f} minutes from joining to "
                    "the code (consent, screening, calibration, every batch at this study's "
                    "mean item length)"
                    + (f"; {pay:.2f} {md(invite.currency)} an hour." if pay is not None else ".")
                )
            st.caption(
                f"{md(str(crowd.places(resources.store(), invite)))}; a worker inactive for "
                f"{crowd.timeout_minutes(resources.store(), invite):d} minutes at any step "
                "gives their place back."
            )
            a, b, c = st.columns(3)
            a.metric("Median minutes, joining to completion", _num(summary["median_min"]))
            b.metric("Slowest 10% (minutes)", _num(summary["p90_min"]))
            c.metric(
                f"Effective pay per hour ({md(invite.currency)})",
                _num(summary["hourly_pay"]),
                help=f"{invite.reward} {md(invite.currency)} per completion over the median "
                "minutes from joining to the completion code (consent, screening and "
                "calibration included), as the platform measures a submission. Completions "
                "only: screen-outs are paid apart.",
            )
            if summary["screened_out"]:
                st.caption(
                    f"Screened out: {summary['screened_out']:.0f} worker(s), median "
                    f"{md(_num(summary['screenout_median_min']))} minutes to the screen-out code "
                    "(paid as that code's action, not in the pay per hour above)."
                )
            if frame.empty:
                st.caption("Nobody has joined through this link yet.")
                continue
            flagging = frame[frame["flag_share"] > crowd.FLAG_SHARE_WARN]
            if not flagging.empty:
                st.warning(
                    f"{len(flagging)} worker(s) flagged more than "
                    f"{crowd.FLAG_SHARE_WARN:.0%} of their items: review them.",
                    icon=":material/flag:",
                )
            straight = frame[frame["straight_lined"].astype(bool)]
            if not straight.empty:
                st.warning(
                    f"{len(straight)} worker(s) gave one score on every dimension of every "
                    f"response (at least {crowd.STRAIGHT_MIN_ITEMS}): straight-lining; review "
                    "them.",
                    icon=":material/horizontal_rule:",
                )
            tables.show(
                frame, hide_index=True, column_config=WORKER_COLUMNS, column_order=WORKER_ORDER
            )
            _decisions(invite, frame)


WORKER_COLUMNS = {
    "username": "Worker (pseudonym)",
    "worker_id": "Platform id",
    "status": "Status",
    "stop_reason": "Why stopped",
    "rated": "Responses rated",
    "checks": "Attention checks rated",
    "flagged": "Items flagged",
    "flag_share": st.column_config.NumberColumn("Flag share", format="%.2f"),
    "last_activity": "Last activity (UTC)",
    "idle_min": st.column_config.NumberColumn("Idle minutes", format="%.0f"),
    "minutes": st.column_config.NumberColumn("Minutes to code", format="%.1f"),
    "code_kind": "Code shown",
    "code_given": "Code",
    "attention_failed": "Attention checks failed",
    "straight_lined": st.column_config.CheckboxColumn("One score everywhere"),
    "suggested": st.column_config.TextColumn(
        "Suggested",
        help="; ".join(f"{name}: {why}" for name, why in crowd.SUGGESTIONS.items()),
    ),
    "decision": "Your decision",
    "decision_reason": "Reason",
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
        "Places (raise or lower while live)", 1, 100_000, invite.cap, key=f"crowd.cap.{invite.id}"
    )
    if right.button("Set places", key=f"crowd.setcap.{invite.id}") and cap != invite.cap:
        crowd.set_cap(resources.store(), invite, int(cap))
        st.rerun()


def _decisions(invite: crowd.Invite, frame: pd.DataFrame) -> None:
    """Record decisions (a rejection with its written reason), accept the suggestions in
    one step, and download the platform's bulk files."""
    with st.form(f"crowd.decide.{invite.id}"):
        who = st.selectbox("Worker", frame["username"].tolist())
        decision = st.radio("Decision", crowd.DECISIONS, horizontal=True)
        reason = st.text_input("Reason (required to reject; the platform shows it the worker)")
        if st.form_submit_button("Record the decision"):
            try:
                crowd.decide(resources.store(), who, decision, auth.username(), reason)
            except crowd.CrowdError as err:
                st.error(md(str(err)))
            else:
                st.rerun()
    if st.button(
        "Record all suggested (accept, screen out, replace)", key=f"crowd.all.{invite.id}"
    ):
        count = crowd.accept_suggested(resources.store(), invite, auth.username())
        st.toast(f"{count:d} decision(s) recorded; rejections wait for your reason.")
        st.rerun()
    files = crowd.decision_files(resources.store(), invite)
    files[f"koed-{invite.platform}-{invite.id}-decisions.csv"] = crowd.platform_csv(
        resources.store(), invite
    )  # every decided worker: ids, decision, reason and the code they received
    for column, (name, text) in zip(st.columns(len(files)), files.items(), strict=True):
        column.download_button(name, text, file_name=name, key=f"crowd.{name}.{invite.id}")
    if not invite.revoked and st.button("Withdraw the link", key=f"crowd.revoke.{invite.id}"):
        Crowd(resources.store()).revoke(invite.id)
        st.rerun()


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
