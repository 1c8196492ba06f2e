"""Invite links, the crowd workers who came through them, and the admin's decisions."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from koed_core.db.ratings import WORK_KIND
from koed_core.db.store import Store


class Crowd:
    """The ``invites`` and ``crowd_workers`` tables."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add_invite(self, row: dict[str, Any]) -> None:
        """Store a new invite link's settings."""
        with self.store.write():
            self.store.db.table("invites").insert(row, pk="id")

    def invite(self, invite_id: str) -> dict[str, Any] | None:
        """One invite, or None."""
        rows = self.store.rows("select * from invites where id = ?", [invite_id])
        return rows[0] if rows else None

    def invites(self, study_id: int) -> list[dict[str, Any]]:
        """A study's invites, newest first."""
        return self.store.rows(
            "select * from invites where study_id = ? order by created desc", [study_id]
        )

    def revoke(self, invite_id: str) -> None:
        """A revoked link lets nobody new in (those already in may finish)."""
        with self.store.write():
            self.store.db.execute("update invites set revoked = 1 where id = ?", [invite_id])

    def worker_by_platform_id(
        self, study_id: int, platform: str, worker_id: str
    ) -> dict[str, Any] | None:
        """The worker who already joined this study with this platform id."""
        rows = self.store.rows(
            "select * from crowd_workers where study_id = ? and platform = ? and worker_id = ?",
            [study_id, platform, worker_id],
        )
        return rows[0] if rows else None

    def worker(self, username: str) -> dict[str, Any] | None:
        """A crowd worker by their (pseudonymous) username."""
        rows = self.store.rows("select * from crowd_workers where username = ?", [username])
        return rows[0] if rows else None

    def join(self, invite_id: str, cap: int, row: dict[str, Any], cutoff: str) -> bool:
        """Add a worker if the invite has a place left; False when it is full. One
        transaction, so two workers arriving at once cannot both take the last place."""
        with self.store.write():
            if self._used(invite_id, cutoff) >= cap:
                return False
            self.store.db.table("crowd_workers").insert(row, pk="username")
            return True

    def retake_place(
        self, username: str, invite_id: str, cap: int, cutoff: str, stamp: str
    ) -> bool:
        """Someone whose place went (inactive past the timeout) is back: a place again if
        one is free, counted from ``stamp``; False when the link is full. One transaction,
        so they and a newcomer cannot both take the last place."""
        with self.store.write():
            if self._used(invite_id, cutoff) >= cap:
                return False
            self.store.db.execute(
                "update crowd_workers set last_seen = ? where username = ?", [stamp, username]
            )
            return True

    def _used(self, invite_id: str, cutoff: str) -> int:
        """Places held: workers finished, or under way and active since ``cutoff``. Not
        those screened out or stopped, replaced by the admin, or inactive longer than the
        study's timeout at any step (consent, screening, calibration, rating)."""
        return int(
            self.store.rows(
                f"select count(*) as n from crowd_workers w where w.invite_id = ? "
                f"and coalesce(w.decision, '') != 'replace' and (w.status = 'completed' or "
                f"(w.status in ('consent', 'screening', 'rating') and {ACTIVITY} >= ?))",
                [invite_id, cutoff],
            )[0]["n"]
        )

    def last_activity(self, username: str) -> str | None:
        """When the worker last did anything: joined, consented, screened, calibrated, was
        handed an item, rated, flagged, or opened the page."""
        rows = self.store.rows(
            f"select {ACTIVITY} as at from crowd_workers w where w.username = ?", [username]
        )
        return (rows[0]["at"] or None) if rows else None

    def active_count(self, statuses: tuple[str, ...], since: str) -> int:
        """Workers of every study in one of ``statuses`` who did anything since ``since``:
        the people the app's server holds now."""
        marks = ", ".join("?" for _ in statuses)
        rows = self.store.rows(
            f"select count(*) as n from crowd_workers w where w.status in ({marks}) "
            f"and {ACTIVITY} >= ?",
            [*statuses, since],
        )
        return int(rows[0]["n"]) if rows else 0

    def activities(self, study_id: int) -> dict[str, str]:
        """Every worker's last activity in a study (the dashboard's idle minutes)."""
        rows = self.store.rows(
            f"select w.username, {ACTIVITY} as at from crowd_workers w where w.study_id = ?",
            [study_id],
        )
        return {r["username"]: r["at"] for r in rows if r["at"]}

    def touch(self, username: str, stamp: str) -> None:
        """The worker is here now (a page they opened, a step they took)."""
        with self.store.write():
            self.store.db.execute(
                "update crowd_workers set last_seen = ? where username = ? and "
                "coalesce(last_seen, '') < ?",
                [stamp, username, stamp],
            )

    def work_done(self, study_id: int, username: str) -> tuple[int, int]:
        """(responses rated, attention checks rated): only the first is work."""
        rows = self.store.rows(
            f"select {WORK_KIND} as kind, count(*) as n from assignments a join study_items i on "
            "i.id = a.item_id where a.study_id = ? and a.username = ? and a.status = 'done' "
            "group by i.kind",
            [study_id, username],
        )
        counts = {r["kind"]: int(r["n"]) for r in rows}
        return counts.get("response", 0), counts.get("attention", 0)

    def response_scores(self, study_id: int, username: str) -> list[tuple[str, int]]:
        """(item, score) of every dimension the worker scored on real responses."""
        rows = self.store.rows(
            "select r.item_id, r.score from ratings r join study_items i on i.id = r.item_id "
            "where r.study_id = ? and r.username = ? and i.kind = 'response'",
            [study_id, username],
        )
        return [(r["item_id"], int(r["score"])) for r in rows]

    def set_cap(self, invite_id: str, cap: int) -> None:
        """A live link's number of places."""
        with self.store.write():
            self.store.db.execute("update invites set cap = ? where id = ?", [cap, invite_id])

    def set_prolific_study(self, invite_id: str, study_id: str) -> None:
        """The Prolific study a link was published as (``STUDY_ID`` must match it)."""
        with self.store.write():
            self.store.db.execute(
                "update invites set prolific_study_id = ? where id = ?", [study_id, invite_id]
            )

    def set_prolific_arm(self, invite_id: str, lang: str, study_id: str) -> None:
        """The Prolific study one language arm of a ko+en link was published as."""
        with self.store.write():
            rows = self.store.rows("select prolific_arms from invites where id = ?", [invite_id])
            arms = json.loads(rows[0]["prolific_arms"] or "{}") if rows else {}
            arms[lang] = study_id
            self.store.db.execute(
                "update invites set prolific_arms = ? where id = ?",
                [json.dumps(arms, sort_keys=True), invite_id],
            )

    def worker_by_session(self, platform: str, session_ref: str) -> dict[str, Any] | None:
        """The worker whose visit is this platform session (Prolific: the submission id)."""
        rows = self.store.rows(
            "select * from crowd_workers where platform = ? and session_ref = ?",
            [platform, session_ref],
        )
        return rows[0] if rows else None

    def set_place_rules(self, invite_id: str, max_places: int | None, grace: int | None) -> None:
        """A link's most places on Prolific and its arrival grace (None: the default)."""
        with self.store.write():
            self.store.db.execute(
                "update invites set max_places = ?, arrival_grace_minutes = ? where id = ?",
                [max_places, grace, invite_id],
            )

    def remove(self, username: str) -> None:
        """Give a place back (an account that could not be created after all)."""
        with self.store.write():
            self.store.db.execute("delete from crowd_workers where username = ?", [username])

    def bound_study(self, username: str) -> int | None:
        """The one study an account made through an invite link may rate."""
        rows = self.store.rows(
            "select study_id from crowd_workers where username = ? and platform = 'account'",
            [username],
        )
        return int(rows[0]["study_id"]) if rows else None

    def places_used(self, invite_id: str, cutoff: str) -> int:
        """Places this invite's workers hold now (see ``_used``)."""
        return self._used(invite_id, cutoff)

    def joined(self, invite_id: str) -> int:
        """Everyone who ever came in through this invite."""
        return int(
            self.store.rows(
                "select count(*) as n from crowd_workers where invite_id = ?", [invite_id]
            )[0]["n"]
        )

    def update_worker(self, username: str, **fields: Any) -> None:
        """Consent, screening, stop, decision: whatever changed."""
        values = {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in fields.items()}
        with self.store.write():
            self.store.db.table("crowd_workers").update(username, values)

    def step(self, username: str, stamp: str, **fields: Any) -> None:
        """A step the worker took (consent, screening, a calibration score, a stop):
        recorded with the moment, which is their last activity."""
        self.update_worker(username, last_seen=stamp, **fields)

    def workers(self, study_id: int) -> pd.DataFrame:
        """Every worker of a study (platform ids included: for the admin and the platform's
        approval file only)."""
        return self.store.frame(_WORKERS, [study_id])

    def worker_rows(self, study_id: int) -> list[dict[str, Any]]:
        """The same workers as plain rows: a column nobody has a value in yet (no one has
        finished) stays None, where a frame would hold NaN, which is truthy."""
        return self.store.rows(_WORKERS, [study_id])

    def finished_assignments(self, study_id: int, username: str) -> list[dict[str, Any]]:
        """The worker's done items in order, with when each was handed out and finished."""
        return self.store.rows(
            "select a.assigned_at, a.finished_at, i.kind, a.id as assignment_id from "
            "assignments a join study_items i on i.id = a.item_id where a.study_id = ? and "
            "a.username = ? and a.status = 'done' order by a.finished_at",
            [study_id, username],
        )

    def flag_counts(self, study_id: int) -> dict[str, int]:
        """Items each rater flagged (broken, offensive) in a study."""
        rows = self.store.rows(
            "select username, count(*) as n from assignments where study_id = ? and "
            "status = 'flagged' group by username",
            [study_id],
        )
        return {r["username"]: int(r["n"]) for r in rows}

    def attention_scores(self, study_id: int, username: str) -> list[dict[str, Any]]:
        """The worker's scores on attention checks, per item and dimension."""
        return self.store.rows(
            "select r.item_id, r.dimension, r.score, i.instruction, i.instructed_score from "
            "ratings r join "
            "study_items i on i.id = r.item_id where r.study_id = ? and r.username = ? and "
            "i.kind = 'attention'",
            [study_id, username],
        )


_WORKERS = "select * from crowd_workers where study_id = ? order by created"

ACTIVITY = (
    "max(coalesce(w.last_seen, w.created, ''), coalesce((select max(coalesce(a.finished_at, "
    "a.assigned_at)) from assignments a where a.username = w.username and "
    "a.study_id = w.study_id), ''))"
)
"""SQL for a worker's (``w``) last activity: their own last step or page, or the last item
they were handed or finished, whichever is later (ISO stamps compare as text)."""
