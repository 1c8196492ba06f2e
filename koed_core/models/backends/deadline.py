"""Each HTTP request to a model server ends: a total deadline per try, and a way out
when the run is cancelled while a request is still on its way.

httpx's timeouts are per read, so a server that sends one byte every few seconds holds a
request (and a job, and a worker's shutdown) for ever. ``DeadlineClient`` gives every try
``timeout_s`` in all, headers and body; running out is a read time-out, which the SDK
retries and then reports like any other. ``abandonable`` waits for a call in a helper
thread and gives it up a few seconds after the run's stop signal turns true, so Cancel
and SIGTERM take effect within seconds even while a server says nothing at all.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx2
import openai

from koed_core.models.client import ModelError

T = TypeVar("T")
POLL_S = 0.2
"""How often a waiting request looks at the run's stop signal."""


class _DeadlineStream(httpx2.SyncByteStream):
    """A response body that raises a read time-out once the try's deadline has passed."""

    def __init__(self, inner: httpx2.SyncByteStream, deadline: float, request: httpx2.Request):
        self._inner = inner
        self._deadline = deadline
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            if time.monotonic() > self._deadline:
                message = "the reply took longer than allowed"
                raise httpx2.ReadTimeout(message, request=self._request)
            yield chunk

    def close(self) -> None:
        self._inner.close()


class DeadlineClient(openai.DefaultHttpxClient):
    """The SDK's own HTTP client (its defaults, proxies from the environment), with a
    total deadline of ``total_s`` for each try of a non-streaming request."""

    def __init__(self, total_s: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._total_s = total_s

    def send(self, request: httpx2.Request, *, stream: bool = False, **kwargs: Any) -> Any:
        deadline = time.monotonic() + self._total_s
        response = super().send(request, stream=True, **kwargs)
        if stream:  # a streamed chat shows its text as it comes; the reader can stop it
            return response
        # the body's reads wait at most what is left of the try, not a fresh timeout each
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            timeouts["read"] = max(0.05, deadline - time.monotonic())
        response.stream = _DeadlineStream(response.stream, deadline, request)  # type: ignore[arg-type]
        try:
            response.read()
        except BaseException:
            response.close()
            raise
        return response


def abandonable(
    call: Callable[[], T], stop: Callable[[], bool] | None, grace_s: float, who: str
) -> T:
    """``call()``, unless ``stop`` turns true and the call is still running ``grace_s``
    later: then a ``cancelled`` ModelError, and the call is left to end on its own (its
    own deadline bounds it; its answer is dropped).

    Without a stop signal the call runs in this thread, as before.
    """
    if stop is None:
        return call()
    box: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = err
        finally:
            finished.set()

    threading.Thread(target=run, name="koed-request", daemon=True).start()
    stopped_at: float | None = None
    while not finished.wait(POLL_S):
        if stopped_at is None and stop():
            stopped_at = time.monotonic()
        if stopped_at is not None and time.monotonic() - stopped_at >= grace_s:
            raise ModelError(
                "cancelled", f"{who}: request given up (the run was cancelled or is stopping)"
            )
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
