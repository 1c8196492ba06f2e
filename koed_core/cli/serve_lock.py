"""One ``koed serve`` per run folder, per database and per port (issue 62).

A second ``koed serve`` on the same database once rewrote the running stack's
configuration to an upstream port nothing listened on, and one on another database but
the same port said "ready" while the kernel split the workers between two studies (Caddy
binds with SO_REUSEPORT). So before anything is written, ``koed serve`` takes an
exclusive lock on a file in the run folder and one beside the database, and checks that
its port is free.

The lock is the kernel's (:func:`fcntl.flock`), not a lock file whose existence is the
lock: it ends with the last process holding it, so a killed ``koed serve`` never leaves
a stale lock behind, and supervisord inherits it, so the lock lasts exactly as long as
the stack. The file holds who took it (pid, address, database), for the sentence a
second start prints. (The ``filelock`` package does the same flock but has no place
for that note, which is the point of the refusal.)
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from koed_core.errors import KoedError

LOCK_NAME = "serve.lock"


class StackBusy(KoedError):
    """Another ``koed serve`` holds the run folder, the database or the port."""


@dataclass(frozen=True)
class Holder:
    """Who runs a stack: written into the lock files, read by a second start."""

    pid: int
    url: str
    db: str
    run_dir: str

    def sentence(self) -> str:
        """The refusal a second start prints."""
        return (
            f"another koed serve is running here (pid {self.pid}, {self.url}, database "
            f"{self.db}, run folder {self.run_dir}); it was left as it is: stop it first "
            f"(Ctrl+C in its terminal, or kill -TERM {self.pid})"
        )


def db_lock_path(db: Path) -> Path:
    """The lock beside the database: two run folders on one database still collide."""
    return db.with_name(db.name + ".serve.lock")


def take(paths: list[Path], holder: Holder) -> list[int]:
    """Lock every file in ``paths`` (created owner-only, symlinks refused) and write
    ``holder`` into each; returns the open descriptors, which hold the locks.

    Raises:
        StackBusy: one is held by a running stack (named in the message); none is kept.
    """
    fds: list[int] = []
    try:
        for path in paths:
            fds.append(_lock(path))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    note = json.dumps(holder.__dict__).encode()
    for fd in fds:
        os.ftruncate(fd, 0)
        os.pwrite(fd, note, 0)
    return fds


def _lock(path: Path) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise StackBusy(f"{path}: is a symbolic link; remove it and start again") from None
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        said = os.pread(fd, 4096, 0)
        os.close(fd)
        raise StackBusy(_holder_sentence(said, path)) from None
    return fd


def _holder_sentence(said: bytes, path: Path) -> str:
    try:
        return Holder(**json.loads(said)).sentence()
    except (ValueError, TypeError):
        return f"another koed serve holds {path}; it was left as it is: stop it first"


def check_port(host: str, port: int) -> None:
    """Refuse a port another program listens on (Caddy's SO_REUSEPORT would share it).

    A port below 1024 this process may not bind is not judged here: Caddy may hold the
    capability this process lacks, and its own error is shown if not.

    Raises:
        StackBusy: the port is taken.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR: a connection in TIME_WAIT is not a listener; Linux still refuses
        # the bind while anything listens
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except PermissionError:
            return
        except OSError as err:
            if err.errno != errno.EADDRINUSE:
                raise
            where = host or "every address"
            raise StackBusy(
                f"port {port} on {where} is taken by another program; choose another with "
                f"--port, or find it with `ss -ltnp 'sport = :{port}'`"
            ) from None
