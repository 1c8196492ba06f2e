"""Every file an export writes: owner-only (0600) and whole or not at all.

An export holds ratings, annotations, pseudonyms and the server's figures, so nobody else
on the machine reads it; and a failure halfway (a full disk, a bad row) must leave neither
a half file under the final name nor a ``.part`` beside it.
"""

from __future__ import annotations

import os
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
