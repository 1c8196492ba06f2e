"""Items of a run claimed before they are asked: two processes on one run (a double press,
two ``koed run`` at once, a job beside a terminal) never ask the model for the same item.

A claim is a row of ``response_claims`` (migration m015) naming one pass of one process
(``host:pid#pass``); it goes when the item's answer is stored (:meth:`Store.save_response`)
or when the pass ends, and a claim whose process is gone or that is older than
``CLAIM_STALE_S`` is taken over.
"""

from __future__ import annotations

import time

from koed_core.db.owners import dead_here
from koed_core.db.store import Store

CLAIM_STALE_S = 1800.0
"""After this long a claimed item whose answer never came may be taken by another process
(one item takes at most its tries times the time-out, about 5 minutes, before it fails)."""


def _clock() -> float:
    return time.time()


class ItemClaims:
    """The ``response_claims`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def claim_item(self, run_id: str, response_id: str, owner: str) -> bool:
        """Take one item of a run for ``owner`` before asking the model for it; False when
        it is answered already or another live pass holds it (it asks, not us).

        ``owner`` is ``host:pid#pass``: one pass of one process, so two jobs in one worker
        process are told apart too.
        A claim of a process that has died on this machine, or older than
        ``CLAIM_STALE_S`` (a process elsewhere that went silent), is taken over.
        """
        with self.store.write():
            if self.store.rows(
                "select 1 from responses where id = ? and error is null", [response_id]
            ):
                return False
            held = self.store.rows(
                "select owner, claimed from response_claims where response_id = ?",
                [response_id],
            )
            if held and held[0]["owner"] != owner:
                stale = _clock() - float(held[0]["claimed"]) > CLAIM_STALE_S
                if not stale and not dead_here(held[0]["owner"].partition("#")[0]):
                    return False
            self.store.db.execute(
                "insert or replace into response_claims (response_id, run_id, owner, claimed) "
                "values (?, ?, ?, ?)",
                [response_id, run_id, owner, _clock()],
            )
            return True

    def release_item(self, response_id: str, owner: str) -> None:
        """Give up a claim without an answer (a cancelled request): a rerun asks it."""
        with self.store.write():
            self.store.db.execute(
                "delete from response_claims where response_id = ? and owner = ?",
                [response_id, owner],
            )

    def release_claims(self, owner: str) -> None:
        """Give up every claim ``owner`` still holds (its pass has ended, however)."""
        with self.store.write():
            self.store.db.execute("delete from response_claims where owner = ?", [owner])
