"""How many places a link's Prolific study needs: the link's places, plus one for each
submission that provably holds a Prolific place and no place in the app.

Prolific never lets places go down, so a raise is only made on evidence, and never past
the most the researcher allows:

- a submission Prolific shows ACTIVE or RESERVED whose person has no place in the app
  (no visit yet, or a visit that has none) is someone **on their way** until its
  ``started_at`` plus the link's arrival grace (``Invite.arrival_grace``, default
  ``DEFAULT_ARRIVAL_GRACE`` minutes): a launch burst's people reading Prolific's page or
  loading the link are not counted;
- past the grace, or once the submission is back with Prolific (awaiting review,
  approved, screened out...), it **holds a Prolific place and none in the app**
  (screened out, stopped, replaced, gone quiet past the timeout, or unknown to the app)
  and is counted;
- the places asked for are the link's places plus those counted, at most
  ``Invite.place_limit``; a sync lists every submission it looked at and why, so the
  researcher sees what a raise was for (``koed prolific sync``, the dashboard).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from koed_core.db import Store, utcnow
from koed_core.db.crowd import Crowd
from koed_core.rating.crowd.identities import UNDER_WAY
from koed_core.rating.crowd.joining import _place_cutoff
from koed_core.rating.crowd.links import Invite

HOLDING = ("RESERVED", "ACTIVE", "AWAITING REVIEW", "APPROVED", "REJECTED", "SCREENED OUT",
           "PARTIALLY APPROVED")  # fmt: skip
"""Submissions that hold one of the study's places on Prolific."""

ON_THE_WAY = ("RESERVED", "ACTIVE")
"""Submissions whose person may still be on the way to the app."""


@dataclass(frozen=True)
class Holder:
    """One submission holding a Prolific place and no place in the app, and whether the
    sync counts it."""

    participant_id: str
    status: str
    """Prolific's status of the submission."""
    in_app: str | None
    """The person's status in the app (None: no visit)."""
    minutes: float | None
    """Minutes since the submission started on Prolific (None: Prolific gave no start)."""
    counted: bool
    """Whether it raises the places (False: on the way, within the arrival grace)."""

    def __str__(self) -> str:
        """Why the sync counts it or not, in English (the command line's words)."""
        since = "an unknown time" if self.minutes is None else f"{self.minutes:.0f} min"
        who = "no visit in the app" if self.in_app is None else f"{self.in_app} in the app"
        if not self.counted:
            return f"{self.participant_id}: {self.status} for {since}, {who}: on the way"
        return (
            f"{self.participant_id}: {self.status} for {since}, {who}: holds a Prolific "
            f"place and none in the app"
        )


@dataclass(frozen=True)
class PlacesPlan:
    """What a sync found about places, and what it asks Prolific for."""

    link: int
    """The link's places."""
    limit: int
    """The most places a sync may ask for."""
    grace: int
    """The arrival grace, in minutes."""
    holders: tuple[Holder, ...]
    """Every submission holding a Prolific place and none in the app."""

    @property
    def counted(self) -> int:
        """Submissions that raise the places."""
        return sum(1 for h in self.holders if h.counted)

    @property
    def needed(self) -> int:
        """The places the app's places need on Prolific, before the limit."""
        return self.link + self.counted

    @property
    def target(self) -> int:
        """The places to ask for: what is needed, at most the limit."""
        return min(self.needed, self.limit)

    @property
    def capped(self) -> bool:
        """Whether the limit keeps the places under what is needed."""
        return self.needed > self.limit


def plan_places(
    store: Store, invite: Invite, found: list[dict[str, Any]], at: datetime | None = None
) -> PlacesPlan:
    """The places ``found`` (a sync's submissions) ask for, each holder with its reason."""
    crowd = Crowd(store)
    moment = at or utcnow()
    holders = []
    for sub in found:
        status = str(sub.get("status") or "")
        if status not in HOLDING:
            continue
        worker = crowd.worker_by_platform_id(
            invite.study_id, "prolific", str(sub.get("participant_id") or "")
        )
        if worker is not None and _holds_place(store, invite, worker, moment):
            continue
        minutes = _minutes_since(sub.get("started_at"), moment)
        arriving = status in ON_THE_WAY and (minutes is None or minutes < invite.arrival_grace)
        holders.append(
            Holder(
                participant_id=str(sub.get("participant_id") or ""),
                status=status,
                in_app=None if worker is None else _in_app(worker),
                minutes=minutes,
                counted=not arriving,
            )
        )
    return PlacesPlan(invite.cap, invite.place_limit, invite.arrival_grace, tuple(holders))


def _minutes_since(started: Any, moment: datetime) -> float | None:
    try:
        start = datetime.fromisoformat(str(started).replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return max(0.0, (moment - start).total_seconds() / 60)


def _in_app(worker: dict[str, Any]) -> str:
    """The person's status in the app as the dashboard says it (quiet past the timeout:
    "timed out")."""
    if worker.get("decision") == "replace":
        return "replaced"
    status = str(worker["status"])
    return "timed out" if status in UNDER_WAY else status


def _holds_place(store: Store, invite: Invite, worker: dict[str, Any], moment: datetime) -> bool:
    if worker.get("decision") == "replace":
        return False
    if worker["status"] == "completed":
        return True
    if worker["status"] not in UNDER_WAY:
        return False
    last = Crowd(store).last_activity(worker["username"]) or ""
    return last >= _place_cutoff(store, invite, moment)
