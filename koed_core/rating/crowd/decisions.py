"""What the admin decides and pays: accept, reject, replace or screen out, the suggested
decision, time and pay per hour, and the platforms' bulk files."""

from __future__ import annotations

import math
import statistics
from datetime import datetime
from typing import Any

import pandas as pd

from koed_core.db import Store, now, utcnow
from koed_core.db.crowd import Crowd
from koed_core.i18n import N_, _
from koed_core.rating.crowd.checks import attention_failures, untold_failures
from koed_core.rating.crowd.identities import UNDER_WAY
from koed_core.rating.crowd.links import (
    ATTENTION_FAILS_TO_STOP,
    DECISIONS,
    FLAGGED_ALL,
    NO_ITEMS,
    CrowdError,
    Invite,
)
from koed_core.rating.crowd.timing import READING as READING
from koed_core.rating.crowd.timing import SCORING_S as SCORING_S
from koed_core.rating.crowd.timing import SETUP_MIN as SETUP_MIN
from koed_core.rating.crowd.timing import visit_minutes
from koed_core.rating.studies import StudyRules
from koed_core.text.csv_safe import to_csv


def decide(store: Store, username: str, decision: str, by: str | None, reason: str = "") -> None:
    """Record the admin's decision on a worker; a rejection needs the admin's reason (it
    is sent to the worker by the platform, so it is written, not generated).

    Raises:
        CrowdError: an unknown decision or worker, or a rejection without a reason.
    """
    if decision not in DECISIONS:
        raise CrowdError(_("decision must be one of {choices}", choices=", ".join(DECISIONS)))
    reason = " ".join(reason.split())[:500]
    if decision == "reject" and len(reason) < 10:
        raise CrowdError(_("write the reason for a rejection (at least 10 characters)"))
    crowd = Crowd(store)
    if crowd.worker(username) is None:
        raise CrowdError(_("no crowd worker {name}", name=repr(username)))
    crowd.update_worker(
        username, decision=decision, decided_by=by, decided_at=now(), decision_reason=reason
    )


def accept_suggested(store: Store, invite: Invite, by: str | None) -> int:
    """Record every undecided worker's suggested accept, screen-out or replace in one step
    (a rejection waits for the admin's written reason, a review for the admin's look);
    returns how many were decided."""
    rows, _totals = report_rows(store, invite)
    count = 0
    for row in rows:
        if row["decision"] is None and row["suggested"] in ("accept", "screen_out", "replace"):
            decide(store, row["username"], row["suggested"], by)
            count += 1
    return count


def _seconds(stamp: str) -> float:
    return float(pd.Timestamp(stamp).timestamp())


def estimate(store: Store, invite: Invite) -> dict[str, float | None]:
    """Before launch: the minutes a worker is likely to take from joining to the code
    (``timing.visit_minutes``: the figure the consent states) and the hourly pay that makes
    of the reward. The dashboard shows the measured figures beside it once people finish."""
    minutes = visit_minutes(store, invite.study_id, invite.batch_size, invite.batches)
    if minutes is None:
        return {"minutes": None, "hourly_pay": None}
    # Prolific lists whole minutes and divides the reward by them: its hourly rate, shown
    # as it will show it (prolific.listed_minutes)
    paid_for = max(1, math.ceil(minutes - 1e-9)) if invite.platform == "prolific" else minutes
    hourly = invite.reward / (paid_for / 60) if invite.reward is not None else None
    return {"minutes": minutes, "hourly_pay": hourly}


FLAG_SHARE_WARN = 0.3
"""A worker who flags more than this share of what they were given is shown for review."""


STRAIGHT_MIN_ITEMS = 3
"""Responses a worker must have rated before one score everywhere counts as
straight-lining (with fewer, the same score can be an honest reading)."""


def straight_lined(scores: list[tuple[str, int]]) -> bool:
    """No variance across the worker's response items: one score on every dimension of
    every item, over at least ``STRAIGHT_MIN_ITEMS`` items. Honest raters of replies that
    differ give different scores somewhere."""
    items = {item for item, _score in scores}
    return len(items) >= STRAIGHT_MIN_ITEMS and len({score for _item, score in scores}) == 1


def _minutes(row: dict[str, Any]) -> float | None:
    if row.get("completed_at") and row.get("created"):
        return (_seconds(row["completed_at"]) - _seconds(row["created"])) / 60
    return None


def pay_report(
    store: Store, invite: Invite, at: datetime | None = None
) -> tuple[pd.DataFrame, dict[str, float | None]]:
    """``report_rows`` as the dashboard's frame."""
    rows, summary = report_rows(store, invite, at)
    return pd.DataFrame(rows, columns=REPORT_COLUMNS), summary


def report_rows(
    store: Store, invite: Invite, at: datetime | None = None
) -> tuple[list[dict[str, Any]], dict[str, float | None]]:
    """Per worker: responses rated (attention checks are not work) and items flagged,
    their last activity and idle minutes, minutes from joining to their code (as the
    platform measures a submission: consent, screening and calibration included), the
    code shown, attention failures, straight-lining, status, decision and the suggested
    decision. For the link: the median and slowest-decile minutes and the effective
    hourly pay of the reward, over completions only (Prolific pays the reward for a
    completion; a screen-out is paid apart, so it is reported apart). Plain rows: a
    value nobody has yet stays None (in a pandas 3 frame a text column with gaps holds
    NaN, which is truthy and is not None)."""
    crowd = Crowd(store)
    workers = crowd.worker_rows(invite.study_id)
    flags = crowd.flag_counts(invite.study_id)
    activity = crowd.activities(invite.study_id)
    moment = at or utcnow()
    timeout = StudyRules(store).config(invite.study_id).timeout_minutes
    rows = []
    completions: list[float] = []
    screen_outs: list[float] = []
    for w in workers:
        if w["invite_id"] != invite.id:
            continue
        rated, checked = crowd.work_done(invite.study_id, w["username"])
        flagged = flags.get(w["username"], 0)
        minutes = _minutes(w)
        if minutes is not None and w.get("code_kind") == "completed":
            completions.append(minutes)
        elif minutes is not None and w.get("code_kind") == "screened_out":
            screen_outs.append(minutes)
        last = activity.get(w["username"])
        idle = (moment.timestamp() - _seconds(last)) / 60 if last else None
        timed_out = w["status"] in UNDER_WAY and idle is not None and idle > timeout
        failed = attention_failures(store, invite.study_id, w["username"])
        untold = untold_failures(store, invite.study_id, w["username"])
        share = flagged / (rated + flagged) if rated + flagged else 0.0
        straight = straight_lined(crowd.response_scores(invite.study_id, w["username"]))
        row = {
            "username": w["username"],
            "worker_id": w["worker_id"],
            "status": "timed out" if timed_out else w["status"],
            "stop_reason": w["stop_reason"],
            "rated": rated,
            "checks": checked,
            "flagged": flagged,
            "flag_share": share,
            "last_activity": last,
            "idle_min": idle if w["status"] in UNDER_WAY else None,
            "minutes": minutes,
            "code_kind": w.get("code_kind"),
            "code_given": w.get("code_given"),
            "attention_failed": failed,
            "straight_lined": straight,
            "decision": w["decision"],
            "decision_reason": w.get("decision_reason"),
        }
        row["suggested"] = suggest(row, untold)
        rows.append(row)
    summary = {
        **_spread(completions),
        "hourly_pay": invite.reward / (statistics.median(completions) / 60)
        if invite.reward is not None and completions and statistics.median(completions)
        else None,
        "completions": float(len(completions)),
        "screened_out": float(len(screen_outs)),
        "screenout_median_min": statistics.median(screen_outs) if screen_outs else None,
        **_paid(invite, completions + screen_outs),
    }
    return rows, summary


def _paid(invite: Invite, minutes: list[float]) -> dict[str, float | None]:
    """Everyone paid the reward, screen-outs included (Prolific approves a screen-out
    with the reward: the API path's default action, and ``koed prolific review``; MTurk
    approves it): the rewards in all, and the pay per hour over their median minutes, as
    Prolific computes a study's average reward per hour over its approved submissions."""
    if invite.reward is None or not minutes:
        return {"paid_total": None, "paid_hourly_pay": None}
    median = statistics.median(minutes)
    return {
        "paid_total": invite.reward * len(minutes),
        "paid_hourly_pay": invite.reward / (median / 60) if median else None,
    }


REPORT_COLUMNS = [
    "username", "worker_id", "status", "stop_reason", "rated", "checks", "flagged",
    "flag_share", "last_activity", "idle_min", "minutes", "code_kind", "code_given",
    "attention_failed", "straight_lined", "decision", "decision_reason", "suggested",
]  # fmt: skip


def _spread(minutes: list[float]) -> dict[str, float | None]:
    if not minutes:
        return {"median_min": None, "p90_min": None}
    return {
        "median_min": statistics.median(minutes),
        "p90_min": float(pd.Series(minutes).quantile(0.9)),
    }


SUGGESTIONS = {
    "reject": N_("two or more told attention checks failed (each said what to choose)"),
    "review": N_(
        "one told check failed, an older check scored high, many flags, one score "
        "everywhere (straight-lining), calibration far from the references, or only flags"
    ),
    "screen_out": N_(
        "screened out, or nothing was left in their languages: pay it as the "
        "screen-out code's action, never a return request or a rejection"
    ),
    "accept": N_("finished with at least one response rated"),
    "replace": N_("stopped before rating for another reason: ask them to return the study"),
    "timed out": N_(
        "inactive past the study's timeout: their place is free again; Prolific "
        "times the submission out, nothing to decide unless they come back"
    ),
    "wait": N_("under way and active"),
    "returned": N_(
        "returned or timed out on Prolific (read by a sync): the place is free again; "
        "nothing to decide"
    ),
}
"""What each suggestion means (the dashboard's help and docs/rating.md)."""


def suggest(row: dict[str, Any], untold: int = 0) -> str:
    """The suggested decision for one worker's report row (see ``SUGGESTIONS``). A
    rejection only on told checks; a screen-out is never a return request; nobody who
    rated no response is suggested accept."""
    failed, status, reason = row["attention_failed"], row["status"], row["stop_reason"] or ""
    if failed >= ATTENTION_FAILS_TO_STOP:
        return "reject"
    if status == "stopped" and reason.startswith(("screening", NO_ITEMS)):
        return "screen_out"
    if (
        failed
        or untold
        or row["flag_share"] > FLAG_SHARE_WARN
        or row["straight_lined"]
        or reason.startswith("calibration")
        or reason == FLAGGED_ALL
    ):
        return "review"
    if status == "completed" and row["rated"] > 0:
        return "accept"
    if status == "stopped":
        return "replace"
    if status == "timed out":
        return "timed out"
    if status == "returned":
        return "returned"
    return "wait"


BULK = {
    "accept": "approve",
    "reject": "reject",
    "replace": "return-request",
    "screen_out": "screen-out",
}
"""Our decisions as Prolific's bulk actions (a screen-out list for the screen-out code's
action; MTurk, which has no partial pay, approves a screen-out: ``PAID``)."""

PAID = ("accept", "screen_out")
"""Decisions that pay the worker on MTurk (Approve)."""


def decision_files(store: Store, invite: Invite) -> dict[str, str]:
    """Ready-to-paste lists per decision, in the platform's bulk format. Prolific:
    participant ids, one a line, per action (approve, reject, return-request); MTurk: the
    batch results CSV columns ``AssignmentId, WorkerId, Approve, Reject`` (the reason in
    Reject). Only decided workers."""
    decided = [r for r in report_rows(store, invite)[0] if r["decision"] is not None]
    workers = {w["username"]: w for w in Crowd(store).worker_rows(invite.study_id)}
    if invite.platform == "mturk":
        rows = [
            {
                "AssignmentId": workers[r["username"]]["study_ref"] or "",
                "WorkerId": r["worker_id"],
                "Approve": "x" if r["decision"] in PAID else "",
                "Reject": r["decision_reason"] if r["decision"] == "reject" else "",
            }
            for r in decided
            if r["decision"] in ("accept", "reject", "screen_out")
        ]
        columns = ["AssignmentId", "WorkerId", "Approve", "Reject"]
        return {"mturk_results.csv": to_csv(pd.DataFrame(rows, columns=columns), bom=False)}
    files = {}
    for decision, action in BULK.items():
        ids = [str(r["worker_id"]) for r in decided if r["decision"] == decision]
        files[f"prolific_{action}.txt"] = "".join(f"{i}\n" for i in ids)
    reasons = [
        {"participant_id": r["worker_id"], "reason": r["decision_reason"]}
        for r in decided
        if r["decision"] == "reject"
    ]
    files["prolific_reject_reasons.csv"] = to_csv(
        pd.DataFrame(reasons, columns=["participant_id", "reason"]), bom=False
    )
    return files


def platform_csv(store: Store, invite: Invite) -> str:
    """Every decided worker in one file: platform ids, decision, the code they received
    and the reason of a rejection (the dashboard's download)."""
    decided = [r for r in report_rows(store, invite)[0] if r["decision"] is not None]
    workers = {w["username"]: w for w in Crowd(store).worker_rows(invite.study_id)}
    rows = []
    for r in decided:
        w = workers[r["username"]]
        if invite.platform == "mturk":
            rows.append(
                {
                    "AssignmentId": w["study_ref"] or "",
                    "WorkerId": r["worker_id"],
                    "HITId": w["session_ref"] or "",
                    "Approve": "x" if r["decision"] in PAID else "",
                    "Reject": r["decision_reason"] if r["decision"] == "reject" else "",
                    "code": r["code_given"] or "",
                }
            )
        else:
            rows.append(
                {
                    "participant_id": r["worker_id"],
                    "session_id": w["session_ref"] or "",
                    "decision": {
                        "accept": "APPROVE",
                        "reject": "REJECT",
                        "screen_out": "SCREEN-OUT",
                    }.get(r["decision"], "RETURN"),
                    "reason": r["decision_reason"] or "",
                    "code_received": r["code_given"] or "",
                }
            )
    return to_csv(pd.DataFrame(rows), bom=False)
