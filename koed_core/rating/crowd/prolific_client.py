"""A small client for Prolific's public API (v1), on httpx2 (the HTTP client the openai
SDK already brings; the one Python client on PyPI, ``pyrolific``, is unofficial, generated,
and unchanged since July 2024).

Reference: https://docs.prolific.com/api-reference/introduction (token authentication:
``Authorization: Token <token>``; "your API token ... carries full permission, so be sure
to keep them secure"). The token comes from ``PROLIFIC_API_TOKEN`` and lives only in this
object's memory: it is never stored, logged, put in an error message or exported. The base
URL comes from ``PROLIFIC_API_URL`` (default ``https://api.prolific.com``).

Every call is recorded in the database (``ProlificLog.record_call``: what it was for, the
method and path, the status, the outcome and the tries), so a researcher can read back what
the app did on their account. A 429 is retried after its ``Retry-After``; a 5xx or a lost
answer is retried only for a call that is safe to repeat: reads, and calls Prolific
documents as idempotent. The bonus pay call is not one of them.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2

from koed_core.db import Store
from koed_core.db.prolific import ProlificLog
from koed_core.i18n import _
from koed_core.rating.crowd.links import CrowdError

TOKEN_ENV = "PROLIFIC_API_TOKEN"
URL_ENV = "PROLIFIC_API_URL"
DEFAULT_URL = "https://api.prolific.com"
RETRY_STATUS = (429, 500, 502, 503, 504)
MAX_WAIT_S = 120.0
"""A ``Retry-After`` longer than this is not waited for: the call fails and says so."""


class ProlificError(CrowdError):
    """A Prolific call that failed, in one sentence fit to show (never the token)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ProlificAnswerLost(ProlificError):
    """A call that is not safe to repeat was sent, and its answer never came: Prolific may
    or may not have done it, so it is not sent again."""


@dataclass
class ProlificClient:
    """Calls to one Prolific account, each recorded in ``store`` (when given)."""

    base_url: str
    token: str = field(repr=False)
    store: Store | None = None
    invite_id: str | None = None
    """The link the calls are made for (the call log is read per link)."""
    timeout_s: float = 30.0
    tries: int = 4
    sleep: Callable[[float], None] = time.sleep
    transport: httpx2.BaseTransport | None = None

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], store: Store | None = None, **kwargs: Any
    ) -> ProlificClient:
        """The client for the token and URL in ``env``.

        Raises:
            ProlificError: no token set, or a URL that is not http(s).
        """
        token = (env.get(TOKEN_ENV) or "").strip()
        if not token:
            raise ProlificError(
                _(
                    "Set PROLIFIC_API_TOKEN to an API token from Prolific (Settings, API "
                    "tokens) to let the app call Prolific for you."
                )
            )
        url = (env.get(URL_ENV) or DEFAULT_URL).strip().rstrip("/")
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            raise ProlificError(_("PROLIFIC_API_URL must be an http(s) address"))
        return cls(base_url=url, token=token, store=store, **kwargs)

    def call(
        self,
        what: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        safe: bool = True,
        expect: tuple[int, ...] = (200, 201, 202, 204),
    ) -> Any:
        """One API call: its JSON answer (None for an empty one).

        Args:
            what: what the call is for, in English, as the call log shows it (a log stays
                English, like the command line).
            method: the HTTP method.
            path: the path under the base URL, with its query.
            body: the JSON body, if any.
            safe: whether repeating it does no harm (then a 5xx or a lost answer is
                retried; a 429 is always retried: Prolific did not do it).
            expect: the statuses that mean it worked.

        Raises:
            ProlificError: refused, failed, or still rate-limited after the tries.
            ProlificAnswerLost: an unsafe call whose answer never came.
        """
        tries, status, outcome = 0, None, "not sent"
        try:
            while True:
                tries += 1
                try:
                    response = self._send(method, path, body)
                except (httpx2.ConnectError, httpx2.ConnectTimeout) as err:
                    outcome = f"not reached: {type(err).__name__}"
                    if tries < self.tries:  # never sent: safe to send again
                        self.sleep(min(2.0 ** (tries - 1), MAX_WAIT_S))
                        continue
                    raise ProlificError(self._unreachable()) from None
                except httpx2.HTTPError as err:
                    outcome = f"answer lost: {type(err).__name__}"
                    if safe and tries < self.tries:
                        self.sleep(min(2.0 ** (tries - 1), MAX_WAIT_S))
                        continue
                    if safe:
                        raise ProlificError(self._unreachable()) from None
                    raise ProlificAnswerLost(
                        _(
                            "Prolific's answer to {what} never came, so the app cannot know "
                            "whether it was done; it will not send it again.",
                            what=what,
                        )
                    ) from None
                status = response.status_code
                if status in expect:
                    outcome = "ok"
                    return _json(response)
                wait = self._retry_wait(response, tries, safe)
                if wait is None:
                    outcome = f"refused: {_detail(response)}"
                    raise self._refusal(what, response)
                outcome = f"retried after {wait:g} s"
                self.sleep(wait)
        finally:
            self._record(what, method, path, status, outcome, tries)

    def pages(self, what: str, path: str) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list, following ``_links.next`` (on this server only:
        another host in a next link is never sent the token)."""
        next_path: str | None = path
        while next_path:
            answer = self.call(what, "GET", next_path) or {}
            yield from answer.get("results") or []
            href = ((answer.get("_links") or {}).get("next") or {}).get("href")
            next_path = self._local(href) if href else None

    def _local(self, href: str) -> str:
        """A next-page link as a path on our base URL (another host is not trusted)."""
        if href.startswith(self.base_url + "/"):
            return href[len(self.base_url) :]
        parts = urlsplit(href)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def _send(self, method: str, path: str, body: Any) -> httpx2.Response:
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        with httpx2.Client(timeout=self.timeout_s, transport=self.transport) as http:
            return http.request(method, self.base_url + path, headers=headers, json=body)

    def _retry_wait(self, response: httpx2.Response, tries: int, safe: bool) -> float | None:
        status = response.status_code
        if status not in RETRY_STATUS or tries >= self.tries or (status != 429 and not safe):
            return None
        asked = _retry_after(response.headers.get("Retry-After"))
        if asked is not None and asked > MAX_WAIT_S:
            return None
        return asked if asked is not None else min(2.0 ** (tries - 1), MAX_WAIT_S)

    def _refusal(self, what: str, response: httpx2.Response) -> ProlificError:
        status = response.status_code
        if status in (401, 403):
            return ProlificError(
                _(
                    "Prolific refused the API token in PROLIFIC_API_TOKEN (HTTP {status}): "
                    "make a new one in Prolific's Settings, API tokens.",
                    status=status,
                ),
                status,
            )
        if status == 429:
            return ProlificError(
                _(
                    "Prolific is limiting requests and asked to wait {wait} before {what}; "
                    "run the same command again later.",
                    wait=response.headers.get("Retry-After") or "longer",
                    what=what,
                ),
                status,
            )
        return ProlificError(
            _(
                "Prolific answered {what} with HTTP {status}: {detail}",
                what=what,
                status=status,
                detail=self._scrub(_detail(response)),
            ),
            status,
        )

    def _unreachable(self) -> str:
        return _(
            "Prolific's API at {url} could not be reached after {tries} tries",
            url=self.base_url,
            tries=self.tries,
        )

    def _scrub(self, text: str) -> str:
        return text.replace(self.token, "***") if self.token else text

    def _record(
        self, what: str, method: str, path: str, status: int | None, outcome: str, tries: int
    ) -> None:
        if self.store is None:
            return
        ProlificLog(self.store).record_call(
            what=what,
            method=method,
            path=self._scrub(path),
            status=status,
            outcome=self._scrub(outcome),
            tries=tries,
            invite_id=self.invite_id,
        )


def _json(response: httpx2.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text


def _detail(response: httpx2.Response) -> str:
    """The reason Prolific gave, short (``error.detail`` or ``detail``), or the status."""
    answer = _json(response)
    if isinstance(answer, dict):
        error = answer.get("error")
        inner: dict[str, Any] = error if isinstance(error, dict) else answer
        detail = inner.get("detail") or inner.get("title") or inner
        return " ".join(str(detail).split())[:200]
    return " ".join(str(answer or response.reason_phrase).split())[:200]


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, moment.timestamp() - time.time())
