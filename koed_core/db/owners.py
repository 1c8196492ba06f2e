"""Who holds a piece of work: a process named host:pid, and whether it is gone.

Jobs and the items of a run are both claimed by a process before it works on them; a
claim whose process has died on this machine (or has gone silent for long) may be taken
over, so a killed worker's work is never stuck and never done twice by live ones.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def this_process() -> str:
    """This process as an owner: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def dead_here(owner: str | None) -> bool:
    """An owner (host:pid) of this machine whose process no longer exists."""
    if not owner or ":" not in owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, someone else's
    try:  # a killed worker nobody has reaped yet (a container's PID 1 may never) is a zombie
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]
