"""Never more people than the server holds: a link's Prolific studies are paused when the
people active in the app reach the server's capacity, and started again below it.

The capacity is a number of people the researcher sets (``koed prolific capacity
--people N``, stored in the database so every process reads it): bench/serve.py measures
the stack's rating submits a second with N processes (``submits_per_s_N``), and one
person submits about once every S seconds (the study's median seconds per rating, on the
dashboard), so the stack holds about ``submits_per_s_N * S`` people; set a margin under it.
"Active" is a crowd worker under way who did anything in the last ``ACTIVE_MINUTES``.

Prolific's study transitions (``POST /api/v1/studies/{id}/transition/``, the same endpoint
as ``PUBLISH``): ``{"action": "PAUSE"}`` stops offering the study to new people (those in
it go on) and ``{"action": "START"}`` offers it again. The app starts again only a study it
paused itself (a pause the researcher made in Prolific's app is theirs to lift), and only
below ``RESTART_SHARE`` of the capacity, so one person more or less does not make it flap.
Each transition is in the call log and stored with its figures, for the dashboard.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

from koed_core.db import Store, utcnow
from koed_core.db.crowd import Crowd
from koed_core.db.site import SiteSettings
from koed_core.rating.crowd.identities import UNDER_WAY
from koed_core.rating.crowd.links import Invite
from koed_core.rating.crowd.prolific_client import ProlificClient

CAPACITY = "prolific_capacity"
ACTIVE_MINUTES = 5
RESTART_SHARE = 0.9


@dataclass(frozen=True)
class Transition:
    """One pause or start the app made, with what it saw."""

    study_id: str
    action: str
    """PAUSE or START."""
    active: int
    capacity: int
    status: str
    """Prolific's status of the study after the call, as it answered."""
    at: str = ""


def capacity(store: Store) -> int | None:
    """The people the server holds, as the researcher set it (None: no limit set)."""
    value = SiteSettings(store).get(CAPACITY)
    return int(value) if value else None


def set_capacity(store: Store, people: int | None) -> None:
    """Set (or, with None or 0, clear) the capacity."""
    SiteSettings(store).put(CAPACITY, str(people) if people else "")


def active_people(store: Store) -> int:
    """Crowd workers under way who did anything in the last ``ACTIVE_MINUTES``."""
    since = (utcnow() - timedelta(minutes=ACTIVE_MINUTES)).isoformat(timespec="seconds")
    return Crowd(store).active_count(UNDER_WAY, since)


def _key(study_id: str) -> str:
    return f"prolific_paused:{study_id}"


def last_transition(store: Store, study_id: str) -> Transition | None:
    """The last pause or start the app made on this study."""
    value = SiteSettings(store).get(_key(study_id))
    return Transition(**json.loads(value)) if value else None


def balance(store: Store, client: ProlificClient, invite: Invite, status: str) -> Transition | None:
    """Pause the study (``invite``'s, or its arm's) when the people active reach the
    capacity; start it again, if the app paused it, once they are under
    ``RESTART_SHARE`` of it. ``status`` is Prolific's status just read. Returns what was
    done, if anything.

    Raises:
        ProlificError: Prolific refused the transition.
    """
    most, study = capacity(store), invite.prolific_study_id
    if not most or not study:
        return None
    active = active_people(store)
    mine = last_transition(store, study)
    if status == "ACTIVE" and active >= most:
        action = "PAUSE"
    elif status == "PAUSED" and mine and mine.action == "PAUSE" and active < most * RESTART_SHARE:
        action = "START"
    else:
        return None
    what = "pausing the study at capacity" if action == "PAUSE" else "starting the study again"
    answer = client.call_object(
        what, "POST", f"/api/v1/studies/{study}/transition/", {"action": action}
    )
    done = Transition(
        study,
        action,
        active,
        most,
        str(answer.get("status") or "?"),
        utcnow().isoformat(timespec="seconds"),
    )
    SiteSettings(store).put(_key(study), json.dumps(done.__dict__))
    return done
