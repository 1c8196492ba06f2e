"""A prompt kept as data: a TOML file's templates asked as one system and one user
message, versioned by the file's content.

The simulated Speaker (``speaker``) and the translator (``translate``) are asked this
way; each says which tables its file holds and what fills them, and both check a
template the same way before anything is asked with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from koed_core.models.protocol import Message
from koed_core.tomlfile import content_version


@dataclass(frozen=True)
class PromptFile:
    """A prompt file as read: its tables and where they came from."""

    raw: Mapping[str, Any]
    source: str

    @property
    def version(self) -> str:
        """A short hash of the file's content: stored with what it was used for."""
        return content_version(self.raw)

    def fill(self, part: str, key: str, **values: object) -> str:
        """The template ``[part] key``, trimmed, its placeholders filled from ``values``."""
        return str(self.raw[part][key]).strip().format(**values)

    @staticmethod
    def ask(system: str, user: str) -> list[Message]:
        """The request: the instructions (system), then what to answer (user)."""
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def check_template(
    text: str,
    where: str,
    fills: Sequence[str],
    error: Callable[[str], Exception],
    *,
    trial: Mapping[str, str],
    hint: str = "",
) -> None:
    """Raise ``error`` with one sentence naming ``where`` (the file and the table) when
    ``text`` does not fill with the ``trial`` values (a placeholder the file does not
    know, a stray brace) or leaves out one of ``fills``; ``hint`` says which
    placeholders there are."""
    try:
        text.format(**trial)
    except (KeyError, IndexError, ValueError) as err:
        raise error(f"{where} does not fill ({err}){hint}") from None
    missing = [f for f in fills if "{" + f + "}" not in text]
    if missing:
        raise error(f"{where} must hold {', '.join('{' + m + '}' for m in missing)}")
