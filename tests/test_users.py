"""Accounts file: bcrypt hashes, validation, lock-out counters merged across sessions."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest

from koed_core.rating import accounts


@pytest.mark.slow
def test_add_user_stores_only_a_bcrypt_hash(tmp_path: Path) -> None:
    path = tmp_path / "accounts.yaml"
    password = accounts.add_user(path, "ji-woo", "rater", "Ji-woo")
    text = path.read_text()
    assert password not in text and len(password) >= 16
    entry = accounts.load(path)["usernames"]["ji-woo"]
    assert bcrypt.checkpw(password.encode(), entry["password"].encode())
    assert entry["roles"] == ["rater"] and entry["failed_login_attempts"] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("username", "role", "password", "message"),
    [
        ("Bad Name", "rater", None, "use 2-32 lowercase letters"),
        ("ok", "owner", None, "role 'owner'"),
        ("ok", "rater", "short", "at least 8 characters"),
    ],
)
def test_bad_accounts_are_refused(tmp_path: Path, username, role, password, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(accounts.UserError, match=message):
        accounts.add_user(tmp_path / "u.yaml", username, role, password=password)


def test_duplicate_and_unknown_users(tmp_path: Path) -> None:
    path = tmp_path / "u.yaml"
    accounts.add_user(path, "admin", "admin", password="correct horse")
    with pytest.raises(accounts.UserError, match="exists already"):
        accounts.add_user(path, "admin", "rater")
    with pytest.raises(accounts.UserError, match="no user 'ghost'"):
        accounts.unlock(path, "ghost")


@pytest.mark.slow
def test_concurrent_wrong_passwords_all_count(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "u.yaml"
    accounts.add_user(path, "boss", "admin", password="right-password")
    now = 1_000_000.0
    with ThreadPoolExecutor(10) as pool:  # ten sessions guessing at the same moment
        results = list(
            pool.map(lambda n: accounts.attempt_login(path, "boss", f"guess-{n}", now), range(10))
        )
    assert results == [None] * 10
    entry = accounts.load(path)["usernames"]["boss"]
    assert entry["locked_until"] == now + accounts.BACKOFF_S  # the fifth guess started the wait
    # the right password during the wait fails like any other attempt
    assert accounts.attempt_login(path, "boss", "right-password", now + 60) is None
    # the wait is time-limited: a stranger cannot shut the only admin out for good
    after = now + accounts.BACKOFF_S + 1
    assert accounts.attempt_login(path, "boss", "right-password", after) is not None
    assert accounts.load(path)["usernames"]["boss"]["failed_login_attempts"] == 0


def test_sessions_end_with_logout_lock_and_back_off(tmp_path: Path) -> None:
    path = tmp_path / "u.yaml"
    accounts.add_user(path, "mina", "rater", password="password-m")
    creds = accounts.load(path)
    assert accounts.session_valid(creds, "mina", since=100.0, now=200.0)
    accounts.revoke(path, "mina", 150.0)  # logout at 150: a cookie from 100 is dead
    creds = accounts.load(path)
    assert not accounts.session_valid(creds, "mina", since=100.0, now=200.0)
    assert accounts.session_valid(creds, "mina", since=160.0, now=200.0)
    accounts.lock(path, "mina", 170.0)
    assert not accounts.session_valid(accounts.load(path), "mina", since=180.0, now=200.0)
    assert [u["locked"] for u in accounts.list_users(path)] == [True]
    accounts.unlock(path, "mina")
    assert accounts.session_valid(accounts.load(path), "mina", since=180.0, now=200.0)
    assert not accounts.session_valid(accounts.load(path), "ghost", since=0.0, now=200.0)


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist"),
        ("", "empty, or not an accounts file"),
        ("users:\n  a: 1\n", "no 'credentials: usernames:' mapping"),
        ("credentials: [1, 2\n", "not valid YAML"),
        ("credentials:\n  usernames:\n    a: {name: x}\n", "has no password hash"),
    ],
)
def test_a_configured_accounts_file_that_cannot_be_used_fails_closed(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "accounts.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(accounts.AccountsError, match=message):
        accounts.load(path, required=True)
    if content is None:  # not configured and absent: simply no accounts yet
        assert accounts.load(path) == {"usernames": {}}


@pytest.mark.slow
def test_cli_prints_the_password_once_and_never_the_hash(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "KOED_USERS": str(tmp_path / "u.yaml")}
    run = [sys.executable, "-m", "koed_core.cli", "users"]
    added = subprocess.run(
        [*run, "add", "boss", "--role", "admin"], env=env, capture_output=True, text=True
    )
    assert added.returncode == 0
    password = added.stdout.split("shown once, not stored in clear): ")[1].strip()
    entry = accounts.load(tmp_path / "u.yaml")["usernames"]["boss"]
    assert bcrypt.checkpw(password.encode(), entry["password"].encode())
    listed = subprocess.run([*run, "list"], env=env, capture_output=True, text=True).stdout
    assert listed.strip() == "boss\tadmin\t0 failed logins" and "$2b$" not in listed
    again = subprocess.run([*run, "add", "boss"], env=env, capture_output=True, text=True)
    assert again.returncode == 1 and "exists already" in again.stderr
