"""``koed serve`` and ``koed db``: the app as a crowd study needs it, and its backups.

``koed serve`` migrates the database once, writes a Caddyfile and a supervisord
configuration (:mod:`koed_core.cli.serving`), and runs supervisord in the foreground: N
Streamlit processes behind Caddy, the job worker as its own process, and backups every few
minutes. Ctrl+C or SIGTERM stops everything it started.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import FrameType

from koed_core.cli.common import positive_int
from koed_core.cli.serving import (
    HEALTH_PATH,
    ServePlan,
    caddyfile,
    free_ports,
    supervisord_conf,
)
from koed_core.config import Settings
from koed_core.errors import KoedError

READY_WAIT_S = 180.0


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed serve | db backup | db restore"""
    serve = groups.add_parser(
        "serve",
        help="serve the app for a study: N app processes behind Caddy, the worker, backups",
    )
    serve.add_argument(
        "--processes",
        type=positive_int,
        default=os.cpu_count() or 1,
        help="Streamlit processes (default: one per core)",
    )
    serve.add_argument("--port", type=positive_int, default=8080, help="HTTP port (default 8080)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on without --domain (default 127.0.0.1)",
    )
    serve.add_argument(
        "--domain", help="serve HTTPS on 443 for this host name, with Caddy's certificates"
    )
    serve.add_argument("--email", help="the address Let's Encrypt may write to (--domain)")
    serve.add_argument("--db", type=Path, help="SQLite file (default: KOED_DB or data/koed.db)")
    serve.add_argument(
        "--backup-every", type=float, default=15.0, help="minutes between backups (0: none)"
    )
    serve.add_argument("--backup-dir", type=Path, help="default: backups/ beside the database")
    serve.add_argument("--keep", type=positive_int, default=24, help="backups kept (default 24)")
    serve.add_argument("--run-dir", type=Path, help="configuration and logs (default <db>.serve)")
    serve.set_defaults(func=cmd_serve)

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


def _cookie_secret(settings: Settings, db: Path) -> str:
    """One secret for Streamlit's XSRF and session cookies in every app process, derived
    from the server key (a process's own random one would refuse an upload sent to
    another process)."""
    from koed_core.rating.server_key import server_key

    key = server_key(settings.secret_key, db)
    return hmac.new(key, b"streamlit-cookie-secret", hashlib.sha256).hexdigest()


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Start everything under supervisord and wait; Ctrl+C / SIGTERM stops it all."""
    from koed_core.db import Store
    from koed_core.rating.crowd.address import record_domain

    caddy = shutil.which("caddy")
    if caddy is None:
        raise KoedError(
            "Caddy is not installed: `apt-get install caddy` (Debian's package); see docs/deploy.md"
        )
    if args.backup_every < 0:
        raise KoedError("--backup-every: minutes, 0 or more")
    db = (args.db or settings.db_path).resolve()
    store = Store(db)  # migrations run here, once, before any app process starts
    if args.domain:  # the address `koed invite create` and the Studies page read
        record_domain(store, args.domain)
    applied = store.journal_mode()
    store.db.conn.close()
    run_dir = _private_dir((args.run_dir or db.with_name(db.name + ".serve")).resolve())
    _private_dir(run_dir / "logs")
    _private_dir(run_dir / "caddy")
    backup_dir = (args.backup_dir or db.parent / "backups").resolve()
    if args.backup_every:
        _private_dir(backup_dir)
    plan = ServePlan(
        db=db,
        run_dir=run_dir,
        app_ports=free_ports(args.processes),
        port=443 if args.domain else args.port,
        host=args.host,
        domain=args.domain,
        email=args.email,
        caddy=caddy,
        backup_dir=backup_dir if args.backup_every else None,
        backup_every_min=args.backup_every or None,
        backup_keep=args.keep,
    )
    _write_private(run_dir / "Caddyfile", caddyfile(plan))
    checked = subprocess.run(  # noqa: S603 - the Caddy found above, our own file
        [caddy, "validate", "--config", str(run_dir / "Caddyfile"), "--adapter", "caddyfile"],
        capture_output=True,
        text=True,
    )
    if checked.returncode != 0:
        said = (checked.stderr or checked.stdout).strip().splitlines()
        raise KoedError(f"Caddy refused the configuration: {said[-1] if said else '?'}")
    conf = run_dir / "supervisord.conf"
    _write_private(conf, supervisord_conf(plan))
    env = {
        **os.environ,
        "KOED_DB": str(db),
        "KOED_PUBLIC_URL": plan.public_url,
        "STREAMLIT_SERVER_COOKIE_SECRET": _cookie_secret(settings, db),
        "STREAMLIT_SERVER_HEADLESS": "true",
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        "PYTHONUNBUFFERED": "1",
    }
    print(
        f"serving {db} ({applied} journal; migrations done) with {args.processes} app "
        f"process(es) on {', '.join(map(str, plan.app_ports))}, the worker"
        + (
            f", backups every {args.backup_every:g} min into {backup_dir}"
            if args.backup_every
            else ""
        )
        + f"; configuration and logs in {run_dir}",
        flush=True,
    )
    supervisor = subprocess.Popen(  # noqa: S603 - our interpreter, our configuration
        [sys.executable, "-m", "supervisor.supervisord", "-c", str(conf)],
        env=env,
        start_new_session=True,  # Ctrl+C reaches us, and we stop it in order
    )
    stopping: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)
        if supervisor.poll() is None:
            supervisor.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if _wait_ready(plan, supervisor, conf, stopping):
            print(f"ready: {plan.public_url} (Ctrl+C stops everything)", flush=True)
        while supervisor.poll() is None:
            try:
                supervisor.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                continue
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if supervisor.poll() is None:
            supervisor.send_signal(signal.SIGTERM)
            supervisor.wait(timeout=60)
    if stopping:
        print("stopped: every process koed serve started has ended", flush=True)
        return 0
    log = run_dir / "logs" / "supervisord.log"
    raise KoedError(f"supervisord ended by itself (exit {supervisor.returncode}); see {log}")


def _wait_ready(
    plan: ServePlan, supervisor: subprocess.Popen[bytes], conf: Path, stopping: list[int]
) -> bool:
    """Wait until every app process and the proxy (for a domain, every app process)
    answer their health check, and supervisord holds every program RUNNING (past its
    start time: a process that dies at once is not counted as started)."""
    urls = [f"http://127.0.0.1:{p}{HEALTH_PATH}" for p in plan.app_ports]  # every process
    if not plan.domain:
        urls.append(f"{plan.public_url}{HEALTH_PATH}")  # and the proxy in front of them
    deadline = time.monotonic() + READY_WAIT_S
    while time.monotonic() < deadline and not stopping and supervisor.poll() is None:
        if all(_healthy(url) for url in urls) and _all_running(conf):
            return True
        time.sleep(0.5)
    if not stopping and supervisor.poll() is None:
        print(f"not ready after {READY_WAIT_S:.0f} s: see {plan.run_dir}/logs", flush=True)
    return False


def _all_running(conf: Path) -> bool:
    """Whether supervisord says every program it runs is RUNNING."""
    try:
        out = subprocess.run(  # noqa: S603 - our interpreter, our configuration
            [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), "status"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout
    except subprocess.TimeoutExpired:
        return False
    states = [line.split()[1] for line in out.splitlines() if len(line.split()) >= 2]
    return bool(states) and all(state == "RUNNING" for state in states)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:  # noqa: S310 - loopback only
            return bool(reply.status == 200)
    except OSError:
        return False


def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    """One backup to OUT, or (``--every``) one every N minutes into ``--dir``."""
    from koed_core.db.backup import backup, rotate, stamped_name

    db = args.db or settings.db_path
    if args.every is None:
        if args.out is None:
            raise KoedError("koed db backup: give the backup file OUT (or --every and --dir)")
        info = backup(db, args.out)
        print(
            f"backed up {db} to {info.path}: {info.bytes:,} bytes, {info.ratings} ratings, "
            f"{info.migrations} migrations, {info.seconds:.2f} s"
        )
        return 0
    if args.every <= 0 or args.dir is None:
        raise KoedError("--every: minutes above 0, with --dir FOLDER for the backups")
    folder = _private_dir(args.dir)
    while True:  # under supervisord: stopped by SIGTERM
        info = backup(db, folder / stamped_name())
        gone = rotate(folder, args.keep)
        print(
            f"backup {info.path.name}: {info.ratings} ratings, {info.seconds:.2f} s"
            + (f"; removed {len(gone)} older" if gone else ""),
            flush=True,
        )
        time.sleep(args.every * 60)


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    """Check FILE, then put it in place of the database (``--force`` over an existing one)."""
    from koed_core.db import Store
    from koed_core.db.backup import restore

    db = args.db or settings.db_path
    info = restore(args.file, db, force=args.force)
    Store(db)  # an older backup is brought up to this release's migrations
    print(
        f"restored {args.file} to {db}: {info.ratings} ratings, {info.migrations} migrations "
        f"in the backup, {info.seconds:.2f} s; migrations brought up to date"
    )
    return 0
