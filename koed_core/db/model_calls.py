"""Paid model calls per account: what an hourly allowance (KOED_CALLS_PER_HOUR) counts."""

from __future__ import annotations

from koed_core.db.store import Store


class ModelCalls:
    """Queries of the ``model_calls`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record_call(self, account: str, model: str, at: float) -> None:
        """Count one paid model call by an account (for its rate limit)."""
        with self.store.write():
            self.store.db.execute(
                "insert into model_calls (account, model, at) values (?,?,?)", [account, model, at]
            )

    def calls_since(self, account: str, since: float) -> int:
        """Paid model calls the account made since a moment."""
        rows = self.store.rows(
            "select count(*) as n from model_calls where account = ? and at >= ?", [account, since]
        )
        return int(rows[0]["n"])
