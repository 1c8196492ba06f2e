"""Backups of the database while a study runs, and putting one back.

A copy of the file itself can catch a write half done (and leaves the WAL behind); SQLite's
online backup API copies a consistent snapshot while the app keeps writing. A backup is
owner-only from its first byte (it holds ratings and pseudonyms), written beside its name
and renamed into place once checked, so a kill or a full disk never leaves a half backup
under the final name. A restore checks the file first and never overwrites a database
without being told to.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from koed_core.db.migrations import MIGRATIONS, TABLE
from koed_core.errors import KoedError

HEADER = b"SQLite format 3\x00"
BACKUP_PREFIX = "koed-"
BACKUP_SUFFIX = ".db"


class BackupError(KoedError):
    """A backup or restore that cannot be done, with the reason and the file."""


@dataclass(frozen=True)
class BackupInfo:
    """What a backup (or a checked file) holds."""

    path: Path
    bytes: int
    migrations: int
    ratings: int
    seconds: float


def backup(db_path: Path, out: Path) -> BackupInfo:
    """Copy ``db_path`` to ``out`` with SQLite's online backup, consistent while others
    write; ``out`` is owner-only and must not exist.

    Raises:
        BackupError: no such database, ``out`` exists, or the copy failed its check.
    """
    if not db_path.is_file():
        raise BackupError(f"{db_path}: no database to back up")
    if out.exists():
        raise BackupError(f"{out}: already exists; give a new name (a backup never overwrites)")
    start = time.perf_counter()
    part = out.with_name(out.name + ".part")
    part.unlink(missing_ok=True)
    os.close(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        source = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
        target = sqlite3.connect(part)
        try:
            with target:
                source.backup(target)  # all pages in one step: one consistent snapshot
            # a file that stands alone: no -wal or -shm beside it, whatever the source had
            target.execute("pragma journal_mode=delete")
        finally:
            source.close()
            target.close()
        info = check_file(part)
        with open(part, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(part, out)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return BackupInfo(out, info.bytes, info.migrations, info.ratings, time.perf_counter() - start)


def check_file(path: Path) -> BackupInfo:
    """Whether ``path`` is a whole KoED Studio database this release can open.

    Raises:
        BackupError: not SQLite, damaged, not ours, or made by a newer release.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(HEADER))
    except OSError as err:
        raise BackupError(f"{path}: cannot be read ({err.strerror})") from None
    if head != HEADER:
        raise BackupError(f"{path}: not an SQLite database")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            verdict = conn.execute("pragma integrity_check").fetchone()[0]
            if verdict != "ok":
                raise BackupError(f"{path}: the database is damaged ({verdict})")
            tables = {r[0] for r in conn.execute("select name from sqlite_master")}
            if TABLE in tables:
                names = [r[0] for r in conn.execute(f"select name from [{TABLE}] order by rowid")]
            elif {"runs", "responses"} <= tables:
                names = []  # a 0.1.0 database: before numbered migrations
            else:
                raise BackupError(f"{path}: not a KoED Studio database (no runs, no {TABLE})")
            ratings = (
                conn.execute("select count(*) from ratings").fetchone()[0]
                if "ratings" in tables
                else 0
            )
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        raise BackupError(f"{path}: not a usable SQLite database ({err})") from None
    known = {name for name, _ in MIGRATIONS}
    newer = [n for n in names if n not in known]
    if newer:
        raise BackupError(
            f"{path}: made by a newer KoED Studio (migration {newer[-1]}); upgrade first"
        )
    return BackupInfo(path, path.stat().st_size, len(names), int(ratings), 0.0)


def restore(source: Path, db_path: Path, force: bool = False) -> BackupInfo:
    """Put the checked backup ``source`` in place of ``db_path``.

    Raises:
        BackupError: the backup fails its check, or ``db_path`` exists and ``force`` is
            not given (it may be a live database: stop the app first).
    """
    info = check_file(source)
    if db_path.exists() and not force:
        raise BackupError(
            f"{db_path}: a database is already there and may be in use; stop the app and "
            "the worker, then restore with --force"
        )
    db_path.parent.mkdir(parents=True, exist_ok=True)
    if not db_path.exists():
        os.close(os.open(db_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    start = time.perf_counter()
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    target = sqlite3.connect(db_path, timeout=30)
    try:
        reader.backup(target)  # through SQLite's locks and WAL, never a raw file copy
    finally:
        reader.close()
        target.close()
    return BackupInfo(
        db_path, info.bytes, info.migrations, info.ratings, time.perf_counter() - start
    )


def stamped_name(when: datetime | None = None) -> str:
    """A backup's file name from its time (UTC), so names sort as times do."""
    moment = when or datetime.now(UTC)
    return f"{BACKUP_PREFIX}{moment:%Y%m%d-%H%M%S}{BACKUP_SUFFIX}"


def rotate(folder: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` backups in ``folder``; returns those deleted."""
    ours = sorted(
        p
        for p in folder.glob(f"{BACKUP_PREFIX}*{BACKUP_SUFFIX}")
        if p.is_file() and not p.name.endswith(".part")
    )
    gone = ours[: max(0, len(ours) - keep)]
    for path in gone:
        path.unlink(missing_ok=True)
    return gone
