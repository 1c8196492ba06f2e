"""supervisord's ini file, written through configparser by rules that quote every value.

supervisord reads its file with a ``RawConfigParser`` (supervisor/options.py,
``UnhosedConfigParser``): ``;`` or ``#`` after whitespace starts a comment, each line of a
value is stripped, a value goes on over lines that start with whitespace (joined by a
newline) and a line starting with ``;`` or ``#`` is a comment even there; then it expands
``%(name)s`` once, and twice in ``stdout_logfile``/``stderr_logfile``; a ``command`` is
finally split with :func:`shlex.split`. configparser writes the file; this module makes
each value read back as given under those rules:

- a path inside the run folder is written ``%(here)s/...``: supervisord puts in the
  folder of the file itself, after the ini rules have run, so the run folder's name (any
  character: spaces, ``;``, ``#``, ``%``, a newline) never appears in the file;
- ``%`` is doubled once per expansion;
- a command's arguments are quoted with :func:`shlex.quote`, and an empty ``''`` (which
  shlex joins away) stands between whitespace and a ``;`` or ``#``, and on both sides of
  a newline, so that no rule above can cut or strip the line;
- any other value (the checkout folder, a user name) that the rules would change in a
  way no quoting prevents is refused in one sentence.

Hand-written, because neither configparser nor supervisor ships a writer for supervisord's
own rules (configparser writes what it reads, without them).
"""

from __future__ import annotations

import configparser
import io
import re
import shlex
from dataclasses import dataclass

from koed_core.errors import KoedError

LOG_KEYS = ("stdout_logfile", "stderr_logfile")
"""Keys supervisord expands twice."""
_UNSAFE_LITERAL = re.compile(r"\s[;#]|\n\s|\n[;#]|[\r\x00]")
_BREAK_COMMENT = re.compile(r"(\s)(?=[;#])")


class ConfigValueError(KoedError):
    """A value supervisord's file format cannot hold as it is."""


def expansions_of(key: str) -> int:
    """How many times supervisord expands ``%(name)s`` in this key's value."""
    return 2 if key in LOG_KEYS else 1


def _percent(text: str, times: int) -> str:
    return text.replace("%", "%" * (2**times))


@dataclass(frozen=True)
class Written:
    """A value already in the file's form (from :func:`here` or :func:`command`)."""

    text: str


def literal(key: str, value: str) -> str:
    """``value`` written so that supervisord reads it back as it is.

    Raises:
        ConfigValueError: the value starts or ends with whitespace, holds ``;`` or ``#``
            after whitespace, a newline before whitespace, ``;`` or ``#``, a carriage
            return or a NUL: nothing in supervisord's format keeps those in a value.
    """
    if value != value.strip() or _UNSAFE_LITERAL.search(value):
        raise ConfigValueError(
            f"supervisord's configuration cannot hold {value!r} as {key}: its format "
            "drops surrounding spaces, reads ' ;' or ' #' as a comment and has no way to "
            "write a carriage return: move it to a path without them"
        )
    return _percent(value, expansions_of(key))


def here(key: str, relative: str) -> Written:
    """A path inside the folder of the configuration file, as ``%(here)s/relative``
    (``%%(here)s`` where supervisord expands twice)."""
    prefix = "%" * (2 ** (expansions_of(key) - 1)) + "(here)s/"
    return Written(prefix + literal(key, relative))


def command(argv: list[str]) -> Written:
    """A ``command`` value that supervisord splits back into exactly ``argv``.

    Raises:
        ConfigValueError: an argument holds a carriage return or a NUL.
    """
    quoted = []
    for part in argv:
        if re.search(r"[\r\x00]", part):
            raise ConfigValueError(
                f"supervisord's configuration cannot hold {part!r} in a command: it has "
                "no way to write a carriage return"
            )
        text = _BREAK_COMMENT.sub(r"\1''", shlex.quote(part))
        quoted.append(text.replace("\n", "''\n''"))
    return Written(_percent(" ".join(quoted), 1))


class SupervisorIni:
    """Sections of key = value lines, in order, written by configparser."""

    def __init__(self) -> None:
        self._parser = configparser.RawConfigParser()
        self._parser.optionxform = str  # type: ignore[assignment,method-assign]

    def section(self, name: str, values: dict[str, str | int | Written]) -> None:
        """Add a section; a value not yet :class:`Written` goes through :func:`literal`.

        Raises:
            ConfigValueError: a value the format cannot hold (see :func:`literal`).
        """
        self._parser.add_section(name)
        for key, value in values.items():
            text = value.text if isinstance(value, Written) else literal(key, str(value))
            self._parser.set(name, key, text)

    def text(self) -> str:
        """The whole file."""
        out = io.StringIO()
        self._parser.write(out, space_around_delimiters=False)
        return out.getvalue()
