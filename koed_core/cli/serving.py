"""What ``koed serve`` writes for the tools that do the serving: Caddy's JSON configuration
and a supervisord configuration.

Serving is left to maintained tools: Caddy is the one entry point (WebSockets, a
cookie-sticky load balancer over the app processes, Streamlit's health endpoint as the
health check, automatic HTTPS for a domain), and supervisord starts the app processes, the
job worker, Caddy and the backups, restarting any that dies. This module only renders
their configuration; no secret is written into either file (the processes inherit them
from supervisord's environment).
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from koed_core.cli.serve_ini import (
    SupervisorIni,
    Written,
    command,
    here,
)
from koed_core.paths import PROJECT_ROOT

STICKY_COOKIE = "koed_route"
HOOK_PATH = "/prolific/hooks"
"""Where Prolific's signed events arrive (``prolific_hooks.HOOK_PATH``, said again here:
the serving layer imports nothing of the rating package)."""
HEALTH_PATH = "/_stcore/health"
STOP_GRACE_S = 2
"""Seconds Caddy and the app processes get to close their connections when stopped."""
_S = 1_000_000_000  # Caddy's JSON durations are nanoseconds


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
    hooks_port: int | None = None
    """The Prolific event receiver's port on 127.0.0.1 (with a domain only: Prolific
    delivers to a public https address)."""
    tls: str = "acme"
    """Where a domain's certificate comes from: "acme" (Let's Encrypt or ZeroSSL) or
    "internal" (Caddy's own local CA: the whole path offline, for staging and tests)."""

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


def caddy_config(plan: ServePlan) -> dict[str, Any]:
    """Caddy's native JSON configuration: one site, a reverse proxy over the app processes.

    Built as data and written with :func:`json.dumps`, so no value (a domain, an e-mail
    address, a folder) can add a directive, a site or an option the way text pasted into
    a Caddyfile could; the flags are also checked before (:mod:`serve_flags`).
    """
    upstreams = [{"dial": f"127.0.0.1:{p}"} for p in plan.app_ports]
    proxy = {
        "handler": "reverse_proxy",
        "upstreams": upstreams,
        "flush_interval": -1,
        # the same browser stays on the same process: Streamlit keeps a session's state
        # in one process's memory; when that process is down, another is chosen
        "load_balancing": {
            "selection_policy": {"policy": "cookie", "name": STICKY_COOKIE},
            "try_duration": 15 * _S,
            "try_interval": _S // 4,
        },
        "health_checks": {
            "active": {"uri": HEALTH_PATH, "interval": _S, "timeout": 2 * _S},
            "passive": {"fail_duration": 10 * _S},
        },
    }
    handle = [{"handler": "encode", "encodings": {"gzip": {}}, "prefer": ["gzip"]}, proxy]
    server: dict[str, Any]
    http: dict[str, Any] = {"grace_period": STOP_GRACE_S * _S}
    config: dict[str, Any] = {
        # no admin endpoint, and no copy of this configuration in ~/.config/caddy
        "admin": {"disabled": True, "config": {"persist": False}},
        "storage": {"module": "file_system", "root": str(plan.run_dir / "caddy")},
        "logging": {"logs": {"default": {"level": "INFO", "encoder": {"format": "json"}}}},
        "apps": {"http": http},
    }
    if plan.domain:
        routes = [{"match": [{"host": [plan.domain]}], "handle": handle, "terminal": True}]
        if plan.hooks_port:  # Prolific's POSTs go to the receiver, never to Streamlit
            receiver = {
                "handler": "reverse_proxy",
                "upstreams": [{"dial": f"127.0.0.1:{plan.hooks_port}"}],
            }
            match = [{"host": [plan.domain], "path": [HOOK_PATH]}]
            routes.insert(0, {"match": match, "handle": [receiver], "terminal": True})
        server = {"listen": [f":{plan.port}"], "routes": routes}
        if plan.tls == "internal":
            issuers: list[dict[str, Any]] = [{"module": "internal"}]
            config["apps"]["tls"] = {
                "automation": {"policies": [{"subjects": [plan.domain], "issuers": issuers}]}
            }
            # the local CA's root stays in the run folder: never put in the system's trust
            config["apps"]["pki"] = {"certificate_authorities": {"local": {"install_trust": False}}}
        elif plan.email:
            issuers = [{"module": m, "email": plan.email} for m in ("acme", "zerossl")]
            config["apps"]["tls"] = {
                "automation": {"policies": [{"subjects": [plan.domain], "issuers": issuers}]}
            }
    else:
        server = {
            "listen": [_listen(plan.host, plan.port)],
            "routes": [{"handle": handle}],
            "automatic_https": {"disable": True},
        }
    http["servers"] = {"koed": server}
    return config


def caddy_json(plan: ServePlan) -> str:
    """:func:`caddy_config` as the text of Caddy's JSON file."""
    return json.dumps(caddy_config(plan), indent=2, ensure_ascii=True) + "\n"


def _listen(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _program(name: str, argv: list[str], priority: int = 999) -> dict[str, str | int | Written]:
    return {
        "command": command(argv),
        "directory": str(PROJECT_ROOT),
        "autostart": "true",
        "autorestart": "true",
        "startsecs": 2,
        "startretries": 10,
        "stopsignal": "TERM",
        "stopwaitsecs": STOP_GRACE_S + 2,
        "stopasgroup": "true",
        "killasgroup": "true",
        "priority": priority,
        "stdout_logfile": here("stdout_logfile", f"logs/{name}.log"),
        "redirect_stderr": "true",
        "stdout_logfile_maxbytes": "10MB",
        "stdout_logfile_backups": 3,
    }


WARM_START = "components.core.warm_start"
"""Streamlit's command with the app's imports and dataset warmed before the first browser
(run from the project's folder, the programs' directory)."""


def _run_as() -> dict[str, str | int | Written]:
    """Under root, say so: supervisord logs a CRIT line at every start otherwise. It
    never switches user: ``user=`` names the user it already runs as."""
    return {"user": pwd.getpwuid(0).pw_name} if os.geteuid() == 0 else {}


def supervisord_conf(plan: ServePlan, password: str) -> str:
    """supervisord's configuration: the app processes, the worker, Caddy, the backups.

    ``password`` guards the control socket (inside the owner-only run folder already):
    supervisord logs a CRIT line at every start for a socket without one. Written by
    :mod:`koed_core.cli.serve_ini`: the run folder appears as supervisord's ``%(here)s``
    (the file is written into it), every other value quoted by supervisord's rules.

    Raises:
        ConfigValueError: the checkout folder holds what supervisord's format cannot
            (see :func:`koed_core.cli.serve_ini.literal`).
    """
    python = sys.executable
    app = str(PROJECT_ROOT / "app.py")
    ini = SupervisorIni()
    ini.section(
        "supervisord",
        {
            "nodaemon": "true",
            "logfile": here("logfile", "logs/supervisord.log"),
            "pidfile": here("pidfile", "supervisord.pid"),
            "childlogdir": here("childlogdir", "logs"),
            "loglevel": "info",
            "silent": "true",  # koed serve reads this log and says what matters
            **_run_as(),
        },
    )
    guard = {"username": "koed", "password": password}
    ini.section(
        "unix_http_server", {"file": here("file", "supervisor.sock"), "chmod": "0700", **guard}
    )
    ini.section(
        "rpcinterface:supervisor",
        {"supervisor.rpcinterface_factory": "supervisor.rpcinterface:make_main_rpcinterface"},
    )
    ini.section("supervisorctl", {"serverurl": Written("unix://%(here)s/supervisor.sock"), **guard})
    for index, port in enumerate(plan.app_ports):
        argv = [
            python, "-m", WARM_START, "run", app,
            f"--server.port={port}", "--server.address=127.0.0.1", "--server.headless=true",
        ]  # fmt: skip
        ini.section(f"program:app-{index}", _program(f"app-{index}", argv))
    # the database comes from KOED_DB in the environment supervisord passes on
    ini.section("program:worker", _program("worker", [python, "-m", "koed_core.cli", "worker"]))
    if plan.hooks_port:  # Prolific's signed events (Streamlit cannot take a POST)
        hooks = [python, "-m", "koed_core.cli", "prolific", "receive",
                 "--port", str(plan.hooks_port)]  # fmt: skip
        ini.section("program:hooks", _program("hooks", hooks))
    caddy = [plan.caddy, "run", "--config", str(plan.run_dir / "caddy.json")]
    # started after the apps, stopped before them: a page's reconnects end at once
    ini.section("program:caddy", _program("caddy", caddy, priority=1000))
    if plan.backup_every_min and plan.backup_dir:
        backups = [
            python, "-m", "koed_core.cli", "db", "backup",
            "--every", f"{plan.backup_every_min:g}", "--dir", str(plan.backup_dir),
            "--keep", str(plan.backup_keep),
        ]  # fmt: skip
        ini.section("program:backup", _program("backup", backups))
    return ini.text()
