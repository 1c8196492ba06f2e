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
the app did on their account, once per call with its tries.

Each request has a deadline of ``timeout_s`` from the moment it is sent, its whole body
included: the body is read by chunks against a monotonic clock, since httpx's timeouts
bound each read and a server trickling a byte at a time would hold the call for ever (a
server trickling its headers is bounded per read only). Each answer is checked before use
(``prolific_answers``): a 2xx must be JSON of the shape the caller reads, else one
sentence names the address and what came back. A list is read at most ``max_pages`` pages
(``MAX_PAGES``), and a next-page link already followed ends it with an error instead of a
loop.

Retries go through tenacity (a maintained library, where a hand-written loop had grown):
at most ``tries`` tries, waits from exponential backoff with jitter (1 s, 2 s, 4 s ... plus
up to 1 s at random, so that several processes do not come back in step), under these
rules: a 429 is retried after its ``Retry-After`` (more than ``MAX_WAIT_S`` is not waited
for: the call fails and says so); a connection never made is retried (nothing was sent);
a 5xx, a lost answer or an answer past its deadline is retried only for a call that is
safe to repeat: reads, and calls Prolific documents as idempotent. The bonus pay call is
not one of them. Waits go through the injected ``sleep``, so tests never sleep.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

import httpx2
from tenacity import RetryCallState, Retrying, stop_after_attempt, wait_exponential_jitter

from koed_core.db import Store
from koed_core.db.prolific import ProlificLog
from koed_core.i18n import _
from koed_core.rating.crowd.prolific_answers import (
    Answer,
    ProlificAnswerLost,
    ProlificBadAnswer,
    ProlificError,
    Shape,
    TooSlow,
    check,
    detail,
    loops,
    next_href,
    read,
    retry_after_s,
    too_long,
)

__all__ = [
    "MAX_PAGES",
    "MAX_WAIT_S",
    "ProlificAnswerLost",
    "ProlificBadAnswer",
    "ProlificClient",
    "ProlificError",
]

TOKEN_ENV = "PROLIFIC_API_TOKEN"
URL_ENV = "PROLIFIC_API_URL"
WORKSPACE_ENV = "PROLIFIC_WORKSPACE_ID"
DEFAULT_URL = "https://api.prolific.com"
RETRY_STATUS = (429, 500, 502, 503, 504)
MAX_WAIT_S = 120.0
"""A ``Retry-After`` longer than this is not waited for: the call fails and says so."""
MAX_PAGES = 1000
"""The most pages one list is read to (a study's submissions: thousands at Prolific's
page sizes); a list longer than that is an error, never a list silently cut short."""
NEVER_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout)
"""Failures before the request left: sending it again does no harm."""


@functools.cache
def certificate_check() -> ssl.SSLContext:
    """How Prolific's certificate is checked, made once per process and shared by every
    call: a new client would otherwise make its own, reading the whole CA bundle again
    (about 0.03 s of CPU a call). httpx's own default context, so ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR`` are honoured as they are at the first call."""
    return httpx2.create_ssl_context()


@dataclass
class ProlificClient:
    """Calls to one Prolific account, each recorded in ``store`` (when given)."""

    base_url: str
    token: str = field(repr=False)
    store: Store | None = None
    invite_id: str | None = None
    """The link the calls are made for (the call log is read per link)."""
    timeout_s: float = 30.0
    """The deadline of one request, its whole body included (and httpx's timeout of each
    connect and read before the body)."""
    tries: int = 4
    """The most tries of one call (the first one included)."""
    max_pages: int = MAX_PAGES
    workspace_id: str | None = None
    """The researcher's workspace (``PROLIFIC_WORKSPACE_ID``): where eligible people are
    counted and groups made (None: Prolific's current workspace of the token's user)."""
    hook_secret: str | None = field(default=None, repr=False)
    """The ``X-Hook-Secret`` of the last answer that carried one (a new subscription's)."""
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
        kwargs.setdefault("workspace_id", (env.get(WORKSPACE_ENV) or "").strip() or None)
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
        shape: Shape = "ignored",
        require: tuple[str, ...] = (),
    ) -> Any:
        """One API call: its JSON answer, checked (None for an empty one).

        Args:
            what: what the call is for, in English, as the call log shows it (a log stays
                English, like the command line).
            method: the HTTP method.
            path: the path under the base URL, with its query.
            body: the JSON body, if any.
            safe: whether repeating it does no harm (then a 5xx, a lost answer or one past
                its deadline is retried; a 429 is always retried: Prolific did not do it).
            expect: the statuses that mean it worked.
            shape: what the caller reads: nothing (any JSON or an empty body), an object,
                or a page of a list (see ``prolific_answers.check``).
            require: keys that must be there: on the object, or on each item of a page.

        Raises:
            ProlificError: refused, failed, unreachable, or still rate-limited after the
                tries.
            ProlificBadAnswer: it worked, but the answer is not what ``shape`` needs.
            ProlificAnswerLost: an unsafe call whose answer never came (whole).
        """
        tries, status, outcome = 0, None, "not sent"

        def attempt() -> Answer:
            nonlocal tries
            tries += 1
            return self._send(method, path, body)

        try:
            try:
                answer = self._retrying(safe)(attempt)
            except NEVER_SENT as err:
                outcome = f"not reached: {type(err).__name__}"
                raise ProlificError(self._unreachable()) from None
            except (httpx2.HTTPError, TooSlow) as err:
                outcome = f"answer lost: {type(err).__name__}"
                raise self._lost(what, path, err, safe, tries) from None
            status = answer.status
            if answer.hook_secret:
                self.hook_secret = answer.hook_secret
            if status not in expect:
                outcome = f"refused: {detail(answer)}"
                raise self._refusal(what, answer)
            data, problem = check(answer, shape, require)
            if problem is not None:
                outcome = problem.log
                raise ProlificBadAnswer(self._scrub(self._unsafe(problem.message, safe)), status)
            outcome = "ok"
            return data
        finally:
            self._record(what, method, path, status, outcome, tries)

    def call_object(
        self,
        what: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        safe: bool = True,
        require: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """:meth:`call` for an answer that is one JSON object with ``require``'s keys.

        Raises:
            ProlificBadAnswer: no JSON object, or a required key missing or empty.
        """
        answer = self.call(what, method, path, body, safe=safe, shape="object", require=require)
        return cast(dict[str, Any], answer)

    def pages(
        self, what: str, path: str, require: tuple[str, ...] = ()
    ) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list (each an object with ``require``'s keys),
        following ``_links.next`` on this server only (another host in a next link is never
        sent the token), at most ``max_pages`` pages.

        Raises:
            ProlificBadAnswer: a page that is not a page, a next link already followed (a
                loop), or more pages than ``max_pages``.
        """
        seen: set[str] = set()
        next_path: str | None = path
        while next_path:
            if len(seen) >= self.max_pages:
                raise ProlificBadAnswer(too_long(self._address(next_path), self.max_pages))
            seen.add(next_path)
            page = self.call(what, "GET", next_path, shape="page", require=require)
            yield from page["results"]
            href = next_href(page)
            here, next_path = next_path, self._local(href) if href else None
            if next_path in seen:
                raise ProlificBadAnswer(loops(self._address(here), self._scrub(str(href))))

    def _local(self, href: str) -> str:
        """A next-page link as a path on our base URL (another host is not trusted)."""
        if href.startswith(self.base_url + "/"):
            return href[len(self.base_url) :]
        parts = urlsplit(href)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def _send(self, method: str, path: str, body: Any) -> Answer:
        """One request, answered whole within ``timeout_s`` (raises ``TooSlow`` if not)."""
        deadline = time.monotonic() + self.timeout_s
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        with httpx2.Client(
            timeout=self.timeout_s, transport=self.transport, verify=certificate_check()
        ) as http:
            request = http.build_request(method, self.base_url + path, headers=headers, json=body)
            response = http.send(request, stream=True)
            return read(response, deadline, self._address(path))

    def _retrying(self, safe: bool) -> Retrying:
        """tenacity's loop under the rules in the module's docstring."""
        backoff = wait_exponential_jitter(initial=1.0, max=MAX_WAIT_S, exp_base=2.0, jitter=1.0)

        def again(state: RetryCallState) -> bool:
            outcome = state.outcome
            if outcome is None:
                return False
            if outcome.failed:
                err = outcome.exception()
                if isinstance(err, NEVER_SENT):
                    return True
                return safe and isinstance(err, (httpx2.HTTPError, TooSlow))
            answer: Answer = outcome.result()
            if answer.status not in RETRY_STATUS or (answer.status != 429 and not safe):
                return False
            asked = retry_after_s(answer.retry_after)
            return asked is None or asked <= MAX_WAIT_S

        def wait(state: RetryCallState) -> float:
            outcome = state.outcome
            if outcome is not None and not outcome.failed:
                asked = retry_after_s(outcome.result().retry_after)
                if asked is not None:
                    return asked
            return float(backoff(state))

        return Retrying(
            stop=stop_after_attempt(self.tries),
            wait=wait,
            retry=again,
            sleep=self.sleep,
            reraise=True,
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        )

    def _lost(self, what: str, path: str, err: Exception, safe: bool, tries: int) -> ProlificError:
        """The error for a call whose answer never came whole."""
        address = self._address(path)
        if safe and isinstance(err, TooSlow):
            return ProlificError(
                _(
                    "Prolific's answer at {address} did not come whole within {seconds} s "
                    "({size} bytes came), {tries} tries",
                    address=address,
                    seconds=f"{self.timeout_s:g}",
                    size=err.received,
                    tries=tries,
                )
            )
        if safe:
            return ProlificError(
                _(
                    "Prolific's answer at {address} broke off ({error}), {tries} tries",
                    address=address,
                    error=type(err).__name__,
                    tries=tries,
                )
            )
        if isinstance(err, TooSlow):
            return ProlificAnswerLost(
                _(
                    "Prolific's answer at {address} did not come whole within {seconds} s, so "
                    "the app cannot know whether the call was carried out; it will not send "
                    "it again.",
                    address=address,
                    seconds=f"{self.timeout_s:g}",
                )
            )
        return ProlificAnswerLost(
            _(
                "Prolific's answer to {what} never came, so the app cannot know "
                "whether it was done; it will not send it again.",
                what=what,
            )
        )

    def _unsafe(self, message: str, safe: bool) -> str:
        """A bad answer to a call that is not repeated: say it may have been done."""
        if safe:
            return message
        return _(
            "{problem}; Prolific may have carried it out: check in Prolific's app before "
            "running it again.",
            problem=message,
        )

    def _refusal(self, what: str, answer: Answer) -> ProlificError:
        status = answer.status
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
                    wait=answer.retry_after or "longer",
                    what=what,
                ),
                status,
            )
        return ProlificError(
            _(
                "Prolific answered {what} with HTTP {status}: {detail}",
                what=what,
                status=status,
                detail=self._scrub(detail(answer)),
            ),
            status,
        )

    def _address(self, path: str) -> str:
        """Where a call went, as an error names it (never the token)."""
        return self._scrub(self.base_url + path)

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
