"""The study dashboard's Prolific section: per link published on Prolific, the sync read
every minute while the link is live (returns, flags, places), the review behind a
confirmation, and the log of every call the app made on the account."""

from __future__ import annotations

import os
import time

import pandas as pd
import streamlit as st

from components.core import auth, language, resources, tables
from components.core.literal import md
from components.rating import prolific_inbox
from koed_core import i18n
from koed_core.config import merged_env
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific, prolific_pay
from koed_core.rating.crowd.prolific_client import ProlificClient

SYNC_EVERY_S = 60
IN_APP = {
    "stopped": N_("stopped"), "returned": N_("returned"), "replaced": N_("replaced"),
    "timed out": N_("timed out"),
}  # fmt: skip
"""A place holder's status in the app, as the places table says it."""


def columns() -> dict[str, str]:
    """The section's table headers in the reader's language (the values stay as Prolific
    and the call log have them)."""
    return {
        "participant_id": _("Participant"), "status": _("Status on Prolific"),
        "study_code": _("Code entered"), "flag": _("Why flagged"), "decision": _("Decision"),
        "action": _("Sent as"), "note": _("Note"), "at": _("When (UTC)"), "what": _("What"),
        "method": _("Method"), "path": _("Path"), "outcome": _("Outcome"), "tries": _("Tries"),
    }  # fmt: skip


def render_prolific_links(study_id: int) -> None:
    """Each of the study's links that has a Prolific study, for admins."""
    rows = [
        r
        for r in Crowd(resources.store()).invites(study_id)
        if r["platform"] == "prolific" and (r.get("prolific_study_id") or r.get("prolific_arms"))
    ]
    if not rows or not auth.is_admin():
        return
    st.subheader(_("Prolific"), anchor=False)
    for row in rows:
        invite = crowd.Invite.from_row(row)
        title = _(
            "Prolific study {study} (link {invite})",
            study=md(", ".join(invite.prolific_studies)),
            invite=md(invite.id),
        )
        with st.expander(title, expanded=True):
            live = not invite.revoked and time.time() < invite.expires
            st.fragment(_synced, run_every=SYNC_EVERY_S if live else None)(invite.id)
            _review(invite)
            prolific_inbox.render_messages(invite)
            _calls(invite)


def _client(invite: crowd.Invite) -> ProlificClient | None:
    try:
        env = merged_env(os.environ, resources.secrets())
        return ProlificClient.from_env(env, resources.store(), invite_id=invite.id)
    except KoedError as err:
        st.info(md(str(err)))
        return None


def _synced(invite_id: str) -> None:
    """One sync and what it found (a fragment: it runs again every minute)."""
    language.start()  # a fragment's own run starts in a thread of its own
    row = Crowd(resources.store()).invite(invite_id)
    client = _client(crowd.Invite.from_row(row)) if row else None
    if row is None or client is None:
        return
    if prolific.synced_within(resources.store(), invite_id, SYNC_EVERY_S / 2):
        _heard(invite_id)
        _flagged(invite_id)  # read moments ago (another click, another admin): not again
        return
    try:
        reports = prolific.sync_link(resources.store(), client, crowd.Invite.from_row(row))
    except KoedError as err:
        st.error(md(str(err)))
        _heard(invite_id)
        return
    for report in reports:
        _report(report)
    _heard(invite_id)
    _flagged(invite_id)


def _heard(invite_id: str) -> None:
    """When the app last heard from Prolific: its last signed event and its last sync."""
    log = ProlificLog(resources.store())
    event, synced = log.last_event(), log.last_sync(invite_id)
    if event is None:
        st.caption(
            _(
                "No event from Prolific yet (events need `koed serve --domain` and a "
                "subscription); returns are read by the sync every minute. Last sync: {sync}.",
                sync=md(synced or _("never")),
            )
        )
        return
    st.caption(
        _(
            "Last event from Prolific: {at} ({what}: {outcome}). Last sync: {sync}.",
            at=md(event["received_at"]),
            what=md(f"{event['event_type']} {event['status'] or ''}".strip()),
            outcome=md(event["outcome"]),
            sync=md(synced or _("never")),
        )
    )


def _report(report: prolific.SyncReport) -> None:
    """What one sync of one arm read and did."""
    if report.lang:
        names = {"ko": _("Korean"), "en": _("English")}
        st.markdown(_("**{language} arm**", language=md(names.get(report.lang, report.lang))))
    st.caption(
        _(
            "Read {n} submissions at {moment}; study {status}; places on Prolific: {places}. "
            "Read again every minute while the link is live.",
            n=i18n.number(report.read),
            moment=md(time.strftime("%H:%M:%S")),
            status=md(report.study_status or "?"),
            places=i18n.number(report.places or 0),
        )
    )
    if report.ended:
        st.info(
            _(
                "Ended in the app (returned or timed out on Prolific), their places free: {who}",
                who=md(", ".join(report.ended)),
            )
        )
    if report.transition is not None:
        t = report.transition
        said = (
            _(
                "Paused on Prolific: {active} people active, the server holds {capacity}.",
                active=i18n.number(t.active),
                capacity=i18n.number(t.capacity),
            )
            if t.action == "PAUSE"
            else _(
                "Started again on Prolific: {active} people active, the server holds {capacity}.",
                active=i18n.number(t.active),
                capacity=i18n.number(t.capacity),
            )
        )
        st.warning(md(said), icon=":material/pause_circle:")
    if report.raised_from is not None:
        st.info(
            _(
                "Places raised on Prolific from {old} to {new}.",
                old=i18n.number(report.raised_from),
                new=i18n.number(report.places or 0),
            )
        )
    _places(report)


def _places(report: prolific.SyncReport) -> None:
    """What the sync counted for places: each submission holding a Prolific place and
    none in the app, and why it raised the places or not (on its way, within the grace)."""
    plan = report.plan
    if plan is None or not plan.holders:
        return
    st.caption(
        _(
            "Places on Prolific follow the link's {link} places plus the submissions that "
            "hold a Prolific place and none in the app for longer than {grace} minutes from "
            "their start; at most {limit}.",
            link=i18n.number(plan.link),
            grace=i18n.number(plan.grace),
            limit=i18n.number(plan.limit),
        )
    )
    rows = [
        {
            "participant_id": h.participant_id,
            "status": h.status,
            "in_app": _(IN_APP[h.in_app]) if h.in_app in IN_APP else h.in_app or _("no visit"),
            "minutes": h.minutes,
            "counted": _("counted") if h.counted else _("on the way"),
        }
        for h in plan.holders
    ]
    headers = {**columns(), "in_app": _("In the app"), "minutes": _("Minutes since start"),
               "counted": _("For places")}  # fmt: skip
    tables.show(pd.DataFrame(rows), column_config=headers, hide_index=True)
    if plan.capped:
        st.warning(
            _(
                "{needed} places would be needed on Prolific, but this link allows at most "
                "{limit}: raise its maximum to let the sync add more.",
                needed=i18n.number(plan.needed),
                limit=i18n.number(plan.limit),
            )
        )


def _flagged(invite_id: str) -> None:
    flagged = [s for s in ProlificLog(resources.store()).submissions(invite_id) if s["flag"]]
    if flagged:
        st.warning(_("Flagged submissions: look before anyone approves them."))
        frame = pd.DataFrame(flagged)[["participant_id", "status", "study_code", "flag"]]
        tables.show(frame, column_config=columns(), hide_index=True)


def _review(invite: crowd.Invite) -> None:
    """The decisions as Prolific actions: the plan, then applied behind a confirmation."""
    steps = prolific_pay.review_plan(resources.store(), invite)
    st.markdown(_("**Review on Prolific**"))
    if not steps:
        st.caption(
            _(
                "No submission awaits review and no decision is recorded yet: decide in the "
                "table above."
            )
        )
        return
    plan = pd.DataFrame(
        [
            {
                "participant_id": s.participant_id,
                "decision": s.decision or _("undecided"),
                "action": s.action or "",
                "note": s.note or (f"{s.category}: {s.message}" if s.message else ""),
            }
            for s in steps
        ]
    )
    tables.show(plan, column_config=columns(), hide_index=True)
    todo = [s for s in steps if s.action]
    if not todo:
        st.caption(_("Nothing to send to Prolific now: the table says why for each submission."))
        return
    sure = st.checkbox(
        _("I have read the plan: approve, reject and ask back these {n} submissions", n=len(todo)),
        key=f"prolific.confirm.{invite.id}",
    )
    if st.button(_("Apply on Prolific"), disabled=not sure, key=f"prolific.apply.{invite.id}"):
        client = _client(invite)
        if client is None:
            return
        try:
            done = prolific_pay.apply_review(client, resources.store(), todo)
        except KoedError as err:
            st.error(md(str(err)))
            return
        st.success(_("Sent to Prolific: {n} actions.", n=i18n.number(len(done))))


def _calls(invite: crowd.Invite) -> None:
    """What the app did on the researcher's account for this link (never the token)."""
    calls = ProlificLog(resources.store()).calls(invite.id, limit=50)
    st.markdown(_("**Calls to Prolific** (the newest {n})", n=i18n.number(len(calls))))
    if calls:
        headers = {**columns(), "status": _("HTTP status")}
        tables.show(pd.DataFrame(calls), column_config=headers, hide_index=True, height=200)
    else:
        st.caption(_("No call yet."))
