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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import bcrypt
import yaml

from koed_core.errors import KoedError
from koed_core.i18n import _

Role = Literal["admin", "rater", "annotator"]
ROLES: tuple[Role, ...] = ("admin", "rater", "annotator")
MAX_FAILED_LOGINS = 5
BACKOFF_S = 15 * 60
"""After MAX_FAILED_LOGINS wrong passwords in a row, the account waits this long: a
stranger can slow an account down, never shut it (or the only admin) out for good."""
# bcrypt of a random password: unknown names cost as much time as known ones.
_DUMMY_HASH = b"$2b$12$YtEh8I88RXGoLFfLsj8fDu56v7CgjtioI4zzswVr6isZwJOzDuBaK"
USERNAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,31}$")


class UserError(KoedError):
    """A user command that cannot be done (bad name, unknown user, duplicate)."""


class AccountsError(UserError):
    """The accounts file is configured but cannot be used: the rating and admin pages
    stay closed (never "no accounts yet") and the operator is told why."""


@dataclass(frozen=True)
class Account:
    """Who is logged in, as the pages need it (never the hash)."""

    username: str
    name: str
    role: Role


def hash_password(password: str) -> str:
    """A bcrypt hash of the password."""
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()


def load(path: Path, required: bool = False) -> dict[str, Any]:
    """The credentials dict (``{"usernames": {...}}``).

    A file that does not exist means "no accounts yet" unless ``required`` (the operator
    named it in KOED_USERS). A file that exists must be readable and well formed.

    Raises:
        AccountsError: required but missing, or not YAML, empty, or not an accounts file.
    """
    if not path.is_file():
        if required:
            raise AccountsError(
                _("{path}: the accounts file set in KOED_USERS does not exist", path=path)
            )
        return {"usernames": {}}
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise AccountsError(_("{path}: not valid YAML ({error})", path=path, error=err)) from None
    except OSError as err:
        raise AccountsError(
            _("{path}: cannot be read ({error})", path=path, error=err.strerror)
        ) from None
    if not isinstance(raw, dict):
        raise AccountsError(
            _("{path}: empty, or not an accounts file (no 'credentials' mapping)", path=path)
        )
    credentials = raw.get("credentials", raw)
    usernames = credentials.get("usernames") if isinstance(credentials, dict) else None
    if not isinstance(usernames, dict):
        raise AccountsError(_("{path}: no 'credentials: usernames:' mapping in it", path=path))
    for name, entry in usernames.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("password"), str):
            raise AccountsError(
                _("{path}: account {name} has no password hash", path=path, name=repr(name))
            )
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
            _(
                "username {name}: use 2-32 lowercase letters, digits, '.', '_' or '-'",
                name=repr(username),
            )
        )
    if role not in ROLES:
        raise UserError(_("role {role}: use admin, rater or annotator", role=repr(role)))
    password = password or secrets.token_urlsafe(12)
    if len(password) < 8:
        raise UserError(_("a password needs at least 8 characters"))
    with _locked(path) as credentials:
        if username in credentials["usernames"]:
            raise UserError(_("user {name} exists already", name=repr(username)))
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
            raise UserError(_("no user {name}", name=repr(username)))
        change(entry)


def unlock(path: Path, username: str) -> None:
    """Clear failed logins, the back-off and an admin's lock."""
    update_user(
        path,
        username,
        lambda entry: entry.update(failed_login_attempts=0, locked_until=None, disabled=False),
    )


def lock(path: Path, username: str, now: float) -> None:
    """Lock an account until unlocked; its open sessions end at their next page load."""
    update_user(path, username, lambda entry: entry.update(disabled=True, revoked_after=now))


def revoke(path: Path, username: str, now: float) -> None:
    """End every session of the user opened before ``now`` (logout everywhere)."""
    update_user(path, username, lambda entry: entry.update(revoked_after=now))


def _waiting(entry: dict[str, Any], now: float) -> bool:
    return bool(entry.get("disabled")) or float(entry.get("locked_until") or 0) > now


def attempt_login(path: Path, username: str, password: str, now: float) -> Account | None:
    """Check a password and count the outcome, atomically under the file lock.

    Every failure looks the same to the caller (unknown name, wrong password, an account
    waiting out its back-off or locked), so a login form cannot reveal which names exist.
    The counter is read and written under one lock: concurrent wrong guesses each count.
    """
    with _locked(path) as credentials:
        entry = credentials["usernames"].get(username)
        if entry is None or _waiting(entry, now):
            bcrypt.checkpw(password.encode(), _DUMMY_HASH)
            return None
        if bcrypt.checkpw(password.encode(), str(entry["password"]).encode()):
            entry.update(failed_login_attempts=0, locked_until=None)
            return account_of(credentials, username)
        failed = int(entry.get("failed_login_attempts") or 0) + 1
        entry["failed_login_attempts"] = failed
        if failed >= MAX_FAILED_LOGINS:
            entry.update(failed_login_attempts=0, locked_until=now + BACKOFF_S)
        return None


def session_valid(credentials: dict[str, Any], username: str, since: float, now: float) -> bool:
    """Whether a session that logged in at ``since`` may go on: the account exists, is not
    locked or waiting, and no logout or lock has revoked sessions since then."""
    entry = credentials.get("usernames", {}).get(username)
    if entry is None or _waiting(entry, now):
        return False
    return since >= float(entry.get("revoked_after") or 0)


def list_users(path: Path, now: float | None = None) -> list[dict[str, Any]]:
    """Name, role and lock state of every account (no hashes)."""
    moment = time.time() if now is None else now
    return [
        {
            "username": username,
            "name": entry.get("name", username),
            "role": (entry.get("roles") or ["rater"])[0],
            "failed_logins": entry.get("failed_login_attempts") or 0,
            "locked": bool(entry.get("disabled")),
            "waiting_until": entry.get("locked_until")
            if float(entry.get("locked_until") or 0) > moment
            else None,
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
