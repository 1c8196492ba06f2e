"""The server's own secret, for keyed pseudonyms (never stored in the database).

Rater pseudonyms in exports are HMAC-SHA256(key, study + username): without the key a
list of candidate names cannot be matched to them. The key comes from ``KOED_SECRET_KEY``
(environment or secrets.toml); without one, a random key is made once and kept beside
the database in an owner-only file, so pseudonyms stay stable across restarts.
"""

from __future__ import annotations

import hmac
import os
import secrets
from hashlib import sha256
from pathlib import Path


def key_file(db_path: Path) -> Path:
    """Where the generated key lives: next to the database, never inside it."""
    return db_path.with_name(db_path.name + ".key")


def server_key(configured: str | None, db_path: Path) -> bytes:
    """The configured key, else the generated one (created owner-only on first use)."""
    if configured:
        return configured.encode()
    path = key_file(db_path)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    return path.read_text().strip().encode()


def pseudonym(key: bytes, study_id: int, username: str) -> str:
    """A stable per-study rater id that only the key holder can link to a username."""
    digest = hmac.new(key, f"{study_id}\x00{username}".encode(), sha256).hexdigest()
    return "r-" + digest[:12]
