"""What the app did on a researcher's Prolific account, and what it read back: calls,
submissions, review actions and bonuses (migration m017). No row holds the API token."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from koed_core.db.store import Store
from koed_core.db.types import now


@dataclass(frozen=True)
class BonusMove:
    """What a bonus carries into its new state (None keeps what it had)."""

    bulk_id: str | None = None
    note: str | None = None
    """Why it stands there ("" clears it)."""
    baseline: str | None = None
    """The submission's bonuses just before the pay call, JSON cents."""
    sent: bool = False
    """The pay call is about to leave: ``sent_at`` is stamped now."""


class ProlificLog:
    """The ``prolific_*`` tables."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record_call(
        self,
        *,
        what: str,
        method: str,
        path: str,
        status: int | None,
        outcome: str,
        tries: int,
        invite_id: str | None,
    ) -> None:
        """One API call as the researcher reads it back: what it was for, the method and
        path (never a header), the last status, how it ended and how many tries it took."""
        with self.store.write():
            self.store.db.table("prolific_calls").insert(
                {
                    "at": now(),
                    "invite_id": invite_id,
                    "what": what,
                    "method": method,
                    "path": path,
                    "status": status,
                    "outcome": outcome[:300],
                    "tries": tries,
                }
            )

    def calls(self, invite_id: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        """The newest calls first (one link's, or all)."""
        where, params = ("where invite_id = ?", [invite_id]) if invite_id else ("", [])
        return self.store.rows(
            f"select at, what, method, path, status, outcome, tries from prolific_calls "
            f"{where} order by id desc limit {int(limit)}",
            params,
        )

    def last_read(self, invite_id: str) -> str | None:
        """When a sync last stored this link's submissions (None: never)."""
        rows = self.store.rows(
            "select max(seen_at) as at from prolific_submissions where invite_id = ?",
            [invite_id],
        )
        return rows[0]["at"] if rows else None

    def save_submissions(self, invite_id: str, rows: list[dict[str, Any]]) -> None:
        """The submissions a sync read (their status now; a flag is kept once set)."""
        stamp = now()
        with self.store.write():
            for r in rows:
                self.store.db.execute(
                    "insert into prolific_submissions (id, invite_id, participant_id, status, "
                    "started_at, completed_at, study_code, flag, seen_at) values "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict(id) do update set "
                    "status = excluded.status, completed_at = excluded.completed_at, "
                    "study_code = excluded.study_code, seen_at = excluded.seen_at, "
                    "flag = coalesce(prolific_submissions.flag, excluded.flag)",
                    [
                        r["id"],
                        invite_id,
                        r["participant_id"],
                        r["status"],
                        r.get("started_at"),
                        r.get("completed_at"),
                        r.get("study_code"),
                        r.get("flag"),
                        stamp,
                    ],
                )

    def submissions(self, invite_id: str) -> list[dict[str, Any]]:
        """The link's submissions as last read, oldest first."""
        return self.store.rows(
            "select * from prolific_submissions where invite_id = ? order by started_at, id",
            [invite_id],
        )

    def action_done(self, submission_id: str, action: str) -> bool:
        """Whether this review action was already applied to this submission."""
        rows = self.store.rows(
            "select 1 from prolific_actions where submission_id = ? and action = ? and "
            "outcome = 'ok'",
            [submission_id, action],
        )
        return bool(rows)

    def record_action(self, submission_id: str, action: str, outcome: str) -> None:
        """A review action applied (``ok``) or refused (the reason)."""
        with self.store.write():
            self.store.db.execute(
                "insert into prolific_actions (submission_id, action, at, outcome) values "
                "(?, ?, ?, ?) on conflict(submission_id, action) do update set at = "
                "excluded.at, outcome = excluded.outcome",
                [submission_id, action, now(), outcome[:300]],
            )

    def plan_bonuses(self, invite_id: str, round_: str, amounts: dict[str, str]) -> None:
        """Each bonus of a file once: a bonus already known (any state) is left as it is."""
        stamp = now()
        with self.store.write():
            for participant, amount in amounts.items():
                self.store.db.execute(
                    "insert or ignore into prolific_bonuses (invite_id, participant_id, round, "
                    "amount, state, updated) values (?, ?, ?, ?, 'planned', ?)",
                    [invite_id, participant, round_, amount, stamp],
                )

    def bonuses(self, invite_id: str, round_: str | None = None) -> list[dict[str, Any]]:
        """A link's bonuses (one round's, or all)."""
        where = "invite_id = ?" + (" and round = ?" if round_ is not None else "")
        params = [invite_id] + ([round_] if round_ is not None else [])
        return self.store.rows(
            f"select * from prolific_bonuses where {where} order by participant_id", params
        )

    def set_bonus_state(
        self,
        invite_id: str,
        round_: str,
        participants: list[str],
        state: str,
        *,
        only_from: str | None = None,
        move: BonusMove | None = None,
    ) -> int:
        """Move bonuses to ``state`` in one transaction (only those in ``only_from`` when
        given), carrying what ``move`` says; returns how many moved. "paying" is written
        and committed before the pay call is sent, with the bonuses Prolific showed just
        before (``move.baseline``)."""
        if not participants:
            return 0
        move = move or BonusMove()
        marks = ", ".join("?" for _ in participants)
        sql = (
            f"update prolific_bonuses set state = ?, updated = ?, bulk_id = "
            f"coalesce(?, bulk_id), note = coalesce(?, note), baseline = coalesce(?, "
            f"baseline), sent_at = case when ? then ? else sent_at end where invite_id = ? "
            f"and round = ? and participant_id in ({marks})"
        )
        stamp = now()
        params: list[Any] = [
            state,
            stamp,
            move.bulk_id,
            None if move.note is None else move.note[:300],
            move.baseline,
            int(move.sent),
            stamp,
            invite_id,
            round_,
            *participants,
        ]
        if only_from is not None:
            sql += " and state = ?"
            params.append(only_from)
        with self.store.write():
            cursor = self.store.db.execute(sql, params)
            return int(cursor.rowcount)

    def note_bonuses(
        self, invite_id: str, round_: str, notes: dict[str, str], *, state: str
    ) -> None:
        """Write why each bonus still stands in ``state`` (only those still there)."""
        with self.store.write():
            for participant, note in notes.items():
                self.store.db.execute(
                    "update prolific_bonuses set note = ?, updated = ? where invite_id = ? and "
                    "round = ? and participant_id = ? and state = ?",
                    [note[:300], now(), invite_id, round_, participant, state],
                )

    def record_event(
        self, event_id: str, event_type: str, resource_id: str, status: str | None, outcome: str
    ) -> bool:
        """One signed event Prolific delivered, stored once per ``X-Event-ID`` (migration
        m024); False when it was stored before (a redelivery: not applied again)."""
        with self.store.write():
            cursor = self.store.db.execute(
                "insert or ignore into prolific_events (event_id, received_at, event_type, "
                "resource_id, status, outcome) values (?, ?, ?, ?, ?, ?)",
                [event_id, now(), event_type, resource_id, status, outcome[:300]],
            )
            return bool(cursor.rowcount)

    def set_event_outcome(self, event_id: str, outcome: str) -> None:
        """What the app did with a stored event."""
        with self.store.write():
            self.store.db.execute(
                "update prolific_events set outcome = ? where event_id = ?",
                [outcome[:300], event_id],
            )

    def last_event(self) -> dict[str, Any] | None:
        """The newest event Prolific delivered (None: none yet)."""
        rows = self.store.rows(
            "select event_id, received_at, event_type, resource_id, status, outcome "
            "from prolific_events order by received_at desc, rowid desc limit 1"
        )
        return rows[0] if rows else None

    def last_sync(self, invite_id: str) -> str | None:
        """When a sync last read this link's submissions whole (None: never), from the
        call log: a study with no submission yet has been read too."""
        rows = self.store.rows(
            "select max(at) as at from prolific_calls where invite_id = ? and "
            "what = 'reading the submissions' and outcome = 'ok'",
            [invite_id],
        )
        return rows[0]["at"] if rows else None
