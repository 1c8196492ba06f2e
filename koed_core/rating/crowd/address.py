"""The app's public address: where crowd links point, and the rule a Prolific study's
address must meet.

One setting, looked up in one order by the command line and the Studies page alike:
``--url`` (the command line only), then ``KOED_PUBLIC_URL`` (environment or
.streamlit/secrets.toml), then the address ``koed serve --domain HOST`` recorded in the
database (``https://HOST``; the database is what the researcher's shell and every app
process open, where serve's environment reaches only its own children). With none of
them, nothing falls back to localhost: the caller says where to set it.

A Prolific study sends strangers to the address, so ``koed prolific publish`` takes only
an ``https://`` address on one valid public host name (or a global IP address): no
localhost, no loopback, private, link-local or otherwise non-global IP address (Python's
``ipaddress``), no name under a suffix that never leaves a local network (``.localhost``,
RFC 6761; ``.local``, RFC 6762; ``.home.arpa``, RFC 8375; ``.internal``), and a host
name whose labels IDNA accepts (the ``idna`` package: letters, digits and hyphens, 1-63
characters a label).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import SplitResult, urlsplit

import idna

from koed_core.db import Store
from koed_core.db.site import PUBLIC_URL, SiteSettings
from koed_core.i18n import _
from koed_core.rating.crowd.links import CrowdError

LOCAL_SUFFIXES = (".localhost", ".local", ".home.arpa", ".internal")
"""Host name suffixes that never reach the public internet."""


def recorded_address(store: Store) -> str | None:
    """The address ``koed serve --domain`` recorded, or None."""
    return SiteSettings(store).get(PUBLIC_URL)


def record_domain(store: Store, domain: str) -> str:
    """Record ``https://DOMAIN`` as the app's public address (``koed serve --domain``)."""
    url = f"https://{domain.strip().rstrip('/')}"
    SiteSettings(store).put(PUBLIC_URL, url)
    return url


def public_address(store: Store, given: str | None, setting: str | None) -> str | None:
    """The public address: ``given`` (``--url``), else the setting (``KOED_PUBLIC_URL``),
    else the one ``koed serve --domain`` recorded; None when there is none."""
    for url in (given, setting, recorded_address(store)):
        if url and url.strip():
            return url.strip().rstrip("/")
    return None


def no_address() -> CrowdError:
    """The one sentence for a link with no address to point at: where to set one."""
    return CrowdError(
        _(
            "the app has no public address to put in the link: give --url https://HOST, set "
            "KOED_PUBLIC_URL (environment or .streamlit/secrets.toml), or serve the app with "
            "`koed serve --domain HOST`, which records https://HOST for the command line and "
            "the app"
        )
    )


def check_public_https(url: str) -> str:
    """``url`` without its trailing slash, if strangers on the internet can open it.

    Raises:
        CrowdError: plain http (or another scheme), a user name, query or fragment in it,
            no host or not one valid host name, localhost, a local-only name, or an IP
            address that is not global (loopback, private, link-local...); one sentence
            naming the address.
    """
    try:
        why = _why_not_public(urlsplit(url.strip()))
    except ValueError:  # urlsplit refuses a malformed IPv6 host
        why = _("its host is not one valid host name")
    if why:
        raise CrowdError(
            _(
                "a Prolific study cannot send people to {url}: {why}; give its public "
                "https:// address (--url, KOED_PUBLIC_URL or `koed serve --domain HOST`)",
                url=url.strip(),
                why=why,
            )
        )
    return url.strip().rstrip("/")


def _why_not_public(parts: SplitResult) -> str | None:
    if parts.scheme != "https":
        return _("it is not an https:// address")
    if "@" in parts.netloc or parts.query or parts.fragment:
        return _("an address for a study has no user name, query or fragment")
    host = parts.hostname
    if not host:
        return _("it names no host")
    try:
        parts.port  # noqa: B018 - reading it checks it
    except ValueError:
        return _("its port is not a number")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return _why_not_public_name(host)
    if not address.is_global:
        return _("{host} is a loopback, private or local address", host=host)
    return None


def _why_not_public_name(host: str) -> str | None:
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(LOCAL_SUFFIXES):
        return _("{host} is reached only from this machine or its local network", host=host)
    try:
        idna.encode(name, uts46=True)
    except idna.IDNAError:
        return _("{host} is not one valid host name", host=host)
    if "." not in name or name.rsplit(".", 1)[1].isdigit():
        return _("{host} is not a public host name", host=host)
    return None
