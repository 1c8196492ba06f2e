"""``koed serve``: the app as a crowd study needs it.

``koed serve`` checks every flag, takes the stack's locks, migrates the database once,
writes Caddy's JSON configuration and a supervisord configuration
(:mod:`koed_core.cli.serving`), and runs supervisord in the foreground: N Streamlit
processes behind Caddy, the job worker as its own process, and backups every few
minutes. Ctrl+C, SIGTERM or SIGHUP (a closed SSH session) stops everything it started;
supervisord also gets SIGTERM if ``koed serve`` itself is killed, so nothing it started
outlives it. What Caddy and supervisord report goes to its output as sentences
(:mod:`koed_core.cli.serve_watch`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from types import FrameType

from koed_core.cli import serve_flags as flags
from koed_core.cli.common import positive_int
from koed_core.cli.serve_lock import LOCK_NAME, Holder, check_port, db_lock_path, take
from koed_core.cli.serve_watch import LogTail, Said, caddy_said, has_certificate, supervisord_said
from koed_core.cli.serving import HEALTH_PATH, ServePlan, caddy_json, free_ports, supervisord_conf
from koed_core.config import Settings
from koed_core.errors import KoedError
from koed_core.private_files import private_dir, write_private

READY_WAIT_S = 180.0
REPEAT_S = 10.0
"""The same sentence from Caddy (a certificate still missing) is said again after this."""


def register(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """koed serve"""
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
    serve.add_argument(
        "--tls",
        choices=["acme", "internal"],
        default="acme",
        help="a domain's certificate: acme (Let's Encrypt/ZeroSSL, default) or internal "
        "(Caddy's local CA: offline staging and tests)",
    )
    serve.add_argument("--db", type=Path, help="SQLite file (default: KOED_DB or data/koed.db)")
    serve.add_argument(
        "--backup-every", type=float, default=15.0, help="minutes between backups (0: none)"
    )
    serve.add_argument("--backup-dir", type=Path, help="default: backups/ beside the database")
    serve.add_argument("--keep", type=positive_int, default=24, help="backups kept (default 24)")
    serve.add_argument("--run-dir", type=Path, help="configuration and logs (default <db>.serve)")
    serve.add_argument(
        "--print-unit",
        action="store_true",
        help="print a systemd unit running this koed serve (keys in <db>.env, made once)",
    )
    serve.set_defaults(func=cmd_serve)


def _cookie_secret(settings: Settings, db: Path) -> str:
    """One secret for Streamlit's XSRF and session cookies in every app process, derived
    from the server key (a process's own random one would refuse an upload sent to
    another process)."""
    from koed_core.rating.server_key import server_key

    key = server_key(settings.secret_key, db)
    return hmac.new(key, b"streamlit-cookie-secret", hashlib.sha256).hexdigest()


def _plan(args: argparse.Namespace, settings: Settings, caddy: str) -> ServePlan:
    """Every flag checked (one sentence naming the flag if not), before a file is written."""
    domain = flags.hostname(args.domain) if args.domain is not None else None
    if args.email is not None and domain is None:
        raise KoedError("--email is for --domain (Let's Encrypt writes there about certificates)")
    if args.tls != "acme" and domain is None:
        raise KoedError("--tls internal is for --domain (a certificate from Caddy's local CA)")
    db = flags.path("--db", args.db or settings.db_path)
    every = flags.minutes("--backup-every", args.backup_every, zero=True)
    backup_dir = flags.path("--backup-dir", args.backup_dir or db.parent / "backups")
    plan = ServePlan(
        db=db,
        run_dir=flags.path("--run-dir", args.run_dir or db.with_name(db.name + ".serve")),
        app_ports=free_ports(args.processes),
        port=443 if domain else flags.port(args.port),
        host=flags.host(args.host),
        domain=domain,
        email=flags.email(args.email) if args.email is not None else None,
        caddy=flags.path("caddy", Path(caddy)).as_posix(),
        backup_dir=backup_dir if every else None,
        backup_every_min=every or None,
        backup_keep=args.keep,
        hooks_port=free_ports(1)[0] if domain else None,
        tls=args.tls,
    )
    supervisord_conf(plan, password="checked")  # a path it cannot hold: refused now
    return plan


def _say(text: str) -> None:
    """Print, unless the terminal is gone (after SIGHUP a print would raise)."""
    with contextlib.suppress(OSError, ValueError):
        print(text, flush=True)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Start everything under supervisord and wait; Ctrl+C / SIGTERM / SIGHUP stops it all."""
    from koed_core.db import Store
    from koed_core.rating.crowd.address import record_domain

    caddy = shutil.which("caddy")
    if caddy is None:
        raise KoedError(
            "Caddy is not installed: `apt-get install caddy` (Debian's package); see docs/deploy.md"
        )
    plan = _plan(args, settings, caddy)
    if args.print_unit:
        return _print_unit(plan, args)
    holder = Holder(os.getpid(), plan.public_url, str(plan.db), str(plan.run_dir))
    plan.db.parent.mkdir(parents=True, exist_ok=True)
    locks = take([db_lock_path(plan.db)], holder)
    private_dir(plan.run_dir, "--run-dir")
    locks += take([plan.run_dir / LOCK_NAME], holder)
    for host, port in [("", 443), ("", 80)] if plan.domain else [(plan.host, plan.port)]:
        check_port(host, port)
    for sub in ("logs", "caddy"):
        private_dir(plan.run_dir / sub)
    if plan.backup_dir:
        private_dir(plan.backup_dir, "--backup-dir")
    store = Store(plan.db)  # migrations run here, once, before any app process starts
    if plan.domain:  # the address `koed invite create` and the Studies page read
        record_domain(store, plan.domain)
    applied = store.journal_mode()
    store.close()
    _write_configuration(plan)
    env = {
        **os.environ,
        "KOED_DB": str(plan.db),
        "KOED_PUBLIC_URL": plan.public_url,
        "STREAMLIT_SERVER_COOKIE_SECRET": _cookie_secret(settings, plan.db),
        "STREAMLIT_SERVER_HEADLESS": "true",
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        "PYTHONUNBUFFERED": "1",
    }
    _say(
        f"serving {plan.db} ({applied} journal; migrations done) with {args.processes} app "
        f"process(es) on {', '.join(map(str, plan.app_ports))}, the worker"
        + (
            f", backups every {plan.backup_every_min:g} min into {plan.backup_dir}"
            if plan.backup_every_min
            else ""
        )
        + f"; configuration and logs in {plan.run_dir}"
    )
    if plan.domain:  # in the background: subscribing does not wait for the certificate
        threading.Thread(target=_subscribe, args=(plan, env), daemon=True).start()
    return _run(plan, env, locks)


def _subscribe(plan: ServePlan, env: dict[str, str]) -> None:
    """Subscribe Prolific's events to this domain, when a token and workspace are set;
    otherwise (or if Prolific refuses) say so: the minute-by-minute sync still runs."""
    from koed_core.db import Store
    from koed_core.rating.crowd.prolific_client import TOKEN_ENV, WORKSPACE_ENV, ProlificClient
    from koed_core.rating.crowd.prolific_hooks import HOOK_PATH, subscribe

    if not env.get(TOKEN_ENV) or not env.get(WORKSPACE_ENV):
        _say(
            "Prolific events: no PROLIFIC_API_TOKEN and PROLIFIC_WORKSPACE_ID, so no "
            "subscription; returns are read by the minute-by-minute sync"
        )
        return
    try:
        client = ProlificClient.from_env(env, Store(plan.db))
        for line in subscribe(client, f"https://{plan.domain}{HOOK_PATH}"):
            _say(f"Prolific events: {line}")
    except KoedError as err:
        _say(f"Prolific events: not subscribed ({err}); the minute-by-minute sync still runs")


def _print_unit(plan: ServePlan, args: argparse.Namespace) -> int:
    """The unit on stdout; the keys file made once (said on stderr)."""
    from koed_core.cli.serve_unit import ensure_env_file, env_file, unit

    env = env_file(plan.db)
    plan.db.parent.mkdir(parents=True, exist_ok=True)
    if ensure_env_file(env):
        print(f"made {env} (owner-only) with a new KOED_COOKIE_KEY", file=sys.stderr)
    given = ["--processes", str(args.processes), "--db", str(plan.db)]
    given += ["--run-dir", str(plan.run_dir), "--keep", str(plan.backup_keep)]
    if plan.domain:
        given += ["--domain", plan.domain] + (["--email", plan.email] if plan.email else [])
        given += ["--tls", plan.tls] if plan.tls != "acme" else []
    else:
        given += ["--host", plan.host, "--port", str(plan.port)]
    given += ["--backup-every", f"{plan.backup_every_min or 0:g}"]
    if plan.backup_dir:
        given += ["--backup-dir", str(plan.backup_dir)]
    print(unit(given, env), end="")
    return 0


def _write_configuration(plan: ServePlan) -> None:
    """Caddy's JSON (checked by Caddy itself) and supervisord's file, owner-only."""
    write_private(plan.run_dir / "caddy.json", caddy_json(plan))
    checked = subprocess.run(  # noqa: S603 - the Caddy found on PATH, our own file
        [plan.caddy, "validate", "--config", str(plan.run_dir / "caddy.json")],
        capture_output=True,
        text=True,
    )
    if checked.returncode != 0:
        said = (checked.stderr or checked.stdout).strip().splitlines()
        raise KoedError(f"Caddy refused the configuration: {said[-1] if said else '?'}")
    conf = supervisord_conf(plan, password=secrets.token_hex(16))
    write_private(plan.run_dir / "supervisord.conf", conf)


def _die_with_parent() -> None:
    """In supervisord's process before it starts: SIGTERM when koed serve ends, however
    it ends (Linux's parent-death signal), so a kill -9 leaves no stack behind."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _run(plan: ServePlan, env: dict[str, str], locks: list[int]) -> int:
    conf = plan.run_dir / "supervisord.conf"
    watch = _Watch(plan)
    supervisor = subprocess.Popen(  # noqa: S603 - our interpreter, our configuration
        [sys.executable, "-m", "supervisor.supervisord", "-c", str(conf)],
        env=env,
        start_new_session=True,  # Ctrl+C reaches us, and we stop it in order
        pass_fds=locks,  # the locks last as long as supervisord
        preexec_fn=_die_with_parent,  # noqa: PLW1509 - before exec, no threads yet
    )
    for fd in locks:
        os.close(fd)
    stopping: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopping.append(signum)
        if supervisor.poll() is None:
            supervisor.send_signal(signal.SIGTERM)

    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, stop) for s in handled}
    fatal: Said | None = None
    try:
        fatal = _wait_ready(plan, supervisor, conf, stopping, watch)
        if fatal is None and not stopping and supervisor.poll() is None:
            _say(f"ready: {plan.public_url} (Ctrl+C stops everything)")
        while fatal is None and supervisor.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                supervisor.wait(timeout=0.5)
            watch.say()
    finally:
        if supervisor.poll() is None:
            supervisor.send_signal(signal.SIGTERM)
            supervisor.wait(timeout=60)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if fatal is not None:
        raise KoedError(f"{fatal.text}; every process koed serve started has ended")
    if stopping:
        _say("stopped: every process koed serve started has ended")
        return 0
    log = plan.run_dir / "logs" / "supervisord.log"
    raise KoedError(f"supervisord ended by itself (exit {supervisor.returncode}); see {log}")


class _Watch:
    """New lines of Caddy's and supervisord's logs, said once (again after REPEAT_S)."""

    def __init__(self, plan: ServePlan) -> None:
        self.plan = plan
        self.caddy = LogTail.from_end(plan.run_dir / "logs" / "caddy.log")
        self.supervisord = LogTail.from_end(plan.run_dir / "logs" / "supervisord.log")
        self.said: dict[str, float] = {}
        self.certificate: str | None = None  # Caddy's latest reason it has none

    def say(self) -> Said | None:
        """Print what is new; returns the first fatal finding, if any."""
        found = [caddy_said(line, self.plan) for line in self.caddy.new_lines()]
        found += [supervisord_said(line) for line in self.supervisord.new_lines()]
        fatal = None
        for said in found:
            if said is None:
                continue
            if said.text.startswith("no certificate"):
                self.certificate = said.text
            self._once(said.text)
            if said.fatal and fatal is None:
                fatal = said
        return fatal

    def _once(self, text: str) -> None:
        now = time.monotonic()
        if now - self.said.get(text, -REPEAT_S) >= REPEAT_S:
            self.said[text] = now
            _say(text)

    def remind(self) -> None:
        """While a domain has no certificate: Caddy's reason again every REPEAT_S (Caddy
        itself tries again only after a minute or more)."""
        if self.certificate:
            self._once(self.certificate)


def _wait_ready(
    plan: ServePlan,
    supervisor: subprocess.Popen[bytes],
    conf: Path,
    stopping: list[int],
    watch: _Watch,
) -> Said | None:
    """Wait until every app process and the proxy (for a domain, every app process and
    the certificate) are there, and supervisord holds every program RUNNING (past its
    start time: a process that dies at once is not counted as started). Returns what
    Caddy or supervisord said that keeps the stack from serving, if anything."""
    urls = [f"http://127.0.0.1:{p}{HEALTH_PATH}" for p in plan.app_ports]  # every process
    if not plan.domain:
        urls.append(f"{plan.public_url}{HEALTH_PATH}")  # and the proxy in front of them
    deadline = time.monotonic() + READY_WAIT_S
    waiting_said = False
    while not stopping and supervisor.poll() is None:
        fatal = watch.say()
        if fatal is not None:
            return fatal
        if all(_healthy(url) for url in urls) and _all_running(conf):
            if has_certificate(plan):
                return None
            if not waiting_said:
                _say(f"every process runs; waiting for Caddy's certificate for {plan.domain}")
                waiting_said = True
            watch.remind()
        if deadline and time.monotonic() > deadline:
            _say(f"not ready after {READY_WAIT_S:.0f} s; still waiting: see {plan.run_dir}/logs")
            deadline = 0.0
        time.sleep(0.5)
    return None


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
