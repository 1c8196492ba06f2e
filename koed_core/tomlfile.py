"""Reading the project's TOML data files (prompt sets, judge templates) and a user's own."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def read_toml(
    path: Path, what: str, shipped: Sequence[str], error: Callable[[str], Exception]
) -> dict[str, Any]:
    """The file's table, or ``error`` raised with one sentence naming the file and why
    (missing: the shipped names a user can give instead)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: no such {what} (shipped: {', '.join(shipped)})") from None
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"{path}: not readable ({err})") from None
    except tomllib.TOMLDecodeError as err:
        raise error(f"{path}: not valid TOML ({err})") from None
