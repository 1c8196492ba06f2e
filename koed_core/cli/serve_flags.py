"""Every value ``koed serve`` puts into Caddy's or supervisord's configuration, checked
before any file is written (issue 62).

A flag pasted into a configuration file can change its structure: a newline in
``--email`` once turned Caddy's admin API on for every interface, braces in ``--domain``
added a site, a newline in a database path added a ``[program:...]`` to supervisord's
file, and two names in ``--domain`` became the invite links' broken address. Each check
here refuses such a value with one sentence naming the flag; the configuration writers
(:mod:`koed_core.cli.serving`) then only ever see values of the expected shape, and they
write them in forms that cannot change structure anyway (Caddy's JSON, a supervisord
writer that refuses what it cannot quote).

The checks lean on maintained parsers: :mod:`ipaddress` for addresses, the ``idna``
codec (IDNA 2008, the package ``requests`` and ``httpx`` use) for international domain
names, and :mod:`email.headerregistry` for an address.
"""

from __future__ import annotations

import ipaddress
import math
import re
from email.errors import HeaderParseError, MessageError
from email.headerregistry import Address
from pathlib import Path

import idna

from koed_core.errors import KoedError

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class FlagError(KoedError):
    """A flag whose value cannot be used, with the flag's name and what was wrong."""


def plain(flag: str, value: str) -> str:
    """``value`` if it holds no control character (newline, tab, NUL ...).

    Raises:
        FlagError: it does.
    """
    bad = _CONTROL.search(value)
    if bad:
        raise FlagError(
            f"{flag}: {value!r} holds a control character ({bad.group()!r}); "
            "give it without newlines or tabs"
        )
    return value


def hostname(value: str, flag: str = "--domain") -> str:
    """One DNS host name with at least one dot (``study.example.org``), in its ASCII form;
    an international name is converted with IDNA.

    Raises:
        FlagError: anything else: spaces, two names, braces, a scheme, a port, an IP address.
    """
    plain(flag, value)
    name = value.strip().rstrip(".").lower()
    if not name or any(c in name for c in " /:{}\"'\\@,;#*"):
        raise FlagError(
            f"{flag}: {value!r} is not one host name; give one name such as "
            "study.example.org (no spaces, scheme, port or path)"
        )
    try:
        ipaddress.ip_address(name)
    except ValueError:
        pass
    else:
        raise FlagError(f"{flag}: {value!r} is an IP address; a certificate needs a host name")
    try:
        ascii_name = idna.encode(name, uts46=True).decode("ascii")
    except idna.IDNAError as err:
        raise FlagError(f"{flag}: {value!r} is not a valid host name ({err})") from None
    labels = ascii_name.split(".")
    if len(labels) < 2 or not all(_LABEL.match(label) for label in labels):
        raise FlagError(
            f"{flag}: {value!r} is not a valid host name; give a full name such as "
            "study.example.org"
        )
    if labels[-1].isdigit() or len(ascii_name) > 253:
        raise FlagError(f"{flag}: {value!r} is not a valid host name")
    return ascii_name


def email(value: str) -> str:
    """One e-mail address (``you@example.org``), its domain a valid host name.

    Raises:
        FlagError: a list, a display name, spaces, control characters, no ``@``.
    """
    plain("--email", value)
    try:
        address = Address(addr_spec=value)
    except (ValueError, HeaderParseError, MessageError, IndexError):
        raise FlagError(f"--email: {value!r} is not one e-mail address") from None
    if address.addr_spec != value or any(c.isspace() for c in value) or not address.username:
        raise FlagError(f"--email: {value!r} is not one e-mail address")
    hostname(address.domain, "--email")
    return value


def host(value: str) -> str:
    """The address to listen on without ``--domain``: an IP address or ``localhost``.

    Raises:
        FlagError: anything else.
    """
    plain("--host", value)
    if value == "localhost":
        return "127.0.0.1"
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise FlagError(
            f"--host: {value!r} is not an IP address; give one such as 127.0.0.1 or 0.0.0.0"
        ) from None


def path(flag: str, value: Path) -> Path:
    """A path without control characters, made absolute (symlinks not followed here:
    the folder checks decide about them).

    Raises:
        FlagError: it holds a control character.
    """
    plain(flag, str(value))
    return Path(value).absolute()


def minutes(flag: str, value: float, zero: bool = False) -> float:
    """A finite number of minutes above 0 (or 0 when ``zero`` allows it), below a year.

    Raises:
        FlagError: ``nan``, ``inf``, negative, or too large to sleep.
    """
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        least = "0 or more" if zero else "above 0"
        raise FlagError(f"{flag}: {value:g} is not a number of minutes {least}")
    if value > 525_600:
        raise FlagError(f"{flag}: {value:g} minutes is more than a year")
    return value


def port(value: int, flag: str = "--port") -> int:
    """A TCP port, 1-65535.

    Raises:
        FlagError: out of range.
    """
    if not 0 < value < 65536:
        raise FlagError(f"{flag}: {value} is not a TCP port (1-65535)")
    return value
