"""Reviewing through Prolific's API: the app's decisions applied to the submissions (a
dry run first), each action once.

Endpoints (https://docs.prolific.com/api-reference):
- ``POST /api/v1/submissions/bulk-approve/`` with ``submission_ids`` ("We strongly
  recommend that you provide a list of submission IDs"; submissions/bulk-approve-submissions);
- ``POST /api/v1/submissions/{id}/transition/`` with ``action`` ``REJECT``, a
  ``rejection_category`` and a ``message`` ("It must be at least 100 chars long"); "this
  endpoint is idempotent" (submissions/transition-submission);
- ``POST /api/v1/submissions/{id}/request-return/`` with ``request_return_reasons``
  (submissions/request-submission-return).

Bonuses are paid by :mod:`koed_core.rating.crowd.prolific_bonus`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.i18n import _, speaking
from koed_core.rating.crowd.decisions import report_rows
from koed_core.rating.crowd.links import CrowdError, Invite
from koed_core.rating.crowd.prolific_client import (
    ProlificClient,
)

MESSAGE_MIN = 100
"""Prolific's shortest rejection message."""

REVIEWABLE = "AWAITING REVIEW"
"""The only status a submission is approved, rejected or asked back from."""


@dataclass(frozen=True)
class Step:
    """One review action the decisions ask for, or why a decided worker gets none."""

    participant_id: str
    submission_id: str
    decision: str
    action: str | None
    """``approve``, ``reject`` or ``return``; None when nothing is to be done."""
    note: str = ""
    category: str | None = None
    message: str | None = None


def _language(worker: dict[str, Any]) -> str:
    """The worker's own language: their native one from screening, else what they rated."""
    try:
        native = json.loads(worker.get("screening") or "{}").get("native_language")
    except (TypeError, ValueError, AttributeError):
        native = None
    if native in ("ko", "en"):
        return str(native)
    return "ko" if "ko" in (worker.get("languages") or "").split(",") else "en"


def rejection(row: dict[str, Any], worker: dict[str, Any]) -> tuple[str, str]:
    """Prolific's category and a message of at least ``MESSAGE_MIN`` characters in the
    worker's language, around the admin's written reason."""
    if row["attention_failed"] >= 2:
        category = "FAILED_CHECK"
    elif row["straight_lined"]:
        category = "LOW_EFFORT"
    elif not row["rated"]:
        category = "NO_DATA"
    else:
        category = "OTHER"
    with speaking(_language(worker)):
        message = _(
            "Your submission to the KoED rating study (rating how empathetic replies are) "
            "was rejected after review. The reason: {reason} If you think this is a "
            "mistake, please message us on Prolific.",
            reason=(row.get("decision_reason") or "").rstrip(".") + ".",
        )
        if len(message) < MESSAGE_MIN:  # a short translation still meets Prolific's rule
            message += " " + _(
                "The decision was made by the study's researchers after reading every "
                "rating you gave."
            )
    return category, message


def review_plan(store: Store, invite: Invite) -> list[Step]:
    """What ``apply_review`` would do: per decided worker with a submission that awaits
    review, approve (accept, screen-out), reject or ask to return; the others with why
    not, and every other submission awaiting review with why nothing is done to it (no
    decision yet, or no visit in the app behind it), so nothing waits on Prolific unseen.
    Read after a sync, which stores the submissions' statuses."""
    workers = {w["username"]: w for w in Crowd(store).worker_rows(invite.study_id)}
    subs = {s["id"]: s for s in ProlificLog(store).submissions(invite.id)}
    log = ProlificLog(store)
    steps = []
    for row in report_rows(store, invite)[0]:
        if row["decision"] is None:
            continue
        worker = workers[row["username"]]
        sub_id = str(worker.get("session_ref") or "")
        sub = subs.get(sub_id)
        base = {
            "participant_id": str(row["worker_id"]),
            "submission_id": sub_id,
            "decision": row["decision"],
        }
        action = {
            "accept": "approve",
            "screen_out": "approve",
            "reject": "reject",
            "replace": "return",
        }[row["decision"]]
        if sub is None:
            steps.append(Step(**base, action=None, note="no such submission on Prolific"))
        elif log.action_done(sub_id, action):
            steps.append(Step(**base, action=None, note=f"already done ({action})"))
        elif sub["status"] != REVIEWABLE:
            steps.append(Step(**base, action=None, note=f"status on Prolific: {sub['status']}"))
        elif sub.get("flag") and action == "approve":
            steps.append(Step(**base, action=None, note=f"flagged: {sub['flag']}"))
        elif action == "reject":
            category, message = rejection(row, worker)
            steps.append(Step(**base, action=action, category=category, message=message))
        else:
            steps.append(Step(**base, action=action))
    covered = {s.submission_id for s in steps}
    by_participant = {str(w.get("worker_id") or ""): w for w in workers.values()}
    for sub in subs.values():
        if sub["id"] in covered or sub["status"] != REVIEWABLE:
            continue
        joined = by_participant.get(str(sub["participant_id"]))
        if joined is None or str(joined.get("session_ref") or "") != sub["id"]:
            why = f"flagged: {sub['flag']}" if sub.get("flag") else "no visit in the app behind it"
            note = f"{why}; approve or reject it in Prolific's app"
        else:
            note = "no decision recorded yet (`koed crowd decide` or the Study dashboard)"
        steps.append(
            Step(
                participant_id=str(sub["participant_id"]),
                submission_id=sub["id"],
                decision="",
                action=None,
                note=note,
            )
        )
    return steps


def apply_review(client: ProlificClient, store: Store, steps: list[Step]) -> list[str]:
    """Apply a plan: approvals in one bulk call, then each rejection and return request.
    Each action is recorded, so a second run does none of them again. Returns one line
    per action done."""
    log, done = ProlificLog(store), []
    approve = [s for s in steps if s.action == "approve"]
    if approve:
        ids = [s.submission_id for s in approve]
        client.call(
            "approving submissions in bulk",
            "POST",
            "/api/v1/submissions/bulk-approve/",
            {"submission_ids": ids},
        )
        for s in approve:
            log.record_action(s.submission_id, "approve", "ok")
            done.append(f"approved {s.participant_id}")
    for s in steps:
        if s.action == "reject":
            if len(s.message or "") < MESSAGE_MIN:
                raise CrowdError(_("a rejection message needs at least 100 characters"))
            body: dict[str, Any] = {
                "action": "REJECT",
                "message": s.message,
                "rejection_category": s.category,
            }
            client.call(
                "rejecting a submission",
                "POST",
                f"/api/v1/submissions/{s.submission_id}/transition/",
                body,
            )
        elif s.action == "return":
            body = {"request_return_reasons": ["Did not finish the study."]}
            client.call(
                "asking for a return",
                "POST",
                f"/api/v1/submissions/{s.submission_id}/request-return/",
                body,
            )
        else:
            continue
        log.record_action(s.submission_id, s.action, "ok")
        done.append(f"{s.action} {s.participant_id}")
    return done
