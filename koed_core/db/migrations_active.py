"""Migrations of the active next batch (issue 64 item 4), registered after
:mod:`migrations_prolific` (:mod:`migrations` imports this module at its end, so the
order stays the numbers' order)."""

from __future__ import annotations

import sqlite_utils

from koed_core.db.migration_log import run_script as _script
from koed_core.db.migrations import migration


@migration
def m027_study_inclusion(db: sqlite_utils.Database) -> None:
    """Each dialogue's inclusion probability in a study that grew by an active batch:
    the probability, under the study's whole design (its uniform pilot and every batch
    since), that the dialogue is among the study's (``probability``), the judge's
    uncertainty the last batch was drawn from (``uncertainty``), the batch that chose it
    (``chosen_in``; null: not chosen) and how many batches the probability covers. The
    estimate weights each rated dialogue by it, so it is stored, not recomputed. A study
    with no rows here was drawn uniformly: its probability is n / N for every dialogue."""
    _script(
        db,
        """create table study_inclusion (
             study_id integer not null, conv_id text not null, probability real not null,
             uncertainty real, chosen_in integer, batches integer not null, updated text,
             primary key (study_id, conv_id))""",
    )
