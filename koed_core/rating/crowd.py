"""Crowd studies as recruitment platforms run them: invite links, platform ids, consent,
screening, batches with a completion code, and the admin's approve / reject list.

An invite is a signed link to one study. It lets a person in with no password, as a
pseudonymous worker bound to the platform's id (Prolific's ``PROLIFIC_PID``, MTurk's
``workerId``); the same id coming back resumes the same worker and never takes a second
place. The link expires, holds a fixed number of places and can be revoked. Platform
ids are kept for the admin (the platform's approval file needs them) and never reach a
rating export, which names raters by keyed pseudonym only.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from koed_core.csv_safe import to_csv
from koed_core.db import RaterProfile, Store, now
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.rating.studies import attention_limits

PLATFORMS: dict[str, tuple[str, ...]] = {
    "prolific": ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    "mturk": ("workerId", "assignmentId", "hitId"),
}
"""The URL parameters each platform appends to a study link; the first is the worker."""
PROLIFIC_DONE = "https://app.prolific.com/submissions/complete?cc={code}"
PLATFORM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
NATIVE_YEARS = 10
"""Years lived in Korea (or an English-speaking country) that count as native-like."""
ATTENTION_FAILS_TO_STOP = 2
DECISIONS = ("accept", "reject", "replace")


class CrowdError(KoedError):
    """An invite link that cannot be used, or a worker action that is not allowed."""


@dataclass(frozen=True)
class Invite:
    """One invite link's settings."""

    id: str
    study_id: int
    platform: str
    expires: float
    cap: int
    batch_size: int
    batches: int
    completion_code: str
    redirect_url: str | None
    consent_ko: str
    consent_en: str
    reward: float | None
    currency: str
    revoked: bool

    @property
    def consent_version(self) -> str:
        """Which consent text a worker agreed to (stored with the worker)."""
        text = f"{self.consent_ko}\n---\n{self.consent_en}".encode()
        return hashlib.sha256(text).hexdigest()[:12]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Invite:
        return cls(
            id=row["id"],
            study_id=int(row["study_id"]),
            platform=row["platform"],
            expires=float(row["expires"]),
            cap=int(row["cap"]),
            batch_size=int(row["batch_size"]),
            batches=int(row["batches"]),
            completion_code=row["completion_code"],
            redirect_url=row["redirect_url"],
            consent_ko=row["consent_ko"],
            consent_en=row["consent_en"],
            reward=row["reward"],
            currency=row["currency"] or "GBP",
            revoked=bool(row["revoked"]),
        )


def _signature(invite_id: str, key: bytes) -> str:
    return hmac.new(key, f"invite:{invite_id}".encode(), hashlib.sha256).hexdigest()[:20]


def token_for(invite_id: str, key: bytes) -> str:
    """The link's ``invite`` parameter: the id and its signature under the server key."""
    return f"{invite_id}.{_signature(invite_id, key)}"


def create_invite(
    store: Store,
    key: bytes,
    study_id: int,
    *,
    platform: str,
    days: float,
    cap: int,
    batch_size: int,
    batches: int = 1,
    completion_code: str | None = None,
    redirect_url: str | None = None,
    consent_ko: str,
    consent_en: str,
    reward: float | None = None,
    currency: str = "GBP",
    created_by: str | None = None,
) -> tuple[Invite, str]:
    """A new invite link for a study; returns it and its token.

    Raises:
        CrowdError: a setting out of range, or an unknown platform.
    """
    problems = []
    if platform not in (*PLATFORMS, "none", "account"):
        problems.append(f"platform must be prolific, mturk, none or account, not {platform!r}")
    if not 0 < days <= 365:
        problems.append("a link lasts between a few hours and 365 days")
    if cap < 1 or batch_size < 1 or batches < 1:
        problems.append("places, batch size and batches must each be at least 1")
    if not consent_ko.strip() or not consent_en.strip():
        problems.append("write the consent text in both Korean and English")
    if reward is not None and reward < 0:
        problems.append("the reward cannot be negative")
    if problems:
        raise CrowdError("; ".join(problems))
    code = completion_code or secrets.token_hex(4).upper()
    if platform == "prolific" and not redirect_url:
        redirect_url = PROLIFIC_DONE.format(code=code)
    invite_id = secrets.token_urlsafe(9)
    row = {
        "id": invite_id,
        "study_id": study_id,
        "platform": platform,
        "expires": time.time() + days * 86400,
        "cap": cap,
        "batch_size": batch_size,
        "batches": batches,
        "completion_code": code,
        "redirect_url": redirect_url,
        "consent_ko": consent_ko.strip(),
        "consent_en": consent_en.strip(),
        "reward": reward,
        "currency": currency,
        "revoked": 0,
        "created_by": created_by,
        "created": now(),
    }
    Crowd(store).add_invite(row)
    return Invite.from_row(row), token_for(invite_id, key)


def check_invite(
    store: Store, key: bytes, token: str, *, at: float | None = None, joining: bool = True
) -> Invite:
    """The invite a link names, if it may still let people in (``joining``), or, for a
    worker already in, if they may go on: a withdrawn or expired link lets nobody new in,
    but those already in may finish.

    Raises:
        CrowdError: forged or damaged, unknown, its study closed; when ``joining`` also
            withdrawn or expired.
    """
    invite_id, _, signature = (token or "").partition(".")
    if not invite_id or not hmac.compare_digest(signature, _signature(invite_id, key)):
        raise CrowdError(
            "This invite link is not valid: it is incomplete or was changed. Open the link "
            "exactly as you received it."
        )
    row = Crowd(store).invite(invite_id)
    if row is None:
        raise CrowdError("This invite link is not valid: no such study invitation.")
    invite = Invite.from_row(row)
    if joining and invite.revoked:
        raise CrowdError("This invite link has been withdrawn by the study's organisers.")
    moment = time.time() if at is None else at
    if joining and moment > invite.expires:
        ended = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(invite.expires))
        raise CrowdError(f"This invite link expired on {ended}.")
    study = store.rows("select closed from studies where id = ?", [invite.study_id])
    if not study or study[0]["closed"]:
        raise CrowdError("This study has ended; thank you for your interest.")
    return invite


def platform_ids(platform: str, params: Mapping[str, str]) -> dict[str, str]:
    """The platform's ids from the link's parameters, checked.

    Raises:
        CrowdError: the worker id is missing (the link was not opened from the platform)
            or an id has characters no platform uses.
    """
    if platform == "none":
        given = params.get("worker", "")
        names: tuple[str, ...] = ("worker",)
    else:
        names = PLATFORMS[platform]
        given = params.get(names[0], "")
    if not given:
        where = {"prolific": "Prolific", "mturk": "Mechanical Turk"}.get(platform)
        if where:
            raise CrowdError(
                f"Open this study from {where}: the link has no {names[0]}, so your work "
                "could not be credited to you."
            )
        raise CrowdError("This link needs a worker=NAME parameter (any code you will remember).")
    ids = {}
    for name in names:
        value = params.get(name, "")
        if value and not PLATFORM_ID.match(value):
            raise CrowdError(f"{name} must be letters, digits, - or _ (at most 64), not {value!r}")
        ids[name] = value
    return ids


@dataclass(frozen=True)
class Worker:
    """A crowd worker as the rating flow needs them."""

    username: str
    study_id: int
    invite_id: str
    resumed: bool
    status: str
    consent_version: str | None
    languages: tuple[str, ...]
    stop_reason: str | None


def worker_name(key: bytes, study_id: int, platform: str, worker_id: str) -> str:
    """The worker's pseudonymous username: keyed, so it cannot be traced back to the
    platform id without the server's key."""
    digest = hmac.new(key, f"{study_id}:{platform}:{worker_id}".encode(), hashlib.sha256)
    return f"crowd-{digest.hexdigest()[:12]}"


def returning(store: Store, invite: Invite, ids: Mapping[str, str]) -> Worker | None:
    """The worker these platform ids already made in this study, or None."""
    names = PLATFORMS.get(invite.platform, ("worker",))
    found = Crowd(store).worker_by_platform_id(
        invite.study_id, invite.platform, ids.get(names[0], "")
    )
    return _worker(found, resumed=True) if found else None


def join(store: Store, key: bytes, invite: Invite, ids: Mapping[str, str]) -> Worker:
    """Let a worker in, or back in: the same platform id resumes, never a second place.

    Raises:
        CrowdError: every place is taken.
    """
    crowd = Crowd(store)
    names = PLATFORMS.get(invite.platform, ("worker",))
    worker_id = ids.get(names[0], "")
    if not worker_id:
        raise CrowdError(f"the link has no {names[0]}")
    found = crowd.worker_by_platform_id(invite.study_id, invite.platform, worker_id)
    if found is not None:
        return _worker(found, resumed=True)
    row: dict[str, Any] = {
        "username": worker_name(key, invite.study_id, invite.platform, worker_id),
        "invite_id": invite.id,
        "study_id": invite.study_id,
        "platform": invite.platform,
        "worker_id": worker_id,
        "study_ref": ids.get(names[1]) if len(names) > 1 else None,
        "session_ref": ids.get(names[2]) if len(names) > 2 else None,
        "status": "consent",
        "created": now(),
    }
    if not crowd.join(invite.id, invite.cap, row):
        raise CrowdError(
            f"This study is full: all {invite.cap} places are taken. Please return it on "
            "the platform; you have not been charged any time."
        )
    return _worker(crowd.worker(str(row["username"])) or row, resumed=False)


def worker_of(store: Store, username: str) -> Worker | None:
    """A worker who is already in (this browser session's), or None."""
    row = Crowd(store).worker(username)
    return _worker(row, resumed=True) if row else None


def _worker(row: Mapping[str, Any], resumed: bool) -> Worker:
    langs = tuple(filter(None, (row.get("languages") or "").split(",")))
    return Worker(
        username=row["username"],
        study_id=int(row["study_id"]),
        invite_id=row["invite_id"],
        resumed=resumed,
        status=row.get("status") or "consent",
        consent_version=row.get("consent_version"),
        languages=langs,
        stop_reason=row.get("stop_reason"),
    )


def join_with_account(
    store: Store,
    invite: Invite,
    users_path: Path,
    username: str,
    password: str,
    name: str | None = None,
) -> Worker:
    """An ``account`` invite: create a rater account for this study alone (it may rate no
    other study). The place is taken first, so a full study creates no account.

    Raises:
        CrowdError: every place is taken, or the link is not an account link.
        UserError: the username is malformed or taken, or the password is too short.
    """
    from koed_core.rating.accounts import add_user

    if invite.platform != "account":
        raise CrowdError("this invite link is for a recruitment platform, not for accounts")
    row: dict[str, Any] = {
        "username": username,
        "invite_id": invite.id,
        "study_id": invite.study_id,
        "platform": "account",
        "worker_id": username,
        "status": "consent",
        "created": now(),
    }
    crowd = Crowd(store)
    if crowd.worker(username) is not None:
        raise CrowdError(f"user {username!r} exists already")
    if not crowd.join(invite.id, invite.cap, row):
        raise CrowdError(f"This study is full: all {invite.cap} places are taken.")
    try:
        add_user(users_path, username, "rater", name, password)
    except KoedError:
        crowd.remove(username)
        raise
    return _worker(row, resumed=False)


def consent(store: Store, worker: Worker, invite: Invite) -> None:
    """The worker agreed to this version of the consent text."""
    Crowd(store).update_worker(
        worker.username,
        consent_version=invite.consent_version,
        consented_at=now(),
        status="screening",
    )


def screen(
    store: Store,
    worker: Worker,
    study_langs: tuple[str, ...],
    native_language: str,
    years_korea: float,
    years_english: float,
) -> tuple[str, ...]:
    """Which of the study's languages this worker may rate; none stops them politely.

    Korean needs Korean as the native language or ``NATIVE_YEARS`` years in Korea;
    English the same for English and an English-speaking country.
    """
    may = []
    if "ko" in study_langs and (native_language == "ko" or years_korea >= NATIVE_YEARS):
        may.append("ko")
    if "en" in study_langs and (native_language == "en" or years_english >= NATIVE_YEARS):
        may.append("en")
    answers = {
        "native_language": native_language,
        "years_korea": years_korea,
        "years_english": years_english,
    }
    if may:
        Crowd(store).update_worker(
            worker.username, screening=answers, languages=",".join(may), status="rating"
        )
    else:
        Crowd(store).update_worker(
            worker.username,
            screening=answers,
            status="stopped",
            stop_reason="screening: not a native-level speaker of the study's languages",
        )
    return tuple(may)


def profile_of(
    worker: Worker,
    native_language: str,
    years_korea: float,
    years_english: float,
    languages: tuple[str, ...],
) -> RaterProfile:
    """The rater profile the screening answers make (the agreement table's rater groups)."""
    return RaterProfile(worker.username, languages, native_language, years_korea, years_english)


def attention_failures(store: Store, study_id: int, username: str) -> int:
    """Attention checks the worker scored above what a careful rater gives."""
    limits = attention_limits()
    failed = {
        r["item_id"]
        for r in Crowd(store).attention_scores(study_id, username)
        if r["score"] > limits.get(r["dimension"], 5)
    }
    return len(failed)


def check_attention(store: Store, worker: Worker) -> bool:
    """Stop (politely, flagged for the admin) a worker who failed too many attention
    checks; True when they may go on."""
    if attention_failures(store, worker.study_id, worker.username) < ATTENTION_FAILS_TO_STOP:
        return True
    Crowd(store).update_worker(
        worker.username, status="stopped", stop_reason="attention checks failed"
    )
    return False


CALIBRATION_MAX_GAP = 1.5
"""Mean distance from the reference scores (1-5 scale) above which calibration failed."""


def check_calibration(store: Store, worker: Worker, gaps: list[float]) -> bool:
    """Stop (politely, flagged) a worker whose calibration scores were far from the
    references on average; True when they may go on."""
    if not gaps or sum(gaps) / len(gaps) <= CALIBRATION_MAX_GAP:
        return True
    Crowd(store).update_worker(
        worker.username,
        status="stopped",
        stop_reason=f"calibration: {sum(gaps) / len(gaps):.1f} points from the references",
    )
    return False


@dataclass(frozen=True)
class BatchState:
    """Where a worker is: items done, in which batch, and whether they are finished."""

    done: int
    batch: int
    in_batch: int
    batch_size: int
    finished: bool


def batch_state(store: Store, worker: Worker, invite: Invite) -> BatchState:
    """Progress counted in batches of the invite's size."""
    done = len(Crowd(store).finished_assignments(worker.study_id, worker.username))
    total = invite.batch_size * invite.batches
    return BatchState(
        done=done,
        batch=min(done // invite.batch_size + 1, invite.batches),
        in_batch=done % invite.batch_size if done < total else invite.batch_size,
        batch_size=invite.batch_size,
        finished=done >= total,
    )


def finish(store: Store, worker: Worker) -> None:
    """The worker completed every batch."""
    Crowd(store).update_worker(worker.username, status="completed", completed_at=now())


def decide(store: Store, username: str, decision: str, by: str | None) -> None:
    """Record the admin's decision on a worker.

    Raises:
        CrowdError: an unknown decision or worker.
    """
    if decision not in DECISIONS:
        raise CrowdError(f"decision must be one of {', '.join(DECISIONS)}")
    crowd = Crowd(store)
    if crowd.worker(username) is None:
        raise CrowdError(f"no crowd worker {username!r}")
    crowd.update_worker(username, decision=decision, decided_by=by, decided_at=now())


def _seconds(stamp: str) -> float:
    return float(pd.Timestamp(stamp).timestamp())


def batch_times(store: Store, study_id: int, username: str, batch_size: int) -> list[float]:
    """Minutes each completed batch took: from its first item handed out to its last saved."""
    done = Crowd(store).finished_assignments(study_id, username)
    minutes = []
    for start in range(0, len(done) - batch_size + 1, batch_size):
        chunk = done[start : start + batch_size]
        began = min(_seconds(a["assigned_at"]) for a in chunk)
        ended = max(_seconds(a["finished_at"]) for a in chunk)
        minutes.append((ended - began) / 60)
    return minutes


def pay_report(store: Store, invite: Invite) -> tuple[pd.DataFrame, dict[str, float | None]]:
    """Per worker: batches done, minutes per batch, attention failures, status, decision
    and the suggested decision; and for the study, the median and slowest-decile batch
    minutes and the effective hourly pay of the reward."""
    workers = Crowd(store).workers(invite.study_id)
    rows = []
    every: list[float] = []
    for w in workers.to_dict("records") if not workers.empty else []:
        if w["invite_id"] != invite.id:
            continue
        times = batch_times(store, invite.study_id, w["username"], invite.batch_size)
        every += times
        failed = attention_failures(store, invite.study_id, w["username"])
        completed = w["status"] == "completed" or len(times) >= invite.batches
        suggested = _suggest(failed, completed, w["status"], w["stop_reason"])
        rows.append(
            {
                "username": w["username"],
                "worker_id": w["worker_id"],
                "status": w["status"],
                "stop_reason": w["stop_reason"],
                "batches": len(times),
                "median_batch_min": statistics.median(times) if times else None,
                "attention_failed": failed,
                "suggested": suggested,
                "decision": w["decision"],
            }
        )
    median = statistics.median(every) if every else None
    slow = float(pd.Series(every).quantile(0.9)) if every else None
    hourly = invite.reward / (median / 60) if invite.reward is not None and median else None
    summary = {"median_batch_min": median, "p90_batch_min": slow, "hourly_pay": hourly}
    return pd.DataFrame(rows), summary


def _suggest(failed: int, completed: bool, status: str, stop_reason: str | None) -> str:
    """What the dashboard suggests: reject after two failed attention checks (Prolific's
    own rule of thumb), review after one, replace (return) someone screened out or who
    left, accept a clean completion, and wait for someone still at work."""
    if failed >= ATTENTION_FAILS_TO_STOP:
        return "reject"
    if failed:
        return "review"
    if completed:
        return "accept"
    if status == "stopped":
        return "replace"
    return "wait"


def platform_csv(store: Store, invite: Invite) -> str:
    """The approve / reject list in the platform's format (decided workers only; the
    admin's decision, else none). Prolific: participant ids with APPROVE or REJECT; MTurk:
    the batch-results columns Approve and Reject."""
    frame, _ = pay_report(store, invite)
    decided = frame[frame["decision"].notna()] if not frame.empty else frame
    workers = Crowd(store).workers(invite.study_id).set_index("username")
    rows = []
    for r in decided.to_dict("records") if not decided.empty else []:
        w = workers.loc[r["username"]]
        if invite.platform == "mturk":
            rows.append(
                {
                    "AssignmentId": w["study_ref"] or "",
                    "WorkerId": r["worker_id"],
                    "HITId": w["session_ref"] or "",
                    "Approve": "x" if r["decision"] == "accept" else "",
                    "Reject": "attention checks failed" if r["decision"] == "reject" else "",
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
                    "completion_code": invite.completion_code,
                }
            )
    return to_csv(pd.DataFrame(rows), bom=False)
