"""Migrations of the run settings (issue 63), registered after :mod:`migrations_prolific`
(``migrations`` imports this module at its end, so the order stays the numbers' order)."""

from __future__ import annotations

import sqlite_utils

from koed_core.db.migrations import migration
from koed_core.db.types import JUDGE_TEMPERATURES


@migration
def m025_judge_temperature(db: sqlite_utils.Database) -> None:
    """The judge's temperature is a setting of its configuration, stored with each
    judgment; every earlier judgment was asked at its mode's (paper 0.7, the others 0),
    so it is written in as that, and an earlier configuration keeps its identity."""
    db.execute("alter table judgments add column temperature real")
    for mode, temperature in JUDGE_TEMPERATURES.items():
        db.execute(
            "update judgments set temperature = ? where mode = ? and temperature is null",
            [temperature, mode],
        )
