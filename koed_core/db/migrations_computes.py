"""Migrations of the shared computations (issue 66), registered after
:mod:`migrations_active` (``migrations`` imports this module at its end, so the order
stays the numbers' order)."""

from __future__ import annotations

import sqlite_utils

from koed_core.db.migration_log import run_script as _script
from koed_core.db.migrations import migration


@migration
def m030_computed_results(db: sqlite_utils.Database) -> None:
    """Results of the heavy tables (the perception split, a gap broken down by label),
    computed once for every visitor and every server process and kept under the database's
    change stamp and their inputs (``key``), with the seconds they took on this machine
    (the next estimate). Not a stamped table: keeping a result changes no number."""
    _script(
        db,
        """create table computed_results (
             key text primary key, name text not null, stamp integer not null,
             inputs text not null, payload blob not null, seconds real not null,
             created text not null);
           create index computed_results_name on computed_results(name, created)""",
    )
