"""Who a visitor is: the platform's ids read from the URL (Prolific, MTurk, preview or
not), the signed visit cookie, and the keyed pseudonym a worker rates under."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.i18n import _
from koed_core.rating.crowd.links import (
    MTURK_ID,
    MTURK_PREVIEW,
    MTURK_SUBMIT_HOSTS,
    PLATFORMS,
    PROLIFIC_PID,
    CrowdError,
    Invite,
    personal_signature,
)


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
                _(
                    "This link is personal and incomplete or changed: open the link you were "
                    "given, exactly as it was sent to you."
                )
            )
        return {"worker": person}
    names = PLATFORMS[platform]
    ids = {name: params.get(name, "") for name in names}
    where = {"prolific": "Prolific", "mturk": "Mechanical Turk"}[platform]
    if not ids[names[0]]:
        raise CrowdError(
            _(
                "Open this study from {platform}: the link has no {name}, so your work could "
                "not be credited to you.",
                platform=where,
                name=names[0],
            )
        )
    shape, what = (
        (PROLIFIC_PID, _("24 hexadecimal characters"))
        if platform == "prolific"
        else (MTURK_ID, _("upper-case letters and digits"))
    )
    for name, value in ids.items():
        if (
            value
            and not shape.match(value)
            and not (name == "assignmentId" and value == MTURK_PREVIEW)
        ):
            raise CrowdError(
                _(
                    "{name} is not a {platform} id ({shape}); open this study from {platform} "
                    "itself.",
                    name=name,
                    platform=where,
                    shape=what,
                )
            )
    if (
        platform == "prolific"
        and invite.prolific_studies
        and ids["STUDY_ID"] not in invite.prolific_studies
    ):
        raise CrowdError(
            _(
                "This link belongs to another Prolific study (STUDY_ID does not match); open "
                "the study from its own Prolific page."
            )
        )
    if platform == "prolific" and not ids["SESSION_ID"]:
        # Each attempt at a Prolific study has its own SESSION_ID; without it, a second
        # attempt (returned, then taken again) could continue the first one's work.
        raise CrowdError(
            _(
                "Open this study from Prolific: the link has no SESSION_ID, so this attempt "
                "could not be told apart from another."
            )
        )
    if platform == "mturk" and not ids["assignmentId"]:
        raise CrowdError(_("Open this HIT from Mechanical Turk: the link has no assignmentId."))
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
    username, _bar, rest = (value or "").partition("|")
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
