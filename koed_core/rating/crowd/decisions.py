"""What the admin decides and pays: accept, reject or replace, the suggested decision, time
and pay per hour, and the platforms' bulk files."""

from __future__ import annotations

import json
import statistics

import pandas as pd

from koed_core.csv_safe import to_csv
from koed_core.db import Store, now
from koed_core.db.crowd import Crowd
from koed_core.rating.crowd.checks import attention_failures, untold_failures
from koed_core.rating.crowd.links import ATTENTION_FAILS_TO_STOP, DECISIONS, CrowdError, Invite
from koed_core.rating.studies import RatingStore


def decide(store: Store, username: str, decision: str, by: str | None, reason: str = "") -> None:
    """Record the admin's decision on a worker; a rejection needs the admin's reason (it
    is sent to the worker by the platform, so it is written, not generated).

    Raises:
        CrowdError: an unknown decision or worker, or a rejection without a reason.
    """
    if decision not in DECISIONS:
        raise CrowdError(f"decision must be one of {', '.join(DECISIONS)}")
    reason = " ".join(reason.split())[:500]
    if decision == "reject" and len(reason) < 10:
        raise CrowdError("write the reason for a rejection (at least 10 characters)")
    crowd = Crowd(store)
    if crowd.worker(username) is None:
        raise CrowdError(f"no crowd worker {username!r}")
    crowd.update_worker(
        username, decision=decision, decided_by=by, decided_at=now(), decision_reason=reason
    )


def accept_suggested(store: Store, invite: Invite, by: str | None) -> int:
    """Record every undecided worker's suggested accept or replace in one step (a
    rejection waits for the admin's written reason); returns how many were decided."""
    frame, _ = pay_report(store, invite)
    count = 0
    for row in frame.to_dict("records") if not frame.empty else []:
        if row["decision"] is None and row["suggested"] in ("accept", "replace"):
            decide(store, row["username"], row["suggested"], by)
            count += 1
    return count


def _seconds(stamp: str) -> float:
    return float(pd.Timestamp(stamp).timestamp())


READING = {"en": 230.0, "ko": 500.0}
"""Reading speed per minute: English words, Korean characters (no spaces)."""


SCORING_S = 40.0
"""Seconds to score five dimensions once the item is read (the rubric at hand)."""


SETUP_MIN = 2.0
"""Consent and screening, in minutes."""


def _item_minutes(lang: str, texts: list[str]) -> float:
    size = sum(len(t.replace(" ", "")) if lang == "ko" else len(t.split()) for t in texts)
    return size / READING[lang] + SCORING_S / 60


def estimate(store: Store, invite: Invite) -> dict[str, float | None]:
    """Before launch: the minutes a worker is likely to take from joining to the code
    (consent and screening, the calibration items, then every batch at the study's mean
    item length and a scoring time) and the hourly pay that makes of the reward. The
    dashboard shows the measured figures beside it once people finish."""
    from koed_core.rating.studies import calibration_items

    rows = store.rows(
        "select lang, context, response from study_items where study_id = ? and kind = 'response'",
        [invite.study_id],
    )
    per_item = [
        _item_minutes(r["lang"], [t for _, t in json.loads(r["context"] or "[]")] + [r["response"]])
        for r in rows
    ]
    if not per_item:
        return {"minutes": None, "hourly_pay": None}
    item = statistics.mean(per_item)
    langs = RatingStore(store).config(invite.study_id).langs
    calibration = sum(
        _item_minutes(c["lang"], [t for _, t in c["context"]] + [c["response"]]) + 0.5
        for c in calibration_items(langs)
    )
    minutes = SETUP_MIN + calibration + item * invite.batch_size * invite.batches
    hourly = invite.reward / (minutes / 60) if invite.reward is not None else None
    return {"minutes": minutes, "hourly_pay": hourly}


FLAG_SHARE_WARN = 0.3
"""A worker who flags more than this share of what they were given is shown for review."""


def pay_report(store: Store, invite: Invite) -> tuple[pd.DataFrame, dict[str, float | None]]:
    """Per worker: items rated and flagged, minutes from joining to their code (as the
    platform measures a submission: consent, screening and calibration included), the
    code shown, attention failures, status, decision and the suggested decision; for the
    link, the median and slowest-decile minutes and the effective hourly pay of the reward
    per worker."""
    workers = Crowd(store).worker_rows(invite.study_id)
    flags = Crowd(store).flag_counts(invite.study_id)
    ratings = RatingStore(store)
    rows = []
    every: list[float] = []
    for w in workers:
        if w["invite_id"] != invite.id:
            continue
        rated = ratings.done(invite.study_id, w["username"])
        flagged = flags.get(w["username"], 0)
        minutes = None
        if w.get("completed_at") and w.get("created"):
            minutes = (_seconds(w["completed_at"]) - _seconds(w["created"])) / 60
            every.append(minutes)
        failed = attention_failures(store, invite.study_id, w["username"])
        untold = untold_failures(store, invite.study_id, w["username"])
        share = flagged / (rated + flagged) if rated + flagged else 0.0
        rows.append(
            {
                "username": w["username"],
                "worker_id": w["worker_id"],
                "status": w["status"],
                "stop_reason": w["stop_reason"],
                "rated": rated,
                "flagged": flagged,
                "flag_share": share,
                "minutes": minutes,
                "code_kind": w.get("code_kind"),
                "code_given": w.get("code_given"),
                "attention_failed": failed,
                "suggested": _suggest(failed, w["status"], rated, share, untold),
                "decision": w["decision"],
                "decision_reason": w.get("decision_reason"),
            }
        )
    median = statistics.median(every) if every else None
    slow = float(pd.Series(every).quantile(0.9)) if every else None
    hourly = invite.reward / (median / 60) if invite.reward is not None and median else None
    summary = {"median_min": median, "p90_min": slow, "hourly_pay": hourly}
    return pd.DataFrame(rows), summary


def _suggest(failed: int, status: str, rated: int, flag_share: float, untold: int = 0) -> str:
    """What the dashboard suggests: reject after two failed attention checks (each said
    what to choose), review after one or when flags pile up, replace (return) someone
    stopped before rating, accept a completion with at least one item rated, and wait for
    someone still at work. Never accept a worker who rated nothing."""
    if failed >= ATTENTION_FAILS_TO_STOP:
        return "reject"
    if failed or untold or flag_share > FLAG_SHARE_WARN:
        return "review"
    if status == "completed" and rated > 0:
        return "accept"
    if status == "stopped":
        return "replace"
    return "wait"


BULK = {"accept": "approve", "reject": "reject", "replace": "return-request"}
"""Our decisions as the platforms' bulk actions."""


def decision_files(store: Store, invite: Invite) -> dict[str, str]:
    """Ready-to-paste lists per decision, in the platform's bulk format. Prolific:
    participant ids, one a line, per action (approve, reject, return-request); MTurk: the
    batch results CSV columns ``AssignmentId, WorkerId, Approve, Reject`` (the reason in
    Reject). Only decided workers."""
    frame, _ = pay_report(store, invite)
    decided = frame[frame["decision"].notna()] if not frame.empty else frame
    workers = {w["username"]: w for w in Crowd(store).worker_rows(invite.study_id)}
    if invite.platform == "mturk":
        rows = [
            {
                "AssignmentId": workers[r["username"]]["study_ref"] or "",
                "WorkerId": r["worker_id"],
                "Approve": "x" if r["decision"] == "accept" else "",
                "Reject": r["decision_reason"] if r["decision"] == "reject" else "",
            }
            for r in (decided.to_dict("records") if not decided.empty else [])
            if r["decision"] in ("accept", "reject")
        ]
        columns = ["AssignmentId", "WorkerId", "Approve", "Reject"]
        return {"mturk_results.csv": to_csv(pd.DataFrame(rows, columns=columns), bom=False)}
    files = {}
    for decision, action in BULK.items():
        ids = [
            str(r["worker_id"])
            for r in (decided.to_dict("records") if not decided.empty else [])
            if r["decision"] == decision
        ]
        files[f"prolific_{action}.txt"] = "".join(f"{i}\n" for i in ids)
    reasons = [
        {"participant_id": r["worker_id"], "reason": r["decision_reason"]}
        for r in (decided.to_dict("records") if not decided.empty else [])
        if r["decision"] == "reject"
    ]
    files["prolific_reject_reasons.csv"] = to_csv(
        pd.DataFrame(reasons, columns=["participant_id", "reason"]), bom=False
    )
    return files


def platform_csv(store: Store, invite: Invite) -> str:
    """Every decided worker in one file: platform ids, decision, the code they received
    and the reason of a rejection (the dashboard's download)."""
    frame, _ = pay_report(store, invite)
    decided = frame[frame["decision"].notna()] if not frame.empty else frame
    workers = {w["username"]: w for w in Crowd(store).worker_rows(invite.study_id)}
    rows = []
    for r in decided.to_dict("records") if not decided.empty else []:
        w = workers[r["username"]]
        if invite.platform == "mturk":
            rows.append(
                {
                    "AssignmentId": w["study_ref"] or "",
                    "WorkerId": r["worker_id"],
                    "HITId": w["session_ref"] or "",
                    "Approve": "x" if r["decision"] == "accept" else "",
                    "Reject": r["decision_reason"] if r["decision"] == "reject" else "",
                    "code": r["code_given"] or "",
                }
            )
        else:
            rows.append(
                {
                    "participant_id": r["worker_id"],
                    "session_id": w["session_ref"] or "",
                    "decision": {"accept": "APPROVE", "reject": "REJECT"}.get(
                        r["decision"], "RETURN"
                    ),
                    "reason": r["decision_reason"] or "",
                    "code_received": r["code_given"] or "",
                }
            )
    return to_csv(pd.DataFrame(rows), bom=False)
