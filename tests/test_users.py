"""Accounts file: bcrypt hashes, validation, lock-out counters merged across sessions."""

from __future__ import annotations

import copy
import stat
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest

from koed_core import users


def test_add_user_stores_only_a_bcrypt_hash(tmp_path: Path) -> None:
    path = tmp_path / "users.yaml"
    password = users.add_user(path, "ji-woo", "rater", "Ji-woo")
    text = path.read_text()
    assert password not in text and len(password) >= 16
    entry = users.load(path)["usernames"]["ji-woo"]
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
    with pytest.raises(users.UserError, match=message):
        users.add_user(tmp_path / "u.yaml", username, role, password=password)


def test_duplicate_and_unknown_users(tmp_path: Path) -> None:
    path = tmp_path / "u.yaml"
    users.add_user(path, "admin", "admin", password="correct horse")
    with pytest.raises(users.UserError, match="exists already"):
        users.add_user(path, "admin", "rater")
    with pytest.raises(users.UserError, match="no user 'ghost'"):
        users.unlock(path, "ghost")


def test_login_state_merges_per_user(tmp_path: Path) -> None:
    path = tmp_path / "u.yaml"
    users.add_user(path, "a1", "rater", password="password-a")
    users.add_user(path, "b2", "rater", password="password-b")
    # two sessions read the file, each records a failure for a different user
    first, second = users.load(path), users.load(path)
    before_first, before_second = copy.deepcopy(first), copy.deepcopy(second)
    first["usernames"]["a1"]["failed_login_attempts"] = 1
    second["usernames"]["b2"]["failed_login_attempts"] = 3
    users.save_login_state(path, before_first, first)
    users.save_login_state(path, before_second, second)
    saved = users.load(path)["usernames"]
    assert saved["a1"]["failed_login_attempts"] == 1 and saved["b2"]["failed_login_attempts"] == 3
    users.update_user(path, "b2", lambda e: e.update(failed_login_attempts=users.MAX_FAILED_LOGINS))
    assert [u["locked"] for u in users.list_users(path)] == [False, True]
    users.unlock(path, "b2")
    assert not any(u["locked"] for u in users.list_users(path))


def test_cli_prints_the_password_once_and_never_the_hash(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "KOED_USERS": str(tmp_path / "u.yaml")}
    run = [sys.executable, "-m", "koed_core.cli", "users"]
    added = subprocess.run(
        [*run, "add", "boss", "--role", "admin"], env=env, capture_output=True, text=True
    )
    assert added.returncode == 0
    password = added.stdout.split("shown once, not stored in clear): ")[1].strip()
    entry = users.load(tmp_path / "u.yaml")["usernames"]["boss"]
    assert bcrypt.checkpw(password.encode(), entry["password"].encode())
    listed = subprocess.run([*run, "list"], env=env, capture_output=True, text=True).stdout
    assert listed.strip() == "boss\tadmin\t0 failed logins" and "$2b$" not in listed
    again = subprocess.run([*run, "add", "boss"], env=env, capture_output=True, text=True)
    assert again.returncode == 1 and "exists already" in again.stderr
