"""What ``koed serve`` writes for the tools that do the serving: a Caddyfile and a
supervisord configuration.

Serving is left to maintained tools: Caddy is the one entry point (WebSockets, a
cookie-sticky load balancer over the app processes, Streamlit's health endpoint as the
health check, automatic HTTPS for a domain), and supervisord starts the app processes, the
job worker, Caddy and the backups, restarting any that dies. This module only renders
their configuration; no secret is written into either file (the processes inherit them
from supervisord's environment).
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from koed_core.paths import PROJECT_ROOT

STICKY_COOKIE = "koed_route"
HEALTH_PATH = "/_stcore/health"


@dataclass(frozen=True)
class ServePlan:
    """Everything one ``koed serve`` starts."""

    db: Path
    run_dir: Path
    app_ports: tuple[int, ...]
    port: int
    host: str = "127.0.0.1"
    domain: str | None = None
    email: str | None = None
    caddy: str = "caddy"
    backup_dir: Path | None = None
    backup_every_min: float | None = None
    backup_keep: int = 24

    @property
    def public_url(self) -> str:
        """The address people open (crowd links are built on it)."""
        if self.domain:
            return f"https://{self.domain}"
        shown = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{shown}:{self.port}"


def free_ports(count: int, host: str = "127.0.0.1") -> tuple[int, ...]:
    """``count`` ports free on ``host`` now (the kernel's choice, held until all are
    chosen so none repeats)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind((host, 0))
            sockets.append(sock)
        return tuple(s.getsockname()[1] for s in sockets)
    finally:
        for sock in sockets:
            sock.close()


def caddyfile(plan: ServePlan) -> str:
    """The Caddyfile: one site, a reverse proxy over the app processes."""
    upstreams = " ".join(f"127.0.0.1:{p}" for p in plan.app_ports)
    options = ["\tadmin off", f"\tstorage file_system {plan.run_dir}/caddy"]
    if plan.domain:
        if plan.email:
            options.append(f"\temail {plan.email}")
        site = plan.domain
        bind = ""
    else:
        options.append("\tauto_https off")
        site = f"http://:{plan.port}"
        bind = f"\tbind {plan.host}\n"
    return (
        "{\n" + "\n".join(options) + "\n}\n\n"
        f"{site} {{\n"
        f"{bind}"
        "\tencode gzip\n"
        f"\treverse_proxy {upstreams} {{\n"
        # the same browser stays on the same process: Streamlit keeps a session's state
        # in one process's memory; when that process is down, another is chosen
        f"\t\tlb_policy cookie {STICKY_COOKIE}\n"
        "\t\tlb_try_duration 15s\n"
        "\t\tlb_try_interval 250ms\n"
        f"\t\thealth_uri {HEALTH_PATH}\n"
        "\t\thealth_interval 1s\n"
        "\t\thealth_timeout 2s\n"
        "\t\tfail_duration 10s\n"
        "\t\tflush_interval -1\n"
        "\t}\n"
        "}\n"
    )


def _program(name: str, command: list[str], plan: ServePlan, extra: str = "") -> str:
    line = " ".join(_quoted(part) for part in command)
    return (
        f"[program:{name}]\n"
        f"command={line}\n"
        f"directory={PROJECT_ROOT}\n"
        "autostart=true\n"
        "autorestart=true\n"
        "startsecs=2\n"
        "startretries=10\n"
        "stopsignal=TERM\n"
        "stopwaitsecs=15\n"
        "stopasgroup=true\n"
        "killasgroup=true\n"
        f"stdout_logfile={plan.run_dir}/logs/{name}.log\n"
        "redirect_stderr=true\n"
        "stdout_logfile_maxbytes=10MB\n"
        "stdout_logfile_backups=3\n"
        f"{extra}"
    )


def _quoted(part: str) -> str:
    """supervisord splits a command with shlex: quote what has spaces or quotes."""
    if part and not any(c in part for c in " \t\"'\\%"):
        return part
    return '"' + part.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + '"'


def supervisord_conf(plan: ServePlan) -> str:
    """supervisord's configuration: the app processes, the worker, Caddy, the backups."""
    python = sys.executable
    app = str(PROJECT_ROOT / "app.py")
    parts = [
        "[supervisord]\n"
        "nodaemon=true\n"
        f"logfile={plan.run_dir}/logs/supervisord.log\n"
        f"pidfile={plan.run_dir}/supervisord.pid\n"
        f"childlogdir={plan.run_dir}/logs\n"
        "loglevel=info\n",
        f"[unix_http_server]\nfile={plan.run_dir}/supervisor.sock\nchmod=0700\n",
        "[rpcinterface:supervisor]\n"
        "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n",
        f"[supervisorctl]\nserverurl=unix://{plan.run_dir}/supervisor.sock\n",
    ]
    for index, port in enumerate(plan.app_ports):
        command = [
            python, "-m", "streamlit", "run", app,
            f"--server.port={port}", "--server.address=127.0.0.1", "--server.headless=true",
        ]  # fmt: skip
        parts.append(_program(f"app-{index}", command, plan))
    worker = [python, "-m", "koed_core.cli", "worker", f"--db={plan.db}"]
    parts.append(_program("worker", worker, plan))
    caddy = [
        plan.caddy,
        "run",
        "--config",
        str(plan.run_dir / "Caddyfile"),
        "--adapter",
        "caddyfile",
    ]
    parts.append(_program("caddy", caddy, plan, "priority=900\n"))
    if plan.backup_every_min and plan.backup_dir:
        backups = [
            python, "-m", "koed_core.cli", "db", "backup", "--db", str(plan.db),
            "--every", str(plan.backup_every_min), "--dir", str(plan.backup_dir),
            "--keep", str(plan.backup_keep),
        ]  # fmt: skip
        parts.append(_program("backup", backups, plan))
    return "\n".join(parts)
