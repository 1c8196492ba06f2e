"""Migrations of the one-word-per-idea change (issue 63), registered after
:mod:`migrations_prolific` (``migrations`` imports this module at its end, so the order
stays the numbers' order)."""

from __future__ import annotations

import sqlite_utils

from koed_core.db.migration_log import run_script as _script
from koed_core.db.migrations import migration


@migration
def m026_item_locks(db: sqlite_utils.Database) -> None:
    """The items a pass holds before it asks the model (m015's ``response_claims``) are
    ``item_locks``, locked at ``locked``: "claims" are the paper's claims
    (``koed_core.results.claims``). A lock held while a database is upgraded stays held
    by the same pass."""
    _script(
        db,
        """alter table response_claims rename to item_locks;
           alter table item_locks rename column claimed to locked;
           drop index response_claims_run;
           create index item_locks_run on item_locks (run_id)""",
    )
