"""The ``computed_results`` table: heavy tables computed once for every visitor and every
server process, kept under the change stamp they were computed at and their inputs.

A page finds a result here before it asks for a computation; the job that computes it
(``koed_core.jobs.kinds.compute_job``) writes it here. Results of an older stamp are
dropped when a newer one of the same table is kept: once the stamp moved, nobody asks
for them again.
"""

from __future__ import annotations

from koed_core.db.store import Store
from koed_core.db.types import now


class ComputedResults:
    """Stored results of shared computations, by key (``shared_tables.key``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> bytes | None:
        """The stored result under ``key``, or None (not computed yet)."""
        rows = self.store.rows("select payload from computed_results where key = ?", [key])
        return bytes(rows[0]["payload"]) if rows else None

    def keep(
        self, key: str, name: str, stamp: int, inputs: str, payload: bytes, seconds: float
    ) -> None:
        """Store one result, and drop the results of this table at older stamps."""
        with self.store.write():
            self.store.db.execute(
                "insert or replace into computed_results (key, name, stamp, inputs, payload, "
                "seconds, created) values (?, ?, ?, ?, ?, ?, ?)",
                [key, name, stamp, inputs, payload, seconds, now()],
            )
            self.store.db.execute(
                "delete from computed_results where name = ? and stamp < ?", [name, stamp]
            )

    def last_seconds(self, name: str) -> float | None:
        """How long this table last took on this machine (None: never computed here)."""
        rows = self.store.rows(
            "select seconds from computed_results where name = ? order by created desc, "
            "rowid desc limit 1",
            [name],
        )
        return float(rows[0]["seconds"]) if rows else None
