"""What of a server URL may be stored or shown: never credentials.

Runs, jobs and exports keep the URL a model was served from, so a reader knows which
server answered; ``user:password@`` and key-like query values (``?api_key=...``) are
replaced by ``***`` before the URL is stored, logged or shown. Kept apart from the
registry because the database layer needs it when upgrading old rows.
"""

from __future__ import annotations

import urllib.parse

SECRET_QUERY = ("key", "token", "secret", "password", "signature", "sig", "auth")


def redact_url(url: str | None) -> str | None:
    """A URL safe to store or show: no ``user:password@`` and no key-like query values."""
    if not url:
        return url
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    if "@" in parts.netloc:
        netloc = f"***@{netloc}"
    query = urllib.parse.urlencode(
        [
            (k, "***" if any(word in k.lower() for word in SECRET_QUERY) else v)
            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        ]
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
