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
import re
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from koed_core.errors import KoedError
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


class ConfigValueError(KoedError):
    """A value supervisord's file format cannot hold as it is."""


_INLINE_COMMENT = re.compile(r"\s[;#]")


def _value(key: str, value: str) -> str:
    """One ``key=value`` line of supervisord's ini file, with the value read back exactly.

    supervisord reads its file with :mod:`configparser` (``;`` and ``#`` after a space
    start a comment, surrounding spaces are dropped, a newline starts a new key or
    section) and then expands ``%(name)s``, twice for log file names: a value that these
    rules would change is refused rather than escaped. tests/test_serve_guard.py reads
    the file back with supervisord's own parser.

    Raises:
        ConfigValueError: the value holds a control character, ``%``, a comment marker
            after a space, or surrounding spaces.
    """
    if (
        re.search(r"[\x00-\x1f\x7f%]", value)
        or _INLINE_COMMENT.search(value)
        or value != value.strip()
    ):
        raise ConfigValueError(
            f"supervisord's configuration cannot hold {value!r} as {key}: give paths "
            "without newlines, tabs, '%', surrounding spaces, ' ;' or ' #'"
        )
    return f"{key}={value}\n"


WARM_START = "components.core.warm_start"
"""Streamlit's command with the app's imports and dataset warmed before the first browser
(run from the project's folder, the programs' directory)."""


def _program(name: str, command: list[str], plan: ServePlan, priority: int = 999) -> str:
    line = " ".join(_quoted(part) for part in command)
    return (
        f"[program:{name}]\n"
        + _value("command", line)
        + _value("directory", str(PROJECT_ROOT))
        + "autostart=true\n"
        "autorestart=true\n"
        "startsecs=2\n"
        "startretries=10\n"
        "stopsignal=TERM\n"
        f"stopwaitsecs={STOP_GRACE_S + 2}\n"
        "stopasgroup=true\n"
        "killasgroup=true\n"
        f"priority={priority}\n"
        + _value("stdout_logfile", f"{plan.run_dir}/logs/{name}.log")
        + "redirect_stderr=true\n"
        "stdout_logfile_maxbytes=10MB\n"
        "stdout_logfile_backups=3\n"
    )


def _quoted(part: str) -> str:
    """supervisord splits a command with shlex: quote what has spaces or quotes."""
    if part and not any(c in part for c in " \t\"'\\#;"):
        return part
    return '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _run_as() -> str:
    """Under root, say so: supervisord logs a CRIT line at every start otherwise. It
    never switches user: ``user=`` names the user it already runs as."""
    if os.geteuid() != 0:
        return ""
    return _value("user", pwd.getpwuid(0).pw_name)


def supervisord_conf(plan: ServePlan, password: str) -> str:
    """supervisord's configuration: the app processes, the worker, Caddy, the backups.

    ``password`` guards the control socket (inside the owner-only run folder already):
    supervisord logs a CRIT line at every start for a socket without one.

    Raises:
        ConfigValueError: a path supervisord's file cannot hold (see :func:`_value`).
    """
    python = sys.executable
    app = str(PROJECT_ROOT / "app.py")
    socket_path = f"{plan.run_dir}/supervisor.sock"
    parts = [
        "[supervisord]\n"
        "nodaemon=true\n"
        + _value("logfile", f"{plan.run_dir}/logs/supervisord.log")
        + _value("pidfile", f"{plan.run_dir}/supervisord.pid")
        + _value("childlogdir", f"{plan.run_dir}/logs")
        + "loglevel=info\n"
        + "silent=true\n"  # koed serve reads this log and says what matters
        + _run_as(),
        "[unix_http_server]\n"
        + _value("file", socket_path)
        + "chmod=0700\nusername=koed\n"
        + _value("password", password),
        "[rpcinterface:supervisor]\n"
        "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n",
        "[supervisorctl]\n"
        + _value("serverurl", f"unix://{socket_path}")
        + "username=koed\n"
        + _value("password", password),
    ]
    for index, port in enumerate(plan.app_ports):
        command = [
            python, "-m", WARM_START, "run", app,
            f"--server.port={port}", "--server.address=127.0.0.1", "--server.headless=true",
        ]  # fmt: skip
        parts.append(_program(f"app-{index}", command, plan))
    # the database comes from KOED_DB in the environment supervisord passes on
    parts.append(_program("worker", [python, "-m", "koed_core.cli", "worker"], plan))
    if plan.hooks_port:  # Prolific's signed events (Streamlit cannot take a POST)
        hooks = [python, "-m", "koed_core.cli", "prolific", "receive",
                 "--port", str(plan.hooks_port)]  # fmt: skip
        parts.append(_program("hooks", hooks, plan))
    caddy = [plan.caddy, "run", "--config", str(plan.run_dir / "caddy.json")]
    # started after the apps, stopped before them: a page's reconnects end at once
    parts.append(_program("caddy", caddy, plan, priority=1000))
    if plan.backup_every_min and plan.backup_dir:
        backups = [
            python, "-m", "koed_core.cli", "db", "backup",
            "--every", f"{plan.backup_every_min:g}", "--dir", str(plan.backup_dir),
            "--keep", str(plan.backup_keep),
        ]  # fmt: skip
        parts.append(_program("backup", backups, plan))
    return "\n".join(parts)
