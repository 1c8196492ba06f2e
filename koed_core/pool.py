"""A bounded worker pool whose results are handled by the calling thread only.

Batch runs and judging both send many slow requests and write each answer to SQLite as
it arrives. Only ``workers`` requests are ever in flight (a killed process loses at most
those), the pool is refilled before each result is handled (so it never waits on a
write), and all writing happens in the caller's thread (one SQLite writer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def run_bounded(
    items: Iterable[T],
    work: Callable[[T], R],
    handle: Callable[[T, R], None],
    workers: int,
    after_batch: Callable[[], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Call ``work`` on every item in a pool of ``workers`` threads; ``handle`` each result
    in this thread as it completes; ``after_batch`` after each wake-up (progress bars).

    Once ``stop()`` is true no further item is started; those in flight still finish and
    are handled, so a cancelled job keeps every answer it paid for.
    """
    queue = iter(items)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        running: dict[Future[R], T] = {}

        def submit_next() -> None:
            if stop is not None and stop():
                return
            item = next(queue, None)
            if item is not None:
                running[pool.submit(work, item)] = item

        for _ in range(max(1, workers)):
            submit_next()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                item = running.pop(future)
                submit_next()
                handle(item, future.result())
            if after_batch:
                after_batch()
