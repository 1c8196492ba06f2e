"""Retries of the OpenAI-compatible calls, live and through the provider's Batch API.

The project retries through one maintained library, tenacity: the Prolific client
(``koed_core.rating.crowd.prolific_client``), the live chat client and the Batch API
client all build a ``tenacity.Retrying``; the SDK is made with ``max_retries=0`` so that
no second loop retries under this one. The rules are the SDK's, which the live client
followed before (openai's ``_base_client``): a connection error, a time-out, HTTP 408,
409, 429 and 5xx are retried, unless the server says ``x-should-retry: false``; a
``Retry-After`` (or ``retry-after-ms``) up to ``MAX_RETRY_AFTER_S`` is waited for, a
longer one is not retried at all; otherwise the waits grow from 0.5 s, doubling to at
most 8 s, with a little jitter.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import TypeVar

import openai
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

T = TypeVar("T")

MAX_RETRY_AFTER_S = 120.0
"""The longest ``Retry-After`` waited for: a server asking for more is not retried."""
RETRY_STATUS = (408, 409, 429)
"""Statuses below 500 worth another try: time-out, lock conflict, rate limit."""
BACKOFF = wait_exponential_jitter(initial=0.5, max=8.0, exp_base=2.0, jitter=0.25)


def nap(seconds: float) -> None:
    """The wait between two tries (tests replace it to count the waits, not to sleep)."""
    time.sleep(seconds)


def retry_after_s(err: BaseException) -> float | None:
    """The wait a failed answer asks for, in seconds (``retry-after-ms`` first, then
    ``Retry-After`` as seconds or an HTTP date); None when it asks for none."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        when = email.utils.parsedate_tz(value)
        return None if when is None else email.utils.mktime_tz(when) - time.time()


def worth_retrying(err: BaseException) -> bool:
    """Whether another try could get a different answer (see the module's docstring)."""
    if isinstance(err, openai.APIConnectionError):  # time-outs included
        return True
    if not isinstance(err, openai.APIStatusError):
        return False
    asked = retry_after_s(err)
    if asked is not None and asked > MAX_RETRY_AFTER_S:
        return False
    said = err.response.headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return err.status_code in RETRY_STATUS or err.status_code >= 500


def _wait(state: RetryCallState) -> float:
    failed = state.outcome.exception() if state.outcome is not None else None
    asked = retry_after_s(failed) if failed is not None else None
    if asked is not None and 0 < asked <= MAX_RETRY_AFTER_S:
        return asked
    return float(BACKOFF(state))


class Tried(RuntimeError):
    """A call that failed for good, with how many tries it took (the error is its cause)."""

    def __init__(self, err: openai.OpenAIError, tries: int) -> None:
        super().__init__(f"{type(err).__name__} after {tries} tries")
        self.err = err
        self.tries = tries


def with_retries(call: Callable[[], T], tries: int) -> T:
    """``call()`` under the rules above, at most ``tries`` times.

    Raises:
        Tried: the SDK's error of the last try and the number of tries made, when none
            worked (another exception is raised as it is, untried again).
    """
    retrying = Retrying(
        stop=stop_after_attempt(max(1, tries)),
        wait=_wait,
        retry=retry_if_exception(worth_retrying),
        sleep=lambda seconds: nap(seconds),
        reraise=True,
    )
    try:
        return retrying(call)
    except openai.OpenAIError as err:
        raise Tried(err, int(retrying.statistics.get("attempt_number", 1))) from err
