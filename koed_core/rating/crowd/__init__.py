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
import json
import re
import secrets
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from koed_core.csv_safe import to_csv
from koed_core.db import RaterProfile, Store, now
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.rating.studies import RatingStore, attention_limits, instructed_score

PLATFORMS: dict[str, tuple[str, ...]] = {
    "prolific": ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    "mturk": ("workerId", "assignmentId", "hitId"),
}
"""The URL parameters each platform appends to a study link; the first is the worker."""
PROLIFIC_DONE = "https://app.prolific.com/submissions/complete?cc={code}"
PLACEHOLDERS = {
    "prolific": "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
    "&SESSION_ID={{%SESSION_ID%}}",
}
"""What a link pasted into the platform carries so that the platform fills in its ids
(MTurk appends workerId, assignmentId, hitId and turkSubmitTo itself; a researcher's own
list has one link per id)."""
PLATFORM_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
PROLIFIC_PID = re.compile(r"^[0-9a-f]{24}$")
"""Prolific participant (and study, session) ids: 24 hexadecimal characters."""
MTURK_ID = re.compile(r"^[A-Z0-9]{6,64}$")
"""MTurk worker, assignment and HIT ids: upper-case letters and digits."""
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
"""The assignmentId MTurk sends while a worker previews a HIT they have not accepted."""
MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
"""Where an ExternalQuestion's answers may be posted (turkSubmitTo), and nowhere else."""
CODE = re.compile(r"^[A-Z0-9]{4,32}$")
OUTCOMES = ("completed", "screened_out", "failed_checks")
"""What a visit can end in, each with its own code (Prolific's completion codes)."""
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
    prolific_study_id: str | None = None
    """Prolific's id of the study this link was pasted into: STUDY_ID must match it."""
    screenout_code: str = ""
    failed_code: str = ""
    calibration_attempts: int = 1
    """Calibration rounds a worker may try before being stopped (a reload is no new one)."""

    def code_for(self, outcome: str) -> str:
        """The code a worker is shown for this outcome."""
        return {
            "completed": self.completion_code,
            "screened_out": self.screenout_code,
            "failed_checks": self.failed_code,
        }[outcome]

    def back_url(self, code: str) -> str | None:
        """Where the button back to the platform goes with this code (MTurk: a POST, see
        ``mturk_submit``)."""
        if self.platform == "prolific":
            return PROLIFIC_DONE.format(code=code)
        return self.redirect_url

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
            prolific_study_id=row.get("prolific_study_id"),
            screenout_code=row.get("screenout_code") or _derived_code(row["id"], "screened_out"),
            failed_code=row.get("failed_code") or _derived_code(row["id"], "failed_checks"),
            calibration_attempts=int(row.get("calibration_attempts") or 1),
        )


def _derived_code(invite_id: str, outcome: str) -> str:
    """A code for a link made before codes per outcome (stable: the same every time)."""
    return hashlib.sha256(f"{invite_id}:{outcome}".encode()).hexdigest()[:8].upper()


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
    screenout_code: str | None = None,
    failed_code: str | None = None,
    prolific_study_id: str | None = None,
    calibration_attempts: int = 1,
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
    if not 1 <= calibration_attempts <= 5:
        problems.append("calibration attempts must be between 1 and 5")
    if prolific_study_id and not PROLIFIC_PID.match(prolific_study_id):
        problems.append("the Prolific study id is 24 hexadecimal characters")
    codes = [
        c or secrets.token_hex(4).upper() for c in (completion_code, screenout_code, failed_code)
    ]
    bad = [c for c in codes if not CODE.match(c)]
    if bad:
        problems.append(f"codes are 4-32 upper-case letters and digits, not {bad[0]!r}")
    elif len(set(codes)) < 3:
        problems.append("the completion, screen-out and failed-checks codes must differ")
    if problems:
        raise CrowdError("; ".join(problems))
    code = codes[0]
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
        "prolific_study_id": prolific_study_id or None,
        "screenout_code": codes[1],
        "failed_code": codes[2],
        "calibration_attempts": calibration_attempts,
    }
    Crowd(store).add_invite(row)
    checks = RatingStore(store).config(study_id).attention_checks
    if checks and batches > 1:  # each batch holds its share of checks: new ones in each
        RatingStore(store).ensure_attention(study_id, checks * batches)
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


def personal_signature(key: bytes, invite_id: str, worker: str) -> str:
    """The ``sig`` of a researcher's own list's link: holding one link is not holding
    another person's."""
    return hmac.new(key, f"person:{invite_id}:{worker}".encode(), hashlib.sha256).hexdigest()[:16]


def personal_links(key: bytes, invite: Invite, token: str, people: list[str]) -> dict[str, str]:
    """One link's query per id of a ``none`` link's list (``worker`` and its ``sig``).

    Raises:
        CrowdError: an id is malformed or repeated, or the list is empty.
    """
    ids = [p.strip() for p in people if p.strip()]
    bad = [p for p in ids if not PLATFORM_ID.match(p)]
    if not ids or bad or len(set(ids)) < len(ids):
        why = f"{bad[0]!r} has characters ids do not use" if bad else "ids repeat or none given"
        raise CrowdError(f"the list of ids: {why} (letters, digits, - or _; one per line)")
    return {
        p: f"invite={token}&worker={p}&sig={personal_signature(key, invite.id, p)}" for p in ids
    }


def platform_ids(
    invite: Invite, params: Mapping[str, str], key: bytes | None = None
) -> dict[str, str]:
    """The platform's ids from the link's parameters, checked as the platform issues them.

    Raises:
        CrowdError: the worker id is missing (the link was not opened from the platform),
            malformed for that platform, another Prolific study's, or a personal link's
            signature does not match.
    """
    platform = invite.platform
    if platform == "none":
        person, sig = params.get("worker", ""), params.get("sig", "")
        expected = personal_signature(key or b"", invite.id, person) if person else ""
        if not person or not hmac.compare_digest(sig, expected):
            raise CrowdError(
                "This link is personal and incomplete or changed: open the link you were "
                "given, exactly as it was sent to you."
            )
        return {"worker": person}
    names = PLATFORMS[platform]
    ids = {name: params.get(name, "") for name in names}
    where = {"prolific": "Prolific", "mturk": "Mechanical Turk"}[platform]
    if not ids[names[0]]:
        raise CrowdError(
            f"Open this study from {where}: the link has no {names[0]}, so your work could "
            "not be credited to you."
        )
    shape, what = (
        (PROLIFIC_PID, "24 hexadecimal characters")
        if platform == "prolific"
        else (MTURK_ID, "upper-case letters and digits")
    )
    for name, value in ids.items():
        if (
            value
            and not shape.match(value)
            and not (name == "assignmentId" and value == MTURK_PREVIEW)
        ):
            raise CrowdError(
                f"{name} is not a {where} id ({what}); open this study from {where} itself."
            )
    if (
        platform == "prolific"
        and invite.prolific_study_id
        and ids["STUDY_ID"] != invite.prolific_study_id
    ):
        raise CrowdError(
            "This link belongs to another Prolific study (STUDY_ID does not match); open "
            "the study from its own Prolific page."
        )
    if platform == "mturk" and not ids["assignmentId"]:
        raise CrowdError("Open this HIT from Mechanical Turk: the link has no assignmentId.")
    return ids


def mturk_preview(invite: Invite, params: Mapping[str, str]) -> bool:
    """True while an MTurk worker previews the HIT (nothing is stored, no place taken)."""
    return invite.platform == "mturk" and params.get("assignmentId") == MTURK_PREVIEW


def mturk_submit(submit_to: str | None) -> str | None:
    """The ExternalQuestion's answer URL (``turkSubmitTo`` + /mturk/externalSubmit) when
    ``submit_to`` is MTurk's own (live or sandbox), else None: answers go nowhere else."""
    base = (submit_to or "").rstrip("/")
    return f"{base}/mturk/externalSubmit" if base in MTURK_SUBMIT_HOSTS else None


VISIT_COOKIE = "koed_crowd"
"""A browser session's mark that it belongs to a worker under way (see ``visit_cookie``)."""
UNDER_WAY = ("consent", "screening", "rating")


def visit_cookie(key: bytes, username: str, token: str) -> str:
    """The cookie value that keeps a worker a worker across a reload or a typed URL in the
    same browser: their pseudonym and link, signed with the server key."""
    body = f"{username}|{token}"
    sig = hmac.new(key, f"visit:{body}".encode(), hashlib.sha256).hexdigest()[:20]
    return f"{body}|{sig}"


def read_visit_cookie(store: Store, key: bytes, value: str | None) -> tuple[str, str] | None:
    """(username, link token) of a worker still under way, from a genuine cookie; None
    for a forged or damaged one, or once the visit has ended (the rest of the app opens
    again to that browser, as to any visitor)."""
    username, _, rest = (value or "").partition("|")
    token = rest.rpartition("|")[0]
    if (
        not username
        or not token
        or not hmac.compare_digest(visit_cookie(key, username, token), value or "")
    ):
        return None
    row = Crowd(store).worker(username)
    if row is None or row["status"] not in UNDER_WAY:
        return None
    return username, token


SESSION_ID = {"prolific": ("SESSION_ID", "session_ref"), "mturk": ("assignmentId", "study_ref")}
"""Per platform: the link's parameter naming one attempt, and where the worker keeps it."""


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


def _place_cutoff(store: Store, invite: Invite, at: datetime | None = None) -> str:
    """Workers still on the consent page who joined before this moment have left: their
    place is free again (the study's own timeout for abandoned items)."""
    minutes = RatingStore(store).config(invite.study_id).timeout_minutes
    moment = at or datetime.now(UTC)
    return (moment - timedelta(minutes=minutes)).isoformat(timespec="seconds")


def _same_attempt(found: Mapping[str, Any], invite: Invite, ids: Mapping[str, str]) -> None:
    """A platform id back with another session (Prolific) or assignment (MTurk) is not
    handed the first one's work.

    Raises:
        CrowdError: the session differs from the one this worker started with.
    """
    if invite.platform not in SESSION_ID:
        return
    param, column = SESSION_ID[invite.platform]
    kept, given = found.get(column), ids.get(param, "")
    if kept and given != kept:
        attempt = "Prolific session" if invite.platform == "prolific" else "HIT assignment"
        raise CrowdError(
            f"You have already taken part in this study in another {attempt}; its work stays "
            f"with it, so this {attempt} cannot continue it. Please return this one on the "
            "platform, or message the researchers there."
        )


def returning(
    store: Store, invite: Invite, ids: Mapping[str, str], at: datetime | None = None
) -> Worker | None:
    """The worker these platform ids already made in this study, or None.

    Raises:
        CrowdError: they come back in another session or assignment; or they had left the
            consent page long enough for their place to go, and the study is full now.
    """
    names = PLATFORMS.get(invite.platform, ("worker",))
    crowd = Crowd(store)
    found = crowd.worker_by_platform_id(invite.study_id, invite.platform, ids.get(names[0], ""))
    if found is None:
        return None
    _same_attempt(found, invite, ids)
    cutoff = _place_cutoff(store, invite, at)
    left = found["status"] == "consent" and (found["created"] or "") < cutoff
    if left and not crowd.retake_place(found["username"], invite.id, invite.cap, cutoff):
        raise _full(invite)  # they left the consent page long ago and the study filled up
    return _worker(crowd.worker(found["username"]) or found, resumed=True)


def _full(invite: Invite) -> CrowdError:
    return CrowdError(
        f"This study is full: all {invite.cap} places are taken. Please return it on the "
        "platform; no time of yours was counted."
    )


def join(
    store: Store, key: bytes, invite: Invite, ids: Mapping[str, str], at: datetime | None = None
) -> Worker:
    """Let a worker in, or back in: the same platform id resumes, never a second place.
    A place counts only someone under way or finished (see ``Crowd.places_used``).

    Raises:
        CrowdError: every place is taken, no item is left for a newcomer, or a returning
            worker comes in another session.
    """
    crowd = Crowd(store)
    names = PLATFORMS.get(invite.platform, ("worker",))
    worker_id = ids.get(names[0], "")
    if not worker_id:
        raise CrowdError(f"the link has no {names[0]}")
    again = returning(store, invite, ids, at)
    if again is not None:
        return again
    if not RatingStore(store).room_for_newcomer(invite.study_id):
        raise CrowdError(
            "Every item of this study has all the ratings it needs, so there is nothing left "
            "for you to rate. Please return the study on the platform; no time of yours was "
            "counted. Thank you for your interest."
        )
    row: dict[str, Any] = {
        "username": worker_name(key, invite.study_id, invite.platform, worker_id),
        "invite_id": invite.id,
        "study_id": invite.study_id,
        "platform": invite.platform,
        "worker_id": worker_id,
        "study_ref": ids.get(names[1]) if len(names) > 1 else None,
        "session_ref": ids.get(names[2]) if len(names) > 2 else None,
        "status": "consent",
        "created": (at or datetime.now(UTC)).isoformat(timespec="seconds"),
    }
    if not crowd.join(invite.id, invite.cap, row, _place_cutoff(store, invite, at)):
        raise _full(invite)
    return _worker(crowd.worker(str(row["username"])) or row, resumed=False)


@dataclass(frozen=True)
class Places:
    """How full a link is: places taken by people under way or finished, its cap, and
    places given back (screened out, stopped, left at consent, replaced)."""

    used: int
    cap: int
    freed: int

    def __str__(self) -> str:
        return f"places: {self.used} / {self.cap} ({self.freed} freed)"


def places(store: Store, invite: Invite, at: datetime | None = None) -> Places:
    """The link's places now."""
    crowd = Crowd(store)
    used = crowd.places_used(invite.id, _place_cutoff(store, invite, at))
    return Places(used, invite.cap, crowd.joined(invite.id) - used)


def set_cap(store: Store, invite: Invite, cap: int) -> None:
    """Raise or lower a live link's places (those already in keep theirs).

    Raises:
        CrowdError: fewer than one place, or more than 100,000.
    """
    if not 1 <= cap <= 100_000:
        raise CrowdError("a link holds between 1 and 100,000 places")
    Crowd(store).set_cap(invite.id, cap)


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
    if not crowd.join(invite.id, invite.cap, row, _place_cutoff(store, invite)):
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
    """Attention checks the worker was told what to choose on and did not: the only ones
    that may stop them or suggest a rejection (Prolific's rule on fair checks)."""
    return _failures(store, study_id, username)[0]


def untold_failures(store: Store, study_id: int, username: str) -> int:
    """Older, uninstructed checks scored above what a careful rater gives: a reason to
    review, never to reject."""
    return _failures(store, study_id, username)[1]


def _failures(store: Store, study_id: int, username: str) -> tuple[int, int]:
    limits, wanted = attention_limits(), instructed_score()
    told: set[str] = set()
    untold: set[str] = set()
    for r in Crowd(store).attention_scores(study_id, username):
        if r["instruction"]:
            if r["score"] != wanted:
                told.add(r["item_id"])
        elif r["score"] > limits.get(r["dimension"], 5):
            untold.add(r["item_id"])
    return len(told), len(untold)


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


def stored_calibration(store: Store, worker: Worker) -> tuple[list[float], int]:
    """The calibration items scored so far in this attempt (their mean distances from the
    references) and the attempts already used: a reload goes on from here, never afresh."""
    row = Crowd(store).worker(worker.username) or {}
    gaps = json.loads(row.get("calibration_gaps") or "[]")
    return [float(g) for g in gaps], int(row.get("calibration_tries") or 0)


def save_calibration(store: Store, worker: Worker, gaps: list[float]) -> None:
    """Store the attempt's scores as they come (one per calibration item)."""
    Crowd(store).update_worker(worker.username, calibration_gaps=[float(g) for g in gaps])


def end_calibration(store: Store, worker: Worker, invite: Invite, gaps: list[float]) -> str:
    """An attempt's end: ``passed``; ``again`` (far from the references, attempts left: a
    fresh attempt is counted); or ``stopped`` (the last attempt failed)."""
    _, tries = stored_calibration(store, worker)
    mean = sum(gaps) / len(gaps) if gaps else 0.0
    if mean <= CALIBRATION_MAX_GAP:
        return "passed"
    if tries + 1 < invite.calibration_attempts:
        Crowd(store).update_worker(
            worker.username, calibration_gaps=[], calibration_tries=tries + 1
        )
        return "again"
    Crowd(store).update_worker(worker.username, calibration_tries=tries + 1)
    check_calibration(store, worker, gaps)
    return "stopped"


@dataclass(frozen=True)
class BatchState:
    """Where a worker is: items done, in which batch, and whether they are finished."""

    done: int
    batch: int
    in_batch: int
    batch_size: int
    finished: bool


def batch_state(
    store: Store, worker: Worker, invite: Invite, known: dict[tuple[str, int], int] | None = None
) -> BatchState:
    """Progress counted in batches of the invite's size, and never more than this worker
    can be given (a small study, or items other raters filled): "n of m" always ends.
    ``known`` is a place to keep that count between calls (the page's session)."""
    done = len(Crowd(store).finished_assignments(worker.study_id, worker.username))
    total = invite.batch_size * invite.batches
    if RatingStore(store).profile(worker.username) is not None:
        # what the worker can still be given: asked once per item done (``known`` keeps
        # it for the browser session), not on every click
        key = (worker.username, done)
        if known is None or key not in known:
            can = RatingStore(store).workload(worker.study_id, worker.username)
            if known is None:
                known = {}
            known.clear()
            known[key] = can
        total = min(total, max(done, known[key]))
    batch = min(done // invite.batch_size + 1, invite.batches)
    start = (batch - 1) * invite.batch_size
    size = max(1, min(invite.batch_size, total - start))
    return BatchState(
        done=done,
        batch=batch,
        in_batch=min(done - start, size),
        batch_size=size,
        finished=done >= total,
    )


def remember_submit_to(store: Store, worker: Worker, submit_to: str | None) -> None:
    """Where MTurk wants this worker's HIT posted (kept for the last page, which a reload
    reaches without the link's parameters); anything but MTurk's own hosts is ignored."""
    if mturk_submit(submit_to) is not None:
        Crowd(store).update_worker(worker.username, submit_to=str(submit_to).rstrip("/"))


def submit_to(store: Store, worker: Worker) -> str | None:
    """The ExternalQuestion answer URL for this worker, if MTurk sent them."""
    return mturk_submit((Crowd(store).worker(worker.username) or {}).get("submit_to"))


NO_ITEMS = "no items: nothing was left for them to rate"


def batch_wants(store: Store, worker: Worker, invite: Invite) -> str:
    """``"attention"`` when the worker's current batch must take an attention check now
    to hold the study's number of them per batch (its last places), else ``"response"``
    (checks are kept for later batches): every batch carries its checks, not only the
    first. Either falls back to whatever is left."""
    needed = RatingStore(store).config(invite.study_id).attention_checks
    if not needed:
        return "response"
    done = Crowd(store).finished_assignments(worker.study_id, worker.username)
    start = len(done) // invite.batch_size * invite.batch_size
    batch = done[start:]
    missing = needed - sum(1 for a in batch if a["kind"] == "attention")
    left = invite.batch_size - len(batch)
    return "attention" if missing > 0 and left <= missing else "response"


def finish(store: Store, worker: Worker) -> None:
    """The worker's visit ends with no more items: completed if they rated something;
    someone who rated nothing (everything flagged, or nothing left) gets no completion
    code, but the screen-out code, since it was not their doing."""
    if RatingStore(store).done(worker.study_id, worker.username) == 0:
        Crowd(store).update_worker(worker.username, status="stopped", stop_reason=NO_ITEMS)
    else:
        Crowd(store).update_worker(worker.username, status="completed")


def outcome(worker: Worker) -> str | None:
    """Which of ``OUTCOMES`` a finished visit ended in (None while under way)."""
    if worker.status == "completed":
        return "completed"
    if worker.status != "stopped":
        return None
    reason = worker.stop_reason or ""
    return "screened_out" if reason.startswith(("screening", NO_ITEMS)) else "failed_checks"


def give_code(store: Store, worker: Worker, invite: Invite) -> tuple[str, str] | None:
    """The outcome and its code, shown to the worker and recorded the first time (the
    dashboard and the decisions say which code each worker received)."""
    kind = outcome(worker)
    if kind is None:
        return None
    code = invite.code_for(kind)
    row = Crowd(store).worker(worker.username) or {}
    if row.get("code_given") != code:
        Crowd(store).update_worker(
            worker.username, code_given=code, code_kind=kind, completed_at=now()
        )
    return kind, code


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
    workers = Crowd(store).workers(invite.study_id)
    flags = Crowd(store).flag_counts(invite.study_id)
    ratings = RatingStore(store)
    rows = []
    every: list[float] = []
    for w in workers.to_dict("records") if not workers.empty else []:
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
    workers = Crowd(store).workers(invite.study_id).set_index("username")
    if invite.platform == "mturk":
        rows = [
            {
                "AssignmentId": workers.loc[r["username"]]["study_ref"] or "",
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
