"""What the app takes from Prolific's API: every answer read whole within a deadline and
checked before anything uses it.

A researcher's real launch met a next-page link that pointed to itself, a body that
trickled in a byte a second, and 200 answers that were an HTML page, cut-off JSON or a
JSON list from Prolific's address; each ended in a Python exception far from its cause.
Here each of them is one sentence that names the address (base URL and path, never the
token) and what came back: the status, the content type and a short literal excerpt.

Checks, in order, of an answer that means "done" (a 2xx): an empty body is accepted only
where the caller reads nothing from it; otherwise the content type must be JSON
(``application/json`` or ``+json``), the body must parse, and it must have the shape the
caller asked for: an object (with the keys it names), or a page of a list (an object whose
``results`` is a list of objects, with the keys named on each, and whose
``_links.next.href`` is a string or null).
"""

from __future__ import annotations

import email.utils
import json
import time
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import httpx2

from koed_core.i18n import N_, _
from koed_core.rating.crowd.links import CrowdError

Shape = Literal["ignored", "object", "page"]
"""What a caller reads from an answer: nothing (any JSON, or an empty body), one object,
or one page of a list."""

EXCERPT_CHARS = 80
"""How much of a body an error quotes: enough to tell an HTML page from cut-off JSON."""


class ProlificError(CrowdError):
    """A Prolific call that failed, in one sentence fit to show (never the token)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ProlificAnswerLost(ProlificError):
    """A call that is not safe to repeat was sent, and its answer never came: Prolific may
    or may not have done it, so it is not sent again."""


class ProlificBadAnswer(ProlificError):
    """Prolific's address answered, but not with what the call needs: not JSON, cut-off
    JSON, the wrong shape, a missing key, or a list that never ends."""


class TooSlow(Exception):
    """The answer did not arrive whole before the request's deadline."""

    def __init__(self, received: int) -> None:
        super().__init__(f"{received} bytes before the deadline")
        self.received = received


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, read whole: all a check or an error message needs."""

    status: int
    content_type: str
    body: bytes
    reason: str
    retry_after: str | None
    address: str
    """Base URL and path (with its query) of the request; never holds the token."""
    hook_secret: str | None = None
    """The ``X-Hook-Secret`` header of a new webhook subscription's answer (the value its
    confirmation sends back; webhooks/subscribing)."""

    def excerpt(self) -> str:
        """The body's beginning, literally, on one line (or a word for an empty one)."""
        text = " ".join(self.body[: EXCERPT_CHARS * 4].decode("utf-8", "replace").split())
        if not text:
            return _("an empty body")
        cut = text[:EXCERPT_CHARS] + ("…" if len(text) > EXCERPT_CHARS else "")
        return f"«{cut}»"

    def kind(self) -> str:
        """The content type as the server named it (without parameters), or a word."""
        return self.content_type.split(";", 1)[0].strip() or _("no content type")


class Problem(NamedTuple):
    """Why an answer cannot be used: a line for the call log (English, like every log)
    and the sentence a person reads (in their language)."""

    log: str
    message: str


def read(response: httpx2.Response, deadline: float, address: str) -> Answer:
    """The whole answer, its body read by chunks against ``deadline`` (``time.monotonic``):
    httpx's timeouts bound each read, so a server sending one byte at a time would
    otherwise hold the call for as long as it likes.

    Raises:
        TooSlow: the body was not complete at the deadline.
    """
    timeouts = response.request.extensions.get("timeout")
    if isinstance(timeouts, dict):  # the body's reads wait at most what is left
        timeouts["read"] = max(0.05, deadline - time.monotonic())
    chunks: list[bytes] = []
    try:
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise TooSlow(sum(map(len, chunks)))
    except httpx2.ReadTimeout:
        raise TooSlow(sum(map(len, chunks))) from None
    finally:
        response.close()
    return Answer(
        status=response.status_code,
        content_type=response.headers.get("Content-Type", ""),
        body=b"".join(chunks),
        reason=response.reason_phrase,
        retry_after=response.headers.get("Retry-After"),
        address=address,
        hook_secret=response.headers.get("X-Hook-Secret"),
    )


def check(
    answer: Answer, shape: Shape, require: tuple[str, ...] = ()
) -> tuple[Any, Problem | None]:
    """The answer's JSON, or why it cannot be used as ``shape`` (with ``require``'s keys:
    on the object, or on each item of a page)."""
    where = _("Prolific's answer at {address}", address=answer.address)
    if not answer.body:
        if shape == "ignored":
            return None, None
        said = _("{where} is empty", where=where)
        return None, _problem(answer, "empty", said)
    if not _is_json(answer.content_type):
        said = _("{where} is not JSON", where=where)
        return None, _problem(answer, f"not JSON ({answer.kind()})", said)
    try:
        data = json.loads(answer.body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None, _problem(
            answer, "cut-off JSON", _("{where} is not complete JSON", where=where)
        )
    if shape == "ignored":
        return data, None
    if not isinstance(data, dict):
        found = _kind_of(data)
        said = _("{where} is {found} where an object was due", where=where, found=_(found))
        return None, _problem(answer, f"{found} where an object was due", said)
    if shape == "page":
        return data, _page_problem(answer, where, data, require)
    return data, _missing(answer, where, data, require)


def _page_problem(
    answer: Answer, where: str, page: dict[str, Any], require: tuple[str, ...]
) -> Problem | None:
    results = page.get("results")
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        said = _("{where} has no list of objects under results", where=where)
        return _problem(answer, "no list of results", said)
    links = page.get("_links")
    nxt = links.get("next") if isinstance(links, dict) else None
    href = nxt.get("href") if isinstance(nxt, dict) else None
    readable = (links is None or isinstance(links, dict)) and (nxt is None or isinstance(nxt, dict))
    if not readable or not (href is None or isinstance(href, str)):
        said = _("{where} has a next-page link the app cannot read", where=where)
        return _problem(answer, "unreadable _links.next", said)
    for item in results:
        if problem := _missing(answer, where, item, require):
            return problem
    return None


def loops(address: str, href: str) -> str:
    """The sentence for a page at ``address`` whose next link ``href`` was read before."""
    return _(
        "Prolific's list at {address} links back to a page already read ({href}): the "
        "app stopped there instead of reading it again",
        address=address,
        href=href,
    )


def too_long(address: str, pages: int) -> str:
    """The sentence for a list whose page at ``address`` is past the cap of ``pages``."""
    return _(
        "Prolific's list at {address} goes on past {pages} pages: the app stopped "
        "there rather than read a list that may never end",
        address=address,
        pages=pages,
    )


def next_href(page: dict[str, Any]) -> str | None:
    """The next page's link of a page ``check`` accepted, or None at the end."""
    links = page.get("_links") or {}
    nxt = links.get("next")
    href = nxt.get("href") if isinstance(nxt, dict) else None
    return str(href) if href else None


def _missing(
    answer: Answer, where: str, data: dict[str, Any], require: tuple[str, ...]
) -> Problem | None:
    gone = [k for k in require if data.get(k) in (None, "")]
    if not gone:
        return None
    return _problem(answer, f"no {gone[0]}", _("{where} has no {key}", where=where, key=gone[0]))


def _problem(answer: Answer, log: str, said: str) -> Problem:
    """The call log's line, and the sentence: what is wrong, then what came back."""
    sentence = _(
        "{problem} (HTTP {status}, {kind}): {excerpt}",
        problem=said,
        status=answer.status,
        kind=answer.kind(),
        excerpt=answer.excerpt(),
    )
    return Problem(f"unusable answer: {log}", sentence)


def _is_json(content_type: str) -> bool:
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


KINDS = {
    list: N_("a JSON list"),
    str: N_("a JSON string"),
    type(None): N_("JSON null"),
}
"""What came where an object was due, by its Python type (other types: a number or a
boolean)."""


def _kind_of(data: Any) -> str:
    return KINDS.get(type(data), N_("a JSON number or boolean"))


def detail(answer: Answer) -> str:
    """The reason Prolific gave for a refusal, short (``error.detail`` or ``detail``), or
    the body's beginning, or the status's reason."""
    try:
        data = json.loads(answer.body) if answer.body else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = answer.body.decode("utf-8", "replace")
    if isinstance(data, dict):
        error = data.get("error")
        inner: dict[str, Any] = error if isinstance(error, dict) else data
        said = inner.get("detail") or inner.get("title") or inner
        return " ".join(str(said).split())[:200]
    return " ".join(str(data or answer.reason).split())[:200]


def retry_after_s(value: str | None) -> float | None:
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
