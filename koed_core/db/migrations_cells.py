"""Migrations of the language x content cells (issue 65), registered after
:mod:`migrations_active` (:mod:`migrations` imports this module at its end, so the order
stays the numbers' order)."""

from __future__ import annotations

import sqlite_utils

from koed_core.db.migration_log import run_script as _script
from koed_core.db.migrations import migration


@migration
def m034_translation_drafts(db: sqlite_utils.Database) -> None:
    """Each dialogue a translation pass has translated, kept as it comes back and before
    the pass makes its version (``db/translation_drafts.py``): a pass killed halfway
    (a worker's crash, Ctrl-C) is run again with the same parameters (``pass_key``) and
    asks only for the dialogues not kept here; the rows go once the version is made."""
    _script(
        db,
        """create table translation_drafts (
             pass_key text not null, conv_id text not null, variant text not null,
             source_hash text not null, situation text not null, turns text not null,
             created text, primary key (pass_key, conv_id))""",
    )
