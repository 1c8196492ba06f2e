"""The project database: one SQLite file, opened checked and migrated; the connection only.

WAL mode and a busy timeout let the app's sessions, the CLI and a background run share
the file. Opening checks the file (``PRAGMA quick_check``) before anything writes to it,
so a corrupt database is reported and left as it is, and applies pending migrations.
Each table's queries live in a class of their own beside this module (``Runs``,
``Judgments``, ``Ratings``, ``Annotations``, ``Jobs``, ``ModelCalls``...), each built on
a ``Store``; no SQL lives anywhere else in koed_core.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from koed_core.db import migrations
from koed_core.errors import KoedError

BUSY_TIMEOUT_S = 30.0
log = logging.getLogger(__name__)


class StoreError(KoedError):
    """The database cannot be used: corrupt, not a database, or made by a newer release."""


class StoreUnavailable(StoreError, sqlite3.OperationalError):
    """A write the database could not take now: another process held its lock past the
    busy timeout, or the disk is full. Still an ``sqlite3.OperationalError`` (the
    worker waits and tries again on those); as a KoedError, a page or the command line
    shows its one sentence instead of a traceback."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind
        """``busy`` (worth waiting for) or ``full``."""


def unavailable(err: sqlite3.OperationalError, name: str) -> sqlite3.OperationalError:
    """``err`` as a sentence a user can act on, when it is a lock or a full disk."""
    text = str(err)
    if "locked" in text or "busy" in text:
        return StoreUnavailable(
            f"{name}: the database is busy (another process has held it for over "
            f"{BUSY_TIMEOUT_S:.0f} s); nothing was saved from this step: try again in a moment",
            "busy",
        )
    if "full" in text:
        return StoreUnavailable(
            f"{name}: the disk is full, so the database could not store this; nothing was "
            "saved from this step: free some space and try again",
            "full",
        )
    return err


def _create_private(path: Path) -> None:
    """Create an empty file readable by its owner only (rater profiles and comments)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


def tighten(path: Path) -> list[str]:
    """Make the database and its WAL files owner-only, as the app creates them.

    A database from an earlier release (0.1.0 made it 0644) holds rater profiles and
    comments; opening it here closes it to other users of the machine. Returns a
    sentence per file changed, said once: the next open finds nothing to change.
    """
    changed = []
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            mode = file.stat().st_mode & 0o777
            if mode & 0o077:
                file.chmod(0o600)
                changed.append(f"{file.name}: permissions {mode:o} -> 600 (owner only)")
        except OSError:
            continue  # absent, or not ours to change: sqlite says so if it matters
    for line in changed:
        log.warning("KoED Studio: %s", line)
    return changed


class Store:
    """The project's database; one instance may be shared by threads (writes are locked)."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self.name = Path(self.path).name
        """The file's name without its folder: what messages a visitor may see carry."""
        self.tightened: list[str] = []
        memory = self.path == ":memory:"
        if not memory:
            if Path(self.path).is_dir():
                raise StoreError(f"{self.name} (KOED_DB): is a folder, not a database file")
            _create_private(Path(self.path))
            self.tightened = tighten(Path(self.path))
        try:
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._check(conn)
        except sqlite3.DatabaseError as err:
            raise StoreError(
                f"{self.name} (KOED_DB): not a usable SQLite database ({err})"
            ) from None
        self.db = sqlite_utils.Database(conn)
        if not memory:
            self.db.enable_wal()
            # Safe with WAL: a crash of the app loses nothing committed; saves an fsync a write.
            conn.execute("PRAGMA synchronous = NORMAL")
        self._lock = threading.RLock()
        self._migrate()

    def _check(self, conn: sqlite3.Connection) -> None:
        rows = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        if rows != ["ok"]:
            shown = "; ".join(str(r) for r in rows[:3])
            raise StoreError(
                f"{self.name} (KOED_DB): the database is damaged ({shown}). It was left untouched: "
                "restore a backup or point KOED_DB at another file."
            )

    def _migrate(self) -> None:
        with self.write():
            newer = migrations.unknown(self.db)
            if newer:
                raise StoreError(
                    f"{self.name} (KOED_DB): made by a newer KoED Studio (migration {newer[-1]}); "
                    "upgrade KoED Studio to open it"
                )
            for name, migrate in migrations.pending(self.db):
                migrate(self.db)
                migrations.record(self.db, name)

    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction. BEGIN IMMEDIATE takes the write lock up front, so a second
        writer (another session, process or thread) waits for the busy timeout instead of
        failing with "database is locked" when a read lock cannot be upgraded."""
        with self._lock:
            if self.db.conn.in_transaction:  # nested: the outer transaction decides
                yield
                return
            try:
                self.db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as err:
                raise unavailable(err, self.name) from None
            try:
                yield
                self.db.execute("COMMIT")
            except sqlite3.OperationalError as err:
                if self.db.conn.in_transaction:
                    self.db.conn.rollback()
                raise unavailable(err, self.name) from None
            except BaseException:
                if self.db.conn.in_transaction:
                    self.db.conn.rollback()
                raise

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        """Rows of a read query as dicts (for this package's query modules).

        Reads take the same lock as writes: sqlite-utils wraps each query in a savepoint,
        which on a connection shared by threads would otherwise open (and commit) a
        transaction in the middle of another thread's write.
        """
        with self._lock:
            return [dict(r) for r in self.db.query(sql, params)]

    def frame(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> pd.DataFrame:
        """A read query as a DataFrame (for this package's query modules)."""
        return pd.DataFrame(self.rows(sql, params))

    def stamp(self) -> int:
        """A number that moves whenever a run, answer, judgment, study or rating changes
        (by any process): the key under which pages may keep what they computed."""
        return int(self.rows("select n from _koed_changes")[0]["n"])

    # Runs and responses ----------------------------------------------------------------

    def count(self, table: str) -> int:
        """Rows in a table (for checks and tests)."""
        with self._lock:
            if table not in self.db.table_names():
                raise StoreError(f"no table {table!r}")
            return int(self.db.execute(f"select count(*) from [{table}]").fetchone()[0])

    def journal_mode(self) -> str:
        """The database's journal mode (``wal`` once opened here)."""
        return str(self.db.execute("pragma journal_mode").fetchone()[0])

    def close(self) -> None:
        """Close the connection (a process that hands the file to others, as `koed serve`
        does after migrating it, holds no handle of its own)."""
        with self._lock:
            self.db.conn.close()
