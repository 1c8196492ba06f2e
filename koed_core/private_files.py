"""Every file an export writes: owner-only (0600) and whole or not at all; folders that
hold such files (backups, a server's run folder) private without touching anyone else's.

An export holds ratings, annotations, pseudonyms and the server's figures, so nobody else
on the machine reads it; and a failure halfway (a full disk, a bad row) must leave neither
a half file under the final name nor a ``.part`` beside it.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path


def write_private(path: Path, content: str | bytes | Iterable[str]) -> Path:
    """Write ``content`` (text, bytes, or pieces of text) to ``path``, mode 0600, through a
    hidden temporary file in the same folder renamed into place; on any error the
    temporary file is removed and the error raised, and ``path`` is as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            if isinstance(content, bytes):
                out.write(content)
            elif isinstance(content, str):
                out.write(content.encode("utf-8"))
            else:
                for piece in content:
                    out.write(piece.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


class FolderError(OSError):
    """A folder that cannot be made private without changing someone else's folder."""


def private_dir(path: Path, flag: str = "folder") -> Path:
    """``path`` as a folder only its owner can enter: made with mode 0700 if it does not
    exist, else used only if it already is one of this user's private folders.

    A folder the user did not create is never changed (an earlier release chmodded the
    target of a symlink, or a shared 1777 folder such as /tmp, to 0700): a symlink, a
    folder owned by someone else and one that others may read or write are refused with
    a sentence saying what to do. The checks read the folder opened without following a
    symlink, so a link put in its place between the check and the use is refused too.

    Raises:
        FolderError: the path is a symlink, not a folder, not the user's, or shared.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    created = False
    try:
        os.mkdir(path, 0o700)  # never follows a symlink: an existing one is EEXIST
        created = True
    except FileExistsError:
        pass
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        if os.path.islink(path):
            raise FolderError(
                f"{flag} {path} is a symbolic link; give the folder it points to, or a new "
                "path (koed makes a private folder there)"
            ) from None
        if err.errno == errno.ENOTDIR:
            raise FolderError(f"{flag} {path} is a file, not a folder") from None
        raise
    try:
        if created:
            os.fchmod(fd, 0o700)  # the umask may have taken bits away; ours from the start
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if info.st_uid != os.geteuid():
        raise FolderError(
            f"{flag} {path} belongs to another user (uid {info.st_uid}); give a folder of "
            f"your own, or a new path such as {path / 'koed'} (koed makes it private)"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise FolderError(
            f"{flag} {path} is open to others (mode {mode:04o}); koed does not change a "
            f"folder it did not make: `chmod 700 {path}` if it is yours alone, or give a new "
            f"path such as {path / 'koed'} (koed makes it private)"
        )
    return path
