"""The sync of a link's Prolific study: its submissions read back (returns end visits,
leaked codes and too-fast submissions are flagged) and its places raised only for people
who provably hold a Prolific place and none in the app (:mod:`prolific_places`).

Endpoints (https://docs.prolific.com/api-reference): ``GET /api/v1/studies/{id}/submissions/``
page by page (studies/get-study-submissions: ``id`` is the ``SESSION_ID``,
``participant_id``, ``status``, ``started_at``, ``completed_at``, ``study_code``);
``GET /api/v1/studies/{id}/`` and ``PATCH /api/v1/studies/{id}/`` with
``total_available_places`` (Prolific lets places be increased, never decreased).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from koed_core.db import Store, utcnow
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.i18n import _
from koed_core.rating.crowd.decisions import estimate, report_rows
from koed_core.rating.crowd.identities import UNDER_WAY
from koed_core.rating.crowd.links import CrowdError, Invite
from koed_core.rating.crowd.prolific_arms import add_to_group, arm_views
from koed_core.rating.crowd.prolific_capacity import Transition, balance
from koed_core.rating.crowd.prolific_client import ProlificClient
from koed_core.rating.crowd.prolific_places import PlacesPlan, plan_places

ENDED = ("RETURNED", "TIMED-OUT")
"""Submissions whose place Prolific has freed."""

FAST_SHARE = 1 / 3
"""A submission faster than this share of the median real visit is flagged."""


@dataclass
class SyncReport:
    """What one sync read and did."""

    read: int = 0
    ended: list[str] = field(default_factory=list)
    """Participants whose visit ended because Prolific freed their place."""
    flagged: list[tuple[str, str]] = field(default_factory=list)
    """(participant, reason) newly flagged."""
    places: int | None = None
    """Prolific's places now (as Prolific answered)."""
    raised_from: int | None = None
    """Prolific's places before this sync raised them."""
    study_status: str | None = None
    plan: PlacesPlan | None = None
    """The submissions holding a Prolific place and none in the app, and the places they
    ask for."""
    would_raise: int | None = None
    """Places a dry run (``raise_places`` False) would have asked for."""
    lang: str | None = None
    """The language arm this sync read (None: the link's only study)."""
    grouped: int = 0
    """Participants sent to the study's participant group (kept out of other arms and
    later links)."""
    transition: Transition | None = None
    """A pause at the server's capacity, or a start again below it, made by this sync."""

    def summary(self) -> dict[str, Any]:
        """What a script reads back (``koed prolific sync --json``)."""
        plan = self.plan
        return {
            "arm": self.lang,
            "grouped": self.grouped,
            "transition": self.transition.__dict__ if self.transition else None,
            "read": self.read,
            "ended": self.ended,
            "flagged": self.flagged,
            "places": self.places,
            "raised_from": self.raised_from,
            "would_raise": self.would_raise,
            "study_status": self.study_status,
            "places_link": plan.link if plan else None,
            "places_limit": plan.limit if plan else None,
            "places_needed": plan.needed if plan else None,
            "holders": [{**h.__dict__, "why": str(h)} for h in plan.holders] if plan else [],
        }


def sync(
    store: Store,
    client: ProlificClient,
    invite: Invite,
    at: datetime | None = None,
    *,
    raise_places: bool = True,
) -> SyncReport:
    """Read the study's submissions: a RETURNED or TIMED-OUT one ends that visit in the app
    and frees its place at once; a code with no visit behind it, a code the app did not
    show, or a submission far faster than the real visits is flagged with the reason;
    Prolific's places are raised for the submissions that provably hold a Prolific place
    and none in the app, past the arrival grace and at most to the link's limit
    (:mod:`koed_core.rating.crowd.prolific_places`), unless ``raise_places`` is False: a
    dry run reads, reports what it would raise, and changes nothing on Prolific.

    Raises:
        CrowdError: the link was never published on Prolific.
        ProlificError: Prolific refused a call.
    """
    if not invite.prolific_study_id:
        raise CrowdError(_("the link has no Prolific study yet: `koed prolific publish` first"))
    study_path = f"/api/v1/studies/{invite.prolific_study_id}/"
    keys = ("id", "participant_id", "status")  # what the sync and the stored row read
    found = list(client.pages("reading the submissions", study_path + "submissions/", keys))
    log, crowd = ProlificLog(store), Crowd(store)
    known = {r["id"]: r for r in log.submissions(invite.id)}
    report = SyncReport(read=len(found))
    fastest = _real_median(store, invite)
    rows = []
    for sub in found:
        worker = crowd.worker_by_platform_id(
            invite.study_id, "prolific", str(sub.get("participant_id") or "")
        )
        if sub.get("status") in ENDED and _same_session(worker, sub):
            assert worker is not None
            if worker["status"] in UNDER_WAY:
                why = "returned" if sub["status"] == "RETURNED" else "timed out"
                crowd.update_worker(
                    worker["username"], status="returned", stop_reason=f"{why} on Prolific"
                )
                report.ended.append(str(sub["participant_id"]))
        flag = None if (known.get(sub["id"]) or {}).get("flag") else _flag(sub, worker, fastest)
        if flag:
            report.flagged.append((str(sub["participant_id"]), flag))
        rows.append({**sub, "flag": flag})
    report.lang = invite.arm
    if raise_places:  # a dry run changes nothing on Prolific; a failed call stores nothing
        people = [str(s.get("participant_id") or "") for s in found if s["id"] not in known]
        report.grouped = add_to_group(store, client, invite.study_id, people)
    log.save_submissions(invite.id, rows)
    study = client.call_object(
        "reading the study", "GET", study_path, require=("status", "total_available_places")
    )
    report.study_status = study.get("status")
    report.places = int(study.get("total_available_places") or 0)
    if raise_places:  # a dry run changes nothing on Prolific
        report.transition = balance(store, client, invite, str(report.study_status or ""))
    report.plan = plan_places(store, invite, found, at)
    target = report.plan.target
    if target <= report.places or study.get("status") == "COMPLETED":
        return report
    if not raise_places:
        report.would_raise = target
        return report
    answer = client.call_object(
        "raising the study's places", "PATCH", study_path, {"total_available_places": target}
    )
    now_places = int(answer.get("total_available_places") or 0)
    if now_places > report.places:  # what Prolific says it holds now, not what was asked
        report.raised_from, report.places = report.places, now_places
    return report


def sync_link(
    store: Store,
    client: ProlificClient,
    invite: Invite,
    at: datetime | None = None,
    *,
    raise_places: bool = True,
) -> list[SyncReport]:
    """:func:`sync` for every language arm the link was published as (a ko+en link: one
    study per arm; a one-language link: its study).

    Raises:
        CrowdError: the link was never published on Prolific.
        ProlificError: Prolific refused a call.
    """
    views = arm_views(store, invite)
    if not any(view.prolific_study_id for view in views):
        raise CrowdError(_("the link has no Prolific study yet: `koed prolific publish` first"))
    return [
        sync(store, client, view, at, raise_places=raise_places)
        for view in views
        if view.prolific_study_id
    ]


def synced_within(store: Store, invite_id: str, seconds: float) -> bool:
    """Whether a sync stored this link's submissions in the last ``seconds`` (the
    dashboard reads Prolific at most that often, however many clicks and admins)."""
    last = ProlificLog(store).last_read(invite_id)
    if not last:
        return False
    return (utcnow() - datetime.fromisoformat(last)).total_seconds() < seconds


def _same_session(worker: dict[str, Any] | None, sub: dict[str, Any]) -> bool:
    """The worker's visit is this submission (Prolific's SESSION_ID is the submission id)."""
    return worker is not None and (worker.get("session_ref") or "") == str(sub.get("id"))


def _real_median(store: Store, invite: Invite) -> float | None:
    median = report_rows(store, invite)[1].get("median_min")
    if median:
        return float(median)
    return estimate(store, invite)["minutes"]


def _flag(sub: dict[str, Any], worker: dict[str, Any] | None, median: float | None) -> str | None:
    """Why a submission needs a look before anyone approves it, or None."""
    code = sub.get("study_code")
    if sub.get("status") in (*ENDED, "ACTIVE", "RESERVED"):
        return None
    if code and worker is None:
        return f"completion code {code} with no visit in our database"
    if code and worker is not None and not worker.get("code_given"):
        return f"code {code} entered, but the app never showed this person a code"
    if code and worker is not None and code != worker.get("code_given"):
        return f"code {code} entered, but the app showed {worker.get('code_given')}"
    minutes = _minutes(sub)
    if minutes is not None and median and minutes < FAST_SHARE * median:
        return (
            f"finished in {minutes:.1f} minutes on Prolific, under a third of the real "
            f"visits' median ({median:.1f} minutes)"
        )
    return None


def _minutes(sub: dict[str, Any]) -> float | None:
    try:
        start = datetime.fromisoformat(str(sub["started_at"]).replace("Z", "+00:00"))
        end = datetime.fromisoformat(str(sub["completed_at"]).replace("Z", "+00:00"))
    except (KeyError, TypeError, ValueError):
        return None
    return (end - start).total_seconds() / 60
