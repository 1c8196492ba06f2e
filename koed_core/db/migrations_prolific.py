"""Migrations of Prolific round 3, registered after :mod:`migrations`' own (it
imports this module at its end, so the order stays the numbers' order)."""

from __future__ import annotations

import sqlite_utils

from koed_core.db.migration_log import run_script as _script
from koed_core.db.migrations import migration


@migration
def m024_prolific_arms_and_events(db: sqlite_utils.Database) -> None:
    """A ko+en Prolific link published as one study per language arm (``prolific_arms``:
    JSON of language to Prolific's study id; null for a link of one study), and every
    signed event Prolific delivered, once per ``X-Event-ID`` (what it said, when it came,
    what the app did with it): the dashboard's last event, and a redelivery applied once."""
    db.execute("alter table invites add column prolific_arms text")
    _script(
        db,
        """create table prolific_events (
             event_id text primary key, received_at text not null, event_type text not null,
             resource_id text not null, status text, outcome text not null)""",
    )
