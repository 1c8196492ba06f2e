"""The server's own secret, for keyed pseudonyms and signed invite links (never stored in
the database).

Rater pseudonyms in exports are HMAC-SHA256(key, study + username) and crowd invite links
are signed with the same key: without it a list of candidate names cannot be matched to
pseudonyms, and no link can be forged. The key comes from ``KOED_SECRET_KEY``
(environment or secrets.toml); without one, a random key is made once and kept beside
the database in an owner-only file, so pseudonyms and links stay valid across restarts.

The generated file is written whole to a temporary file and renamed into place, so a
full disk, a kill or two processes starting at once never leave an empty or half key
that later processes would sign with. A key file that is empty or too short is refused
rather than used: an empty key would let anyone compute pseudonyms and forge links.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from hashlib import sha256
from pathlib import Path

from koed_core.errors import KoedError
from koed_core.i18n import _

KEY_HEX_CHARS = 64
"""A generated key: 32 random bytes, written as 64 hex characters."""
MIN_CONFIGURED_CHARS = 32


class ServerKeyError(KoedError):
    """The key is missing, empty or too short: nothing may be signed with it."""


def key_file(db_path: Path) -> Path:
    """Where the generated key lives: next to the database, never inside it."""
    return db_path.with_name(db_path.name + ".key")


def server_key(configured: str | None, db_path: Path) -> bytes:
    """The configured key, else the generated one (created owner-only on first use).

    Raises:
        ServerKeyError: the configured key is shorter than 32 characters, or the key file
            is empty, too short or unreadable (the message says how to recover).
    """
    if configured:
        if len(configured) < MIN_CONFIGURED_CHARS:
            raise ServerKeyError(
                _(
                    "KOED_SECRET_KEY is {length} characters long; it needs at least {needed} "
                    "random characters (for example the output of "
                    "`python -c 'import secrets; print(secrets.token_hex(32))'`)",
                    length=len(configured),
                    needed=MIN_CONFIGURED_CHARS,
                )
            )
        return configured.encode()
    path = key_file(db_path)
    if not path.exists():
        _create(path)
    return _read(path)


def _create(path: Path) -> None:
    """Write a new key atomically; if another process won the race, keep its key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(KEY_HEX_CHARS // 2))
            handle.flush()
            os.fsync(handle.fileno())
        # link() fails if the key exists: the first complete key wins, none is replaced
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    except OSError as err:
        raise ServerKeyError(
            _(
                "could not create the server key {name} beside the database ({error}); free "
                "some space or fix the folder's permissions, or set KOED_SECRET_KEY",
                name=path.name,
                error=err.strerror or err,
            )
        ) from None
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()


def _read(path: Path) -> bytes:
    try:
        key = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as err:
        raise ServerKeyError(
            _("the server key {name} cannot be read ({error})", name=path.name, error=err)
        ) from None
    if len(key) < KEY_HEX_CHARS:
        what = (
            _(
                "the server key {name} beside the database is empty, so nothing is signed with it.",
                name=path.name,
            )
            if not key
            else _(
                "the server key {name} beside the database is too short, so nothing is signed "
                "with it.",
                name=path.name,
            )
        )
        advice = _(
            "If it was lost or damaged, delete the file (a new key is made on the next start) "
            "or set KOED_SECRET_KEY to the old key: rater pseudonyms and invite links made "
            "with a lost key cannot be verified any more, so links already sent stop working "
            "and new exports name raters differently."
        )
        raise ServerKeyError(what + " " + advice)
    return key.encode()


def pseudonym(key: bytes, study_id: int, username: str) -> str:
    """A stable per-study rater id that only the key holder can link to a username."""
    digest = hmac.new(key, f"{study_id}\x00{username}".encode(), sha256).hexdigest()
    return "r-" + digest[:12]
