"""Who gets a place: joining by link or with an account, resuming the same attempt, and how
many places are held."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from koed_core.db import Store, utcnow
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.rating.crowd.identities import SESSION_ID, UNDER_WAY, Worker, worker_name
from koed_core.rating.crowd.links import PLATFORMS, CrowdError, Invite
from koed_core.rating.studies import StudyRules


def _stamp(at: datetime | None) -> str:
    return (at or utcnow()).isoformat(timespec="seconds")


def timeout_minutes(store: Store, invite: Invite) -> int:
    """Minutes of inactivity after which a worker under way loses their place (the study's
    own timeout, which also hands their open item back)."""
    return int(StudyRules(store).config(invite.study_id).timeout_minutes)


def _place_cutoff(store: Store, invite: Invite, at: datetime | None = None) -> str:
    """Workers under way with no activity since this moment have left: their place is
    free again. Prolific does the same with a submission past its maximum time: "their
    place will open up to a new participant"."""
    moment = at or utcnow()
    return (moment - timedelta(minutes=timeout_minutes(store, invite))).isoformat(
        timespec="seconds"
    )


def _same_attempt(found: Mapping[str, Any], invite: Invite, ids: Mapping[str, str]) -> None:
    """A platform id back with another session (Prolific) or assignment (MTurk) is not
    handed the first one's work.

    Raises:
        CrowdError: the session differs from the one this worker started with.
    """
    if invite.platform not in SESSION_ID:
        return
    param, column = SESSION_ID[invite.platform]
    kept, given = found.get(column) or "", ids.get(param, "")
    if given != kept or not kept:  # a session stored empty matches no session at all
        message = (
            N_(
                "You have already taken part in this study in another Prolific session; its "
                "work stays with it, so this session cannot continue it. Please return this "
                "one on the platform, or message the researchers there."
            )
            if invite.platform == "prolific"
            else N_(
                "You have already taken part in this study in another HIT assignment; its "
                "work stays with it, so this assignment cannot continue it. Please return "
                "this one on the platform, or message the researchers there."
            )
        )
        raise CrowdError(_(message))


def returning(
    store: Store, invite: Invite, ids: Mapping[str, str], at: datetime | None = None
) -> Worker | None:
    """The worker these platform ids already made in this study, or None.

    Raises:
        CrowdError: they come back in another session or assignment; or they were
            inactive long enough for their place to go, and the study is full now.
    """
    names = PLATFORMS.get(invite.platform, ("worker",))
    crowd = Crowd(store)
    found = crowd.worker_by_platform_id(invite.study_id, invite.platform, ids.get(names[0], ""))
    if found is None:
        return None
    _same_attempt(found, invite, ids)
    return keep_place(store, invite, _worker(found, resumed=True), at)


def keep_place(store: Store, invite: Invite, worker: Worker, at: datetime | None = None) -> Worker:
    """The worker, still holding a place. Someone under way who was inactive past the
    timeout lost it: they take one again if one is free (Prolific: a timed-out participant
    "can still complete their submission ... if they are still active on the study and are
    not replaced by another participant"), else they are told the study filled meanwhile.
    A finished or stopped worker needs no place; one whose submission Prolific freed
    (returned or timed out, read by ``koed prolific sync``) has ended their visit. A
    worker who keeps theirs is marked active now (their page was opened), so a page needs
    no second call for it.

    Raises:
        CrowdError: their place went while they were away and every place is taken now,
            or Prolific freed it (they returned the study, or it timed out).
    """
    if worker.status == "returned":
        raise CrowdError(
            _(
                "You returned this study on Prolific (or it timed out there), so this visit "
                "has ended and its place went to someone else. The ratings you gave are "
                "kept. Thank you."
            )
        )
    if worker.status not in UNDER_WAY:
        return worker
    crowd = Crowd(store)
    cutoff = _place_cutoff(store, invite, at)
    last = crowd.last_activity(worker.username) or ""
    if last >= cutoff:
        _touch(crowd, worker, last, at)  # here now: the place stays theirs
        return worker
    if not crowd.retake_place(worker.username, invite.id, invite.cap, cutoff, _stamp(at)):
        minutes = timeout_minutes(store, invite)
        raise CrowdError(
            _(
                "Your session was inactive for more than {minutes} minutes, so its place "
                "went to someone else, and every place is taken now. Please return the "
                "study on the platform (Return). A returned study is not paid; the ratings "
                "you gave are kept, and you may ask the researchers, through the platform, "
                "to delete them or about pay for them.",
                minutes=minutes,
            )
        )
    return worker


def seen(store: Store, worker: Worker, at: datetime | None = None) -> None:
    """The worker opened their page: they are active (stored at most once a minute, so a
    page's reruns do not each write)."""
    crowd = Crowd(store)
    _touch(crowd, worker, crowd.last_activity(worker.username) or "", at)


def _touch(crowd: Crowd, worker: Worker, last: str, at: datetime | None) -> None:
    moment = at or utcnow()
    if last < (moment - timedelta(minutes=1)).isoformat(timespec="seconds"):
        crowd.touch(worker.username, _stamp(moment))


def _full(invite: Invite) -> CrowdError:
    return CrowdError(
        _(
            "This study is full: all {cap} places are taken. Please return it on the "
            "platform (Return). You have not started any work here, so this visit is not "
            "paid.",
            cap=invite.cap,
        )
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
        raise CrowdError(_("the link has no {name}", name=names[0]))
    again = returning(store, invite, ids, at)
    if again is not None:
        return again
    if not StudyRules(store).room_for_newcomer(invite.study_id):
        raise CrowdError(
            _(
                "Every item of this study has all the ratings it needs, so there is nothing "
                "left for you to rate. Please return the study on the platform (Return). You "
                "have not started any work here, so this visit is not paid. Thank you for "
                "your interest."
            )
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
        "created": _stamp(at),
        "last_seen": _stamp(at),
    }
    if not crowd.join(invite.id, invite.cap, row, _place_cutoff(store, invite, at)):
        raise _full(invite)
    return _worker(crowd.worker(str(row["username"])) or row, resumed=False)


@dataclass(frozen=True)
class Places:
    """How full a link is: places taken by people under way or finished, its cap, and
    places given back (screened out, stopped, inactive past the timeout, replaced)."""

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
        raise CrowdError(_("a link holds between 1 and 100,000 places"))
    Crowd(store).set_cap(invite.id, cap)


def worker_of(
    store: Store, username: str, invite: Invite | None = None, at: datetime | None = None
) -> Worker | None:
    """A worker who is already in (this browser session's), or None; with ``invite``,
    still holding a place (see ``keep_place``).

    Raises:
        CrowdError: their place went while they were away and the study is full now.
    """
    row = Crowd(store).worker(username)
    if row is None:
        return None
    worker = _worker(row, resumed=True)
    return keep_place(store, invite, worker, at) if invite is not None else worker


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
        raise CrowdError(_("this invite link is for a recruitment platform, not for accounts"))
    row: dict[str, Any] = {
        "username": username,
        "invite_id": invite.id,
        "study_id": invite.study_id,
        "platform": "account",
        "worker_id": username,
        "status": "consent",
        "created": _stamp(None),
        "last_seen": _stamp(None),
    }
    crowd = Crowd(store)
    if crowd.worker(username) is not None:
        raise CrowdError(_("user {name} exists already", name=repr(username)))
    if not crowd.join(invite.id, invite.cap, row, _place_cutoff(store, invite)):
        raise CrowdError(_("This study is full: all {cap} places are taken.", cap=invite.cap))
    try:
        add_user(users_path, username, "rater", name, password)
    except KoedError:
        crowd.remove(username)
        raise
    return _worker(row, resumed=False)
