"""``koed db backup`` and ``koed db restore``: the database backed up while the app
writes, and put back (:mod:`koed_core.db.backup` does the work)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from koed_core.cli import serve_flags as flags
from koed_core.cli.common import positive_int
from koed_core.config import Settings
from koed_core.errors import KoedError
from koed_core.private_files import private_dir


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed db backup | db restore"""
    db = groups.add_parser("db", help="back the database up while the app runs, or restore it")
    commands = db.add_subparsers(dest="command", required=True)
    backup = commands.add_parser("backup", help="a consistent copy, taken while the app writes")
    backup.add_argument("out", nargs="?", type=Path, help="the backup file (must not exist)")
    backup.add_argument("--db", type=Path)
    backup.add_argument("--every", type=float, help="minutes: keep taking backups into --dir")
    backup.add_argument("--dir", type=Path, help="folder of timed backups (with --every)")
    backup.add_argument("--keep", type=positive_int, default=24, help="timed backups kept")
    backup.set_defaults(func=cmd_backup)
    restore = commands.add_parser("restore", help="put a checked backup in place")
    restore.add_argument("file", type=Path)
    restore.add_argument("--db", type=Path)
    restore.add_argument(
        "--force", action="store_true", help="replace an existing database (stop the app first)"
    )
    restore.set_defaults(func=cmd_restore)


def _key_said(settings: Settings, carried: Path | None) -> str:
    if settings.secret_key:
        return "the server key comes from KOED_SECRET_KEY: keep it with the backups"
    if carried is None:
        return "no server key file beside the database yet"
    return f"the server key copied to {carried.name} (owner-only)"


def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    """One backup to OUT, or (``--every``) one every N minutes into ``--dir``."""
    from koed_core.db.backup import backup, rotate, stamped_name
    from koed_core.rating.server_key import key_file

    db = args.db or settings.db_path
    key = None if settings.secret_key else key_file(db)
    if args.every is None:
        if args.out is None:
            raise KoedError("koed db backup: give the backup file OUT (or --every and --dir)")
        info = backup(db, args.out, key)
        print(
            f"backed up {db} to {info.path}: {info.bytes:,} bytes, {info.ratings} ratings, "
            f"{info.migrations} migrations, {info.seconds:.2f} s; {_key_said(settings, info.key)}"
            + _extras_said(info.extras, "a restore drops them")
        )
        return 0
    every = flags.minutes("--every", args.every)
    if args.dir is None:
        raise KoedError("--every: give --dir FOLDER for the backups")
    folder = private_dir(flags.path("--dir", args.dir), "--dir")
    while True:  # under supervisord: stopped by SIGTERM
        info = backup(db, folder / stamped_name(), key)
        gone = rotate(folder, args.keep)
        print(
            f"backup {info.path.name}: {info.ratings} ratings, {info.seconds:.2f} s"
            + (f"; removed {len(gone)} older" if gone else ""),
            flush=True,
        )
        time.sleep(every * 60)


def _extras_said(extras: tuple[object, ...], what: str) -> str:
    if not extras:
        return ""
    return (
        f"; it holds {len(extras)} object(s) no migration made ({', '.join(map(str, extras))}): "
        f"{what}"
    )


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    """Check FILE, then put it in place of the database (``--force`` over an existing one)."""
    from koed_core.db import Store
    from koed_core.db.backup import key_beside, restore
    from koed_core.rating.server_key import key_file

    db = args.db or settings.db_path
    key = key_file(db)
    had_key = key.is_file()
    info = restore(args.file, db, force=args.force, key=key)
    Store(db)  # an older backup is brought up to this release's migrations
    print(
        f"restored {args.file} to {db}: {info.ratings} ratings, {info.migrations} migrations "
        f"in the backup, {info.seconds:.2f} s; migrations brought up to date"
        + _extras_said(info.extras, "dropped")
    )
    if info.key is not None:
        print(f"the server key from {key_beside(args.file).name} is in place: {key}")
    elif settings.secret_key:
        print(
            "the server key comes from KOED_SECRET_KEY: it must be the one the backup was made with"
        )
    elif had_key:
        print(
            f"warning: no key beside the backup ({key_beside(args.file).name}); the key already "
            f"at {key} is kept: invite links and pseudonyms made with another key will not verify"
        )
    else:
        print(
            f"warning: no key beside the backup ({key_beside(args.file).name}): invite links "
            "already sent will not open and exports will name raters differently unless you "
            f"put the old key at {key} (or set KOED_SECRET_KEY to it) before starting the app; "
            "otherwise a new key is made at the first start"
        )
    return 0
