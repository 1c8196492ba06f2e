"""Which migrations a database has had: the table that records them (kept apart from the
migrations themselves, which grow one function at a time)."""

from __future__ import annotations

import sqlite_utils

from koed_core.db.types import now

TABLE = "_koed_migrations"


def run_script(db: sqlite_utils.Database, script: str) -> None:
    """Run statements one by one: ``executescript`` would commit the caller's transaction,
    and a migration must apply whole or not at all. (No statement here contains ';'.)"""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def applied(db: sqlite_utils.Database) -> list[str]:
    """Names of the migrations this database has had."""
    if TABLE not in db.table_names():
        return []
    return [row["name"] for row in db.query(f"select name from [{TABLE}] order by rowid")]


def record(db: sqlite_utils.Database, name: str) -> None:
    """Mark one migration as applied (inside the caller's transaction)."""
    db.execute(f"create table if not exists [{TABLE}] (name text primary key, applied text)")
    db.execute(f"insert into [{TABLE}] (name, applied) values (?, ?)", [name, now()])
    db.execute(f"PRAGMA user_version = {len(applied(db))}")
