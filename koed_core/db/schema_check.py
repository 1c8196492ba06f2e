"""Whether a database file holds only what KoED Studio's migrations make, checked in a
bounded time (issue 62).

A backup is a whole SQLite file, and SQLite keeps code in it: a restored trigger that
deleted every new rating fired in the app, and a ``ratings`` replaced by a recursive view
made restore and backup count for ever. So a file's schema is compared with the one the
migrations it records make (built in memory, once per migration level): a table, index
or column of ours that is missing or of another kind refuses the file; a trigger, view,
table or index the migrations never made is named and, on restore, dropped before
anything opens the database. Every query of a check runs under a deadline (SQLite's
progress handler), so no file can hold a check up.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

import sqlite_utils

from koed_core.db.migrations import MIGRATIONS, TABLE
from koed_core.errors import KoedError

CHECK_LIMIT_S = 120.0
"""The longest any check of a file may take (an integrity check of a large file included)."""


class SchemaError(KoedError):
    """A file whose schema is not the one the migrations make."""


@dataclass(frozen=True)
class Extra:
    """An object in a file that no migration made."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@contextmanager
def deadline(conn: sqlite3.Connection, seconds: float = CHECK_LIMIT_S) -> Iterator[None]:
    """Interrupt any query on ``conn`` that runs past ``seconds`` from now.

    Raises:
        SchemaError: a query was interrupted.
    """
    end = time.monotonic() + seconds
    conn.set_progress_handler(lambda: int(time.monotonic() > end), 10_000)
    try:
        yield
    except sqlite3.OperationalError as err:
        if "interrupted" not in str(err):
            raise
        raise SchemaError(
            f"checking the file took longer than {seconds:.0f} s and was stopped; it may hold "
            "a query that never ends"
        ) from None
    finally:
        conn.set_progress_handler(None, 0)


@cache
def expected(names: tuple[str, ...]) -> dict[str, tuple[str, frozenset[str]]]:
    """What the migrations ``names`` make, by object name: its kind and, for a table, its
    columns (0.1.0's tables, made before numbered migrations, are those of m001)."""
    db = sqlite_utils.Database(memory=True)
    wanted = set(names) or {MIGRATIONS[0][0]}
    for name, migrate in MIGRATIONS:
        if name in wanted:
            migrate(db)
    db.execute(f"create table if not exists [{TABLE}] (name text primary key, applied text)")
    found = _objects(db.conn)
    db.conn.close()
    return found


def _objects(conn: sqlite3.Connection) -> dict[str, tuple[str, frozenset[str]]]:
    rows = conn.execute(
        "select type, name from sqlite_master where name not like 'sqlite_%'"
    ).fetchall()
    found: dict[str, tuple[str, frozenset[str]]] = {}
    for kind, name in rows:
        columns: frozenset[str] = frozenset()
        if kind == "table":
            columns = frozenset(
                r[1] for r in conn.execute("select * from pragma_table_info(?)", [name])
            )
        found[name] = (kind, columns)
    return found


def compare(conn: sqlite3.Connection, names: list[str], label: str) -> list[Extra]:
    """Compare the schema on ``conn`` with what the migrations ``names`` make.

    Returns:
        The objects no migration made (to be named, and dropped on restore).

    Raises:
        SchemaError: an object of ours is missing or of another kind, or a table of ours
            lacks a column the migrations give it.
    """
    want = expected(tuple(names))
    have = _objects(conn)
    for name, (kind, columns) in want.items():
        if name not in have:
            if names:  # 0.1.0 made its tables piecemeal: some may never have been made
                raise SchemaError(f"{label}: has no {kind} {name}, which the migrations make")
            continue
        their_kind, their_columns = have[name]
        if their_kind != kind:
            raise SchemaError(
                f"{label}: {name} is a {their_kind} where the migrations make a {kind}; "
                "this is not a database KoED Studio wrote"
            )
        missing = sorted(columns - their_columns)
        if missing:
            raise SchemaError(f"{label}: table {name} lacks the column(s) {', '.join(missing)}")
    return [Extra(kind, name) for name, (kind, _) in sorted(have.items()) if name not in want]


def drop(conn: sqlite3.Connection, extras: list[Extra]) -> None:
    """Drop what no migration made (triggers and views first: they may name tables)."""
    order = {"trigger": 0, "view": 1, "index": 2, "table": 3}
    with conn:
        for extra in sorted(extras, key=lambda e: order.get(e.kind, 4)):
            if extra.kind in order:
                quoted = extra.name.replace('"', '""')
                conn.execute(f'drop {extra.kind} if exists "{quoted}"')
