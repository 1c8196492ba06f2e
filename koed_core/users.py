"""Accounts: a YAML credentials file (outside git) in streamlit-authenticator's format.

Passwords are bcrypt hashes; a new password is shown once and never stored in clear.
The file also carries the lock-out counter (``failed_login_attempts``). Several app
sessions and the CLI may write it, so every change is a read-modify-write of single
fields under an exclusive file lock, followed by an atomic replace.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import bcrypt
import yaml

from koed_core.errors import KoedError

Role = Literal["admin", "rater"]
ROLES: tuple[Role, ...] = ("admin", "rater")
MAX_FAILED_LOGINS = 5
USERNAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,31}$")


class UserError(KoedError):
    """A user command that cannot be done (bad name, unknown user, duplicate)."""


@dataclass(frozen=True)
class Account:
    """Who is logged in, as the pages need it (never the hash)."""

    username: str
    name: str
    role: Role


def hash_password(password: str) -> str:
    """A bcrypt hash of the password."""
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()


def load(path: Path) -> dict[str, Any]:
    """The credentials dict (``{"usernames": {...}}``); empty when the file does not exist."""
    if not path.is_file():
        return {"usernames": {}}
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not valid YAML ({err})") from None
    credentials = raw.get("credentials", raw)
    credentials.setdefault("usernames", {})
    return dict(credentials)


@contextmanager
def _locked(path: Path) -> Iterator[dict[str, Any]]:
    """Read, let the caller change, and write back the file, all under one lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(path.suffix + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        credentials = load(path)
        yield credentials
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".users-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yaml.safe_dump({"credentials": credentials}, out, allow_unicode=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)


def add_user(
    path: Path, username: str, role: Role, name: str | None = None, password: str | None = None
) -> str:
    """Create an account; returns the password (generated when not given) to show once.

    Raises:
        UserError: a malformed or taken username, an unknown role, a short password.
    """
    if not USERNAME.match(username):
        raise UserError(
            f"username {username!r}: use 2-32 lowercase letters, digits, '.', '_' or '-'"
        )
    if role not in ROLES:
        raise UserError(f"role {role!r}: use admin or rater")
    password = password or secrets.token_urlsafe(12)
    if len(password) < 8:
        raise UserError("a password needs at least 8 characters")
    with _locked(path) as credentials:
        if username in credentials["usernames"]:
            raise UserError(f"user {username!r} exists already")
        credentials["usernames"][username] = {
            "name": name or username,
            "email": f"{username}@koed.invalid",
            "password": hash_password(password),
            "roles": [role],
            "failed_login_attempts": 0,
            "logged_in": False,
        }
    return password


def update_user(path: Path, username: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``change`` to one user's entry under the file lock.

    Raises:
        UserError: no such user.
    """
    with _locked(path) as credentials:
        entry = credentials["usernames"].get(username)
        if entry is None:
            raise UserError(f"no user {username!r}")
        change(entry)


def unlock(path: Path, username: str) -> None:
    """Clear the failed-login counter of a locked account."""
    update_user(path, username, lambda entry: entry.update(failed_login_attempts=0))


def save_login_state(path: Path, before: dict[str, Any], after: dict[str, Any]) -> None:
    """Write back what a login attempt changed in memory (counter, logged_in), user by user.

    Only changed fields of changed users are written, so two sessions logging in at once
    do not overwrite each other's counters.
    """
    for username, entry in after.get("usernames", {}).items():
        old = before.get("usernames", {}).get(username, {})
        fields = {
            key: entry.get(key)
            for key in ("failed_login_attempts", "logged_in")
            if entry.get(key) != old.get(key)
        }
        if fields:

            def apply(entry: dict[str, Any], fields: dict[str, Any] = fields) -> None:
                entry.update(fields)

            update_user(path, username, apply)


def list_users(path: Path) -> list[dict[str, Any]]:
    """Name, role and lock state of every account (no hashes)."""
    return [
        {
            "username": username,
            "name": entry.get("name", username),
            "role": (entry.get("roles") or ["rater"])[0],
            "failed_logins": entry.get("failed_login_attempts") or 0,
            "locked": (entry.get("failed_login_attempts") or 0) >= MAX_FAILED_LOGINS,
        }
        for username, entry in load(path)["usernames"].items()
    ]


def account_of(credentials: dict[str, Any], username: str) -> Account | None:
    """The logged-in account from the credentials."""
    entry = credentials.get("usernames", {}).get(username)
    if entry is None:
        return None
    role = (entry.get("roles") or ["rater"])[0]
    return Account(username, entry.get("name", username), role if role in ROLES else "rater")
