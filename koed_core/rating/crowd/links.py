"""Invite links: which platform parameters a link carries, its signature, expiry, cap and
codes, and the personal links of a study's own raters."""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koed_core.db import Ratings, Store, now
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.rating.crowd.consent import ConsentFacts, contact_problem, fill_consent
from koed_core.rating.crowd.consent import default_consent as default_consent
from koed_core.rating.crowd.timing import visit_minutes
from koed_core.rating.studies import StudyRules

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


DEFAULT_ARRIVAL_GRACE = 10
"""Minutes from a Prolific submission's start during which its person, with no place in
the app yet, is taken to be on their way (reading Prolific's page, opening the link): ten
minutes covers a slow page and a consent read twice, and is a third of the study's
default timeout, so someone gone is still counted long before their place would time
out."""

DEFAULT_ALLOWANCE = 0.2
"""By default a sync may raise Prolific's places to the link's places plus this share (at
least one more): room for the screen-outs and stopped visits that keep a Prolific place."""

NATIVE_YEARS = 10
"""Years lived in Korea (or an English-speaking country) that count as native-like."""


ATTENTION_FAILS_TO_STOP = 2


DECISIONS = ("accept", "reject", "replace", "screen_out")
"""What the admin can decide: accept (approve), reject (with a written reason), replace
(ask them to return the study, unpaid: someone who left or cannot go on for no fault of
the study) and screen out (paid as the screen-out code's action: Prolific pays an
in-study screen-out and lists it among the reasons a rejection is not valid)."""

NO_ITEMS = "no items: nothing was left for them to rate"
"""A stop that was not the worker's doing: every item in their languages was taken."""

FLAGGED_ALL = "flagged every item they were given and rated none"
"""A stop a person reviews: no work done, only flags."""


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
    arrival_grace_minutes: int | None = None
    """Prolific: minutes a submission with no app place yet counts as someone on their way
    (None: ``DEFAULT_ARRIVAL_GRACE``)."""
    max_places: int | None = None
    """Prolific: the most places a sync may raise the study to (None: the link's places and
    the default allowance, see ``place_limit``)."""
    contact: str = ""
    """Whom a worker writes to, as the consent names it (links made before it: none)."""
    prolific_arms: tuple[tuple[str, str], ...] = ()
    """A ko+en link published as one Prolific study per language arm: (language, study
    id) pairs; empty for a link of one study (``prolific_study_id``)."""
    arm: str | None = None
    """Set on the view of one arm (``prolific_arms.arm_view``), never stored."""

    @property
    def prolific_studies(self) -> tuple[str, ...]:
        """Every Prolific study this link was published as (``STUDY_ID`` is one of them)."""
        ids = [study for _lang, study in self.prolific_arms]
        if self.prolific_study_id and self.prolific_study_id not in ids:
            ids.insert(0, self.prolific_study_id)
        return tuple(ids)

    @property
    def arrival_grace(self) -> int:
        """Minutes a Prolific submission with no app place counts as on its way."""
        return (
            DEFAULT_ARRIVAL_GRACE
            if self.arrival_grace_minutes is None
            else self.arrival_grace_minutes
        )

    @property
    def place_limit(self) -> int:
        """The most places a sync may raise Prolific's to: the researcher's maximum, else
        the link's places plus a fifth (at least one); never under the link's places."""
        if self.max_places is not None:
            return max(self.max_places, self.cap)
        return self.cap + max(1, math.ceil(self.cap * DEFAULT_ALLOWANCE))

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
            arrival_grace_minutes=_optional_int(row.get("arrival_grace_minutes")),
            max_places=_optional_int(row.get("max_places")),
            contact=row.get("contact") or "",
            prolific_arms=_arms(row.get("prolific_arms")),
        )


def _arms(value: Any) -> tuple[tuple[str, str], ...]:
    """The stored JSON of language to study id, in language order (nothing stored: ())."""
    if not value:
        return ()
    found = json.loads(str(value))
    return tuple(sorted((str(k), str(v)) for k, v in found.items()))


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _derived_code(invite_id: str, outcome: str) -> str:
    """A code for a link made before codes per outcome (stable: the same every time)."""
    return hashlib.sha256(f"{invite_id}:{outcome}".encode()).hexdigest()[:8].upper()


def _signature(invite_id: str, key: bytes) -> str:
    return hmac.new(key, f"invite:{invite_id}".encode(), hashlib.sha256).hexdigest()[:20]


def token_for(invite_id: str, key: bytes) -> str:
    """The link's ``invite`` parameter: the id and its signature under the server key."""
    return f"{invite_id}.{_signature(invite_id, key)}"


@dataclass(frozen=True)
class InviteRequest:
    """What an admin asks of a new invite link: its platform, life and places, batches,
    consent, pay, codes and calibration (checked by :func:`create_invite`)."""

    platform: str
    """prolific, mturk, none (a plain link) or account (an account's own link)."""
    days: float
    """How long the link lets people in."""
    cap: int
    """Places: workers under way or finished."""
    batch_size: int
    """Responses in one batch."""
    consent_ko: str
    """The consent text in Korean."""
    consent_en: str
    """The consent text in English."""
    batches: int = 1
    """Batches one worker may do."""
    completion_code: str | None = None
    """The completion code (drawn when None)."""
    redirect_url: str | None = None
    """Where a finished worker goes (Prolific's completion URL by default)."""
    reward: float | None = None
    """Pay per submission, in ``currency``."""
    currency: str = "GBP"
    """The reward's currency."""
    created_by: str | None = None
    """The admin who made the link."""
    screenout_code: str | None = None
    """The screen-out code (drawn when None)."""
    failed_code: str | None = None
    """The failed-attention-checks code (drawn when None)."""
    prolific_study_id: str | None = None
    """The Prolific study the link belongs to, when it exists already."""
    calibration_attempts: int = 1
    """Tries at the calibration items, 1 to 5."""
    arrival_grace_minutes: int | None = None
    """Prolific: minutes a submission with no app place counts as on its way (None: the
    default)."""
    max_places: int | None = None
    """Prolific: the most places a sync may raise the study to (None: the default)."""
    contact: str = ""
    """Whom a worker writes to (required: the consent names it)."""


def create_invite(
    store: Store, key: bytes, study_id: int, request: InviteRequest
) -> tuple[Invite, str]:
    """A new invite link for a study; returns it and its token.

    Raises:
        CrowdError: no such study, a setting out of range, or an unknown platform.
    """
    platform, days, cap = request.platform, request.days, request.cap
    batch_size, batches = request.batch_size, request.batches
    consent_ko, consent_en = request.consent_ko, request.consent_en
    reward, calibration_attempts = request.reward, request.calibration_attempts
    prolific_study_id, redirect_url = request.prolific_study_id, request.redirect_url
    completion_code, screenout_code = request.completion_code, request.screenout_code
    failed_code = request.failed_code
    if StudyRules(store).q.study(study_id) is None:
        raise CrowdError(_("no study {study} (`koed study create` makes one)", study=study_id))
    problems = []
    if platform not in (*PLATFORMS, "none", "account"):
        problems.append(
            _("platform must be prolific, mturk, none or account, not {name}", name=repr(platform))
        )
    if not 0 < days <= 365:
        problems.append(_("a link lasts between a few hours and 365 days"))
    if cap < 1 or batch_size < 1 or batches < 1:
        problems.append(_("places, batch size and batches must each be at least 1"))
    if not consent_ko.strip() or not consent_en.strip():
        problems.append(_("write the consent text in both Korean and English"))
    if (no_contact := contact_problem(request.contact)) is not None:
        problems.append(no_contact)
    if reward is not None and reward < 0:
        problems.append(_("the reward cannot be negative"))
    if not 1 <= calibration_attempts <= 5:
        problems.append(_("calibration attempts must be between 1 and 5"))
    problems += place_rule_problems(cap, request.max_places, request.arrival_grace_minutes)
    if prolific_study_id and not PROLIFIC_PID.match(prolific_study_id):
        problems.append(_("the Prolific study id is 24 hexadecimal characters"))
    codes = [
        c or secrets.token_hex(4).upper() for c in (completion_code, screenout_code, failed_code)
    ]
    bad = [c for c in codes if not CODE.match(c)]
    if bad:
        problems.append(
            _("codes are 4-32 upper-case letters and digits, not {code}", code=repr(bad[0]))
        )
    elif len(set(codes)) < 3:
        problems.append(_("the completion, screen-out and failed-checks codes must differ"))
    if problems:
        raise CrowdError("; ".join(problems))
    code = codes[0]
    facts = ConsentFacts(
        visit_minutes(store, study_id, batch_size, batches),
        reward,
        request.currency,
        request.contact.strip(),
    )
    consent_ko = fill_consent(consent_ko.strip(), "ko", facts)
    consent_en = fill_consent(consent_en.strip(), "en", facts)
    if platform == "prolific" and not redirect_url:
        redirect_url = PROLIFIC_DONE.format(code=code)
    invite_id = secrets.token_urlsafe(9)
    while not invite_id[0].isalnum():  # "-Ia..." would read as an option on a command line
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
        "consent_ko": consent_ko,
        "consent_en": consent_en,
        "reward": reward,
        "currency": request.currency,
        "revoked": 0,
        "created_by": request.created_by,
        "created": now(),
        "prolific_study_id": prolific_study_id or None,
        "screenout_code": codes[1],
        "failed_code": codes[2],
        "calibration_attempts": calibration_attempts,
        "arrival_grace_minutes": request.arrival_grace_minutes,
        "max_places": request.max_places,
        "contact": facts.contact,
    }
    Crowd(store).add_invite(row)
    checks = StudyRules(store).config(study_id).attention_checks
    if checks and batches > 1:  # each batch holds its share of checks: new ones in each
        StudyRules(store).ensure_attention(study_id, checks * batches)
    return Invite.from_row(row), token_for(invite_id, key)


def place_rule_problems(cap: int, max_places: int | None, grace: int | None) -> list[str]:
    """What is wrong with a link's most places and arrival grace (empty: nothing)."""
    problems = []
    if max_places is not None and not cap <= max_places <= 100_000:
        problems.append(
            _("the most places on Prolific is at least the link's places ({cap})", cap=cap)
        )
    if grace is not None and not 0 <= grace <= 240:
        problems.append(_("the arrival grace is between 0 and 240 minutes"))
    return problems


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
    invite_id, _dot, signature = (token or "").partition(".")
    if not invite_id or not hmac.compare_digest(signature, _signature(invite_id, key)):
        raise CrowdError(
            _(
                "This invite link is not valid: it is incomplete or was changed. Open the "
                "link exactly as you received it."
            )
        )
    row = Crowd(store).invite(invite_id)
    if row is None:
        raise CrowdError(_("This invite link is not valid: no such study invitation."))
    invite = Invite.from_row(row)
    if joining and invite.revoked:
        raise CrowdError(_("This invite link has been withdrawn by the study's organisers."))
    moment = time.time() if at is None else at
    if joining and moment > invite.expires:
        ended = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(invite.expires))
        raise CrowdError(_("This invite link expired on {moment}.", moment=ended))
    study = Ratings(store).study(invite.study_id)
    if study is None or study["closed"]:
        raise CrowdError(_("This study has ended; thank you for your interest."))
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
        why = (
            _("{id} has characters ids do not use", id=repr(bad[0]))
            if bad
            else _("ids repeat or none given")
        )
        raise CrowdError(
            _("the list of ids: {why} (letters, digits, - or _; one per line)", why=why)
        )
    return {
        p: f"invite={token}&worker={p}&sig={personal_signature(key, invite.id, p)}" for p in ids
    }
