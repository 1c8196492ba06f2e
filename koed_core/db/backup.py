"""Backups of the database while a study runs, and putting one back.

A copy of the file itself can catch a write half done (and leaves the WAL behind); SQLite's
online backup API copies a consistent snapshot while the app keeps writing. A backup is
owner-only from its first byte (it holds ratings and pseudonyms), written beside its name
and renamed into place once checked, so a kill or a full disk never leaves a half backup
under the final name. A restore checks the file first and never overwrites a database
without being told to.

The server key (invite links, pseudonyms) is not in the database; a backup carries a copy
beside it, ``<backup>.key``, owner-only, and a restore puts it back beside the database,
or says what breaks without it. Timed backups are rotated by the time in their names,
and only files this module wrote (the name's time agrees with the file's own) are ever
deleted.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from koed_core.db.migrations import MIGRATIONS, TABLE
from koed_core.db.schema_check import Extra, SchemaError, compare, deadline, drop
from koed_core.errors import KoedError
from koed_core.private_files import write_private

HEADER = b"SQLite format 3\x00"
BACKUP_PREFIX = "koed-"
BACKUP_SUFFIX = ".db"
KEY_SUFFIX = ".key"
STAMPED = re.compile(r"^koed-(\d{8}-\d{6})\.db$")
STAMP_SLACK = timedelta(hours=1)
"""How far a timed backup's file time may be from the time in its name (a backup is
renamed into place seconds after its name is chosen)."""


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
    extras: tuple[Extra, ...] = ()
    """Triggers, views, tables and indexes no migration made (dropped by a restore)."""
    key: Path | None = None
    """The server key carried beside the backup, or put back beside the database."""


def key_beside(backup_file: Path) -> Path:
    """Where a backup's copy of the server key is kept."""
    return backup_file.with_name(backup_file.name + KEY_SUFFIX)


def backup(db_path: Path, out: Path, key: Path | None = None) -> BackupInfo:
    """Copy ``db_path`` to ``out`` with SQLite's online backup, consistent while others
    write; ``out`` is owner-only and must not exist. ``key``, the server key file, if
    there is one, is copied beside it (owner-only) first.

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
        kept = None
        if key is not None and key.is_file():
            kept = write_private(key_beside(out), key.read_bytes())
        os.replace(part, out)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    took = time.perf_counter() - start
    return BackupInfo(out, info.bytes, info.migrations, info.ratings, took, info.extras, kept)


def check_file(path: Path) -> BackupInfo:
    """Whether ``path`` is a whole KoED Studio database this release can open, holding
    what the migrations make (anything else is listed in ``extras``), checked within
    :data:`~koed_core.db.schema_check.CHECK_LIMIT_S`.

    Raises:
        BackupError: not SQLite, damaged, not ours, made by a newer release, a table of
            ours replaced or changed, or a check that ran out of time.
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
            with deadline(conn):
                names, extras, ratings = _inspect(conn, path)
        finally:
            conn.close()
    except sqlite3.DatabaseError as err:
        raise BackupError(f"{path}: not a usable SQLite database ({err})") from None
    except SchemaError as err:
        raise BackupError(str(err)) from None
    return BackupInfo(path, path.stat().st_size, len(names), ratings, 0.0, tuple(extras))


def _inspect(conn: sqlite3.Connection, path: Path) -> tuple[list[str], list[Extra], int]:
    """The file's migrations, what no migration made, and its ratings (counted only once
    ``ratings`` is known to be our table)."""
    verdict = conn.execute("pragma integrity_check").fetchone()[0]
    if verdict != "ok":
        raise BackupError(f"{path}: the database is damaged ({verdict})")
    tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
    if TABLE in tables:
        names = [r[0] for r in conn.execute(f"select name from [{TABLE}] order by rowid")]
    elif {"runs", "responses"} <= tables:
        names = []  # a 0.1.0 database: before numbered migrations
    else:
        raise BackupError(f"{path}: not a KoED Studio database (no runs, no {TABLE})")
    known = {name for name, _ in MIGRATIONS}
    newer = [n for n in names if n not in known]
    if newer:
        raise BackupError(
            f"{path}: made by a newer KoED Studio (migration {newer[-1]}); upgrade first"
        )
    extras = compare(conn, names, str(path))
    ratings = (
        conn.execute("select count(*) from ratings").fetchone()[0] if "ratings" in tables else 0
    )
    return names, extras, int(ratings)


def restore(
    source: Path, db_path: Path, force: bool = False, key: Path | None = None
) -> BackupInfo:
    """Put the checked backup ``source`` in place of ``db_path``, without the objects no
    migration made (dropped before anything opens it, and listed in ``extras``). The
    server key beside the backup goes to ``key`` (an existing different key there is
    kept as ``<key>.before-restore``).

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
        with deadline(target):
            drop(target, list(info.extras))
    except SchemaError as err:
        raise BackupError(str(err)) from None
    finally:
        reader.close()
        target.close()
    placed = _place_key(key_beside(source), key) if key is not None else None
    took = time.perf_counter() - start
    return BackupInfo(db_path, info.bytes, info.migrations, info.ratings, took, info.extras, placed)


def _place_key(carried: Path, key: Path) -> Path | None:
    if not carried.is_file():
        return None
    new = carried.read_bytes()
    if key.is_file() and key.read_bytes() != new:
        shutil.copy2(key, key.with_name(key.name + ".before-restore"))
    return write_private(key, new)


def stamped_name(when: datetime | None = None) -> str:
    """A backup's file name from its time (UTC), so names sort as times do."""
    moment = when or datetime.now(UTC)
    return f"{BACKUP_PREFIX}{moment:%Y%m%d-%H%M%S}{BACKUP_SUFFIX}"


def _written_at(path: Path, now: datetime) -> datetime | None:
    """The time in a timed backup's name, if this module wrote the file: the name parses,
    the time is not in the future, the file's own time agrees with it, and it is a
    regular SQLite file (not a link)."""
    found = STAMPED.match(path.name)
    if not found:
        return None
    try:
        stamp = datetime.strptime(found.group(1), "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
        info = path.lstat()
    except (ValueError, OSError):
        return None
    modified = datetime.fromtimestamp(info.st_mtime, UTC)
    if stamp > now + STAMP_SLACK or abs(modified - stamp) > STAMP_SLACK:
        return None
    if not path.is_file() or path.is_symlink():
        return None
    with open(path, "rb") as handle:
        return stamp if handle.read(len(HEADER)) == HEADER else None


def rotate(folder: Path, keep: int, now: datetime | None = None) -> list[Path]:
    """Delete all but the newest ``keep`` timed backups in ``folder`` (and their keys);
    returns those deleted. A file this module did not write is never counted or deleted.
    """
    moment = now or datetime.now(UTC)
    ours = sorted(
        (stamp, path)
        for path in folder.iterdir()
        if (stamp := _written_at(path, moment)) is not None
    )
    gone = [path for _, path in ours[: max(0, len(ours) - keep)]]
    for path in gone:
        path.unlink(missing_ok=True)
        key_beside(path).unlink(missing_ok=True)
    return gone
