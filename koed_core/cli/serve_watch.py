"""What Caddy and supervisord say while ``koed serve`` runs, as sentences in its output.

A taken port once made Caddy give up after 62 s while ``koed serve`` said only "not ready
after 180 s: see logs", and a ``--domain`` without a certificate said "ready". Caddy
writes JSON log lines (and, when its configuration cannot start, one ``Error:`` line) to
the log supervisord keeps for it; this module reads the new lines of that log and of
supervisord's own, and turns the ones a researcher must act on into one sentence each.
Whether a domain has its certificate is read from Caddy's storage, where Caddy keeps
what it obtained (``certificates/<issuer>/<name>/<name>.crt``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from koed_core.cli.serving import ServePlan


@dataclass(frozen=True)
class Said:
    """One thing worth printing; ``fatal``: the stack cannot serve until it is fixed."""

    text: str
    fatal: bool = False


@dataclass
class LogTail:
    """The lines added to a file since the last read (a file not there yet has none)."""

    path: Path
    offset: int = 0
    rest: str = field(default="")

    @classmethod
    def from_end(cls, path: Path) -> LogTail:
        """Only what is written from now on (a log keeps earlier runs' lines)."""
        try:
            return cls(path, path.stat().st_size)
        except FileNotFoundError:
            return cls(path)

    def new_lines(self) -> list[str]:
        """Whole lines written since the last call."""
        try:
            with open(self.path, "rb") as handle:
                if handle.seek(0, 2) < self.offset:  # rotated: start again
                    self.offset = 0
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        text = self.rest + chunk.decode("utf-8", "replace")
        lines = text.split("\n")
        self.rest = lines.pop()
        return lines


def caddy_said(line: str, plan: ServePlan) -> Said | None:
    """One line of Caddy's log as a sentence, or None when it needs no one's attention."""
    line = line.strip()
    if line.startswith("Error:"):
        return _caddy_error(line.removeprefix("Error:").strip(), plan)
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or entry.get("level") not in ("error", "fatal"):
        return None
    message = str(entry.get("msg", ""))
    error = str(entry.get("error", ""))
    if "context canceled" in error or message == "unable to unlock":
        return None  # Caddy stopping: what it was doing was cut short, on purpose
    if str(entry.get("logger", "")).startswith("tls"):
        name = entry.get("identifier") or plan.domain
        return Said(
            f"no certificate for {name} yet ({_short(error or message)}); Caddy keeps "
            f"trying: check that {name} points at this machine and that ports 80 and 443 "
            "are open to the internet"
        )
    return _caddy_error(f"{message}: {error}" if error else message, plan)


def _caddy_error(text: str, plan: ServePlan) -> Said:
    if "address already in use" in text:
        return Said(
            f"Caddy cannot listen on port {_port(text, plan)}: another program holds it; "
            "stop it or choose another --port",
            fatal=True,
        )
    if "permission denied" in text and "bind" in text:
        return Said(
            f"Caddy may not listen on port {_port(text, plan)}: run koed serve as root, or "
            "`sudo setcap cap_net_bind_service=+ep $(which caddy)` once",
            fatal=True,
        )
    if "loading" in text and "config" in text:
        return Said(f"Caddy refused its configuration: {_short(text)}", fatal=True)
    return Said(f"Caddy: {_short(text)}")


def _port(text: str, plan: ServePlan) -> str:
    found = re.search(r"listen tcp [^ ]*:(\d+)", text)
    return found.group(1) if found else str(plan.port)


def _short(text: str) -> str:
    """Caddy's error chains repeat themselves; the last two links say what happened."""
    parts = [p.strip() for p in text.split(": ") if p.strip()]
    return ": ".join(parts[-3:]) if len(parts) > 3 else text.strip()


def supervisord_said(line: str) -> Said | None:
    """One line of supervisord's log as a sentence: a program it gave up on, or one it
    cannot start."""
    found = re.search(r"gave up: (\S+) entered FATAL state", line)
    if found:
        return Said(
            f"supervisord gave up on {found.group(1)} after it failed to start again and "
            f"again; its log is logs/{found.group(1)}.log in the run folder",
            fatal=True,
        )
    found = re.search(r"spawnerr: (.*)", line)
    if found:
        return Said(f"supervisord cannot start a program: {found.group(1).strip()}")
    if " CRIT " in line:
        return Said(f"supervisord: {line.split(' CRIT ', 1)[1].strip()}")
    return None


def has_certificate(plan: ServePlan) -> bool:
    """Whether Caddy's storage holds a certificate for the plan's domain (any issuer)."""
    if not plan.domain:
        return True
    root = plan.run_dir / "caddy" / "certificates"
    name = plan.domain
    return any(p.stat().st_size > 0 for p in root.glob(f"*/{name}/{name}.crt"))
