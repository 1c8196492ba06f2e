"""``koed serve --print-unit``: a systemd unit for the same ``koed serve``, and the file
of keys it reads (issue 62).

The docs once said ``export KOED_COOKIE_KEY=$(...)``, which makes a new key in every
shell: after a reboot everyone was logged out. The unit reads its keys from an
owner-only environment file made once, beside the database, and never rewritten; the
unit runs ``koed serve`` in the foreground (it stops everything it started on SIGTERM),
and systemd starts it again if it fails and at boot.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from koed_core.paths import PROJECT_ROOT


def env_file(db: Path) -> Path:
    """Where the unit's keys live: beside the database, like its ``.key``."""
    return db.with_name(db.name + ".env")


def ensure_env_file(path: Path) -> bool:
    """Make ``path`` owner-only with a new ``KOED_COOKIE_KEY`` unless it exists (an existing
    file is never changed: its key keeps everyone logged in). Returns whether it was made.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(
            "# Read by the koed-serve systemd unit. Keep it, and back it up: a new cookie key\n"
            "# logs every rater out.\n"
            f"KOED_COOKIE_KEY={secrets.token_urlsafe(32)}\n"
        )
    return True


def _quoted(part: str) -> str:
    """One ExecStart word: systemd reads C-style quotes and expands ``%`` and ``$``."""
    escaped = part.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("%", "%%").replace("$", "$$") + '"'


def _path(path: Path) -> str:
    """A path setting: taken whole (no quotes), ``%`` expanded."""
    return str(path).replace("%", "%%")


def unit(serve_args: list[str], env: Path) -> str:
    """The unit's text, running ``koed serve`` with ``serve_args`` from this checkout."""
    command = [sys.executable, "-m", "koed_core.cli", "serve", *serve_args]
    return (
        "[Unit]\n"
        "Description=KoED Studio (koed serve)\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n"
        "\n"
        "[Service]\n"
        f"WorkingDirectory={_path(PROJECT_ROOT)}\n"
        f"EnvironmentFile={_path(env)}\n"
        f"ExecStart={' '.join(_quoted(p) for p in command)}\n"
        "KillSignal=SIGTERM\n"
        "TimeoutStopSec=30\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
