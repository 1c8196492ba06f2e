"""Items of a run locked before they are asked: two processes on one run (a double press,
two ``koed run`` at once, a job beside a terminal) never ask the model for the same item.

A lock is a row of ``item_locks`` (migration m015, named so by m026) naming one pass of
one process (``host:pid#pass``); it goes when the item's answer is stored
(:meth:`Runs.save_response`) or when the pass ends, and a lock whose process is gone or
that is older than ``LOCK_STALE_S`` is taken over.
"""

from __future__ import annotations

import time

from koed_core.db.owners import dead_here
from koed_core.db.store import Store

LOCK_STALE_S = 1800.0
"""After this long a locked item whose answer never came may be taken by another process
(one item takes at most its tries times the time-out, about 5 minutes, before it fails)."""


def _clock() -> float:
    return time.time()


class ItemLocks:
    """The ``item_locks`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def lock_item(self, run_id: str, response_id: str, owner: str) -> bool:
        """Take one item of a run for ``owner`` before asking the model for it; False when
        it is answered already or another live pass holds it (it asks, not us).

        ``owner`` is ``host:pid#pass``: one pass of one process, so two jobs in one worker
        process are told apart too.
        A lock of a process that has died on this machine, or older than
        ``LOCK_STALE_S`` (a process elsewhere that went silent), is taken over.
        """
        with self.store.write():
            if self.store.rows(
                "select 1 from responses where id = ? and error is null", [response_id]
            ):
                return False
            held = self.store.rows(
                "select owner, locked from item_locks where response_id = ?",
                [response_id],
            )
            if held and held[0]["owner"] != owner:
                stale = _clock() - float(held[0]["locked"]) > LOCK_STALE_S
                if not stale and not dead_here(held[0]["owner"].partition("#")[0]):
                    return False
            self.store.db.execute(
                "insert or replace into item_locks (response_id, run_id, owner, locked) "
                "values (?, ?, ?, ?)",
                [response_id, run_id, owner, _clock()],
            )
            return True

    def unlock_item(self, response_id: str, owner: str) -> None:
        """Give up a lock without an answer (a cancelled request): a rerun asks it."""
        with self.store.write():
            self.store.db.execute(
                "delete from item_locks where response_id = ? and owner = ?",
                [response_id, owner],
            )

    def unlock_all(self, owner: str) -> None:
        """Give up every lock ``owner`` still holds (its pass has ended, however)."""
        with self.store.write():
            self.store.db.execute("delete from item_locks where owner = ?", [owner])
