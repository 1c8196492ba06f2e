"""The one resumable batch engine behind model runs and judging.

A batch is a plan of tasks, each with a deterministic key. The engine skips the keys
already stored, sends the rest through a bounded pool (:func:`run_bounded`: only ``workers``
requests in flight, refilled before each result is handled), and hands
each result to ``save`` in the calling thread as it arrives (one SQLite writer; a killed
process loses only the requests in flight). ``save`` says how the task ended, and the
engine keeps the one report type both the pages and the CLI show.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from koed_core.db.store import StoreUnavailable

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")
ProgressFn = Callable[[int, int], None]
Status = Literal["ok", "unscored", "failed", "cancelled"]


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


@dataclass(frozen=True)
class Outcome:
    """How one task ended: answered, answered without a usable verdict, failed, or
    cancelled before its answer came (nothing stored; asked again on a rerun)."""

    status: Status
    error_kind: str | None = None


@dataclass
class BatchReport:
    """What one pass of a batch did."""

    planned: int
    skipped: int = 0
    succeeded: int = 0
    unscored: int = 0
    failed: int = 0
    cancelled: int = 0
    """Tasks left unanswered because the job was cancelled (nothing stored for them)."""
    errors: Counter[str] = field(default_factory=Counter)
    unscored_reasons: Counter[str] = field(default_factory=Counter)
    """Why answers got no score, by kind (numbers as "n"): what a person fixes first."""
    run_id: str = ""
    """The run a model batch wrote to (empty for judging)."""
    stopped: bool = False
    """The pass ended early because it was asked to stop (cancelled)."""

    @property
    def finished(self) -> int:
        """Tasks accounted for so far, this pass and before."""
        return self.skipped + self.succeeded + self.unscored + self.failed

    @property
    def scored(self) -> int:
        """Judging's name for tasks that got a score."""
        return self.succeeded

    def add(self, outcome: Outcome) -> None:
        """Count one task's outcome."""
        if outcome.status == "ok":
            self.succeeded += 1
        elif outcome.status == "unscored":
            self.unscored += 1
            self.unscored_reasons[outcome.error_kind or "no score"] += 1
        elif outcome.status == "cancelled":
            self.cancelled += 1
        else:
            self.failed += 1
            self.errors[outcome.error_kind or "error"] += 1


def run_batch(
    tasks: Sequence[T],
    key: Callable[[T], Hashable],
    done: set[Hashable] | set[str] | set[tuple[str, str, str]],
    work: Callable[[T], R],
    save: Callable[[T, R], Outcome],
    *,
    workers: int,
    progress: ProgressFn | None = None,
    run_id: str = "",
    stop: Callable[[], bool] | None = None,
    watch: Callable[[BatchReport], None] | None = None,
) -> BatchReport:
    """Do every task whose key is not in ``done``; report what happened.

    Args:
        tasks: the whole plan, in order (the report counts skipped tasks too).
        key: a task's stored identity.
        done: keys already stored; those tasks are skipped.
        work: the slow call, run in a worker thread; must return failures as values.
        save: stores one result in this thread and says how the task ended.
        workers: at most this many calls in flight.
        progress: called with (finished, planned) at the start and as results arrive.
        run_id: copied into the report.
        stop: once true, no further task starts (a cancelled job); see ``run_bounded``.
        watch: given the whole report whenever ``progress`` is called (a job's failures
            and error kinds are shown while it runs).
    """
    pending = [t for t in tasks if key(t) not in done]
    report = BatchReport(planned=len(tasks), skipped=len(tasks) - len(pending), run_id=run_id)
    if progress:
        progress(report.finished, report.planned)
    if watch:
        watch(report)

    def handle(task: T, result: R) -> None:
        report.add(patiently(lambda: save(task, result)))

    def after() -> None:
        if progress:
            progress(report.finished, report.planned)
        if watch:
            watch(report)

    run_bounded(pending, work, handle, max(1, min(workers, len(pending) or 1)), after, stop)
    report.stopped = bool(stop and stop())
    return report


SAVE_PATIENCE_S = 600.0
"""How long a run waits for a database another process keeps busy before it stops."""


def patiently(write: Callable[[], S], patience_s: float = SAVE_PATIENCE_S) -> S:
    """``write()``, tried again while the database is busy (a backup, a long import in
    another process): an answer already paid for is stored late rather than dropped, and
    the run goes on. A full disk, or a lock held past ``patience_s``, is raised."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return write()
        except StoreUnavailable as err:
            if err.kind != "busy" or time.monotonic() >= deadline:
                raise
            time.sleep(1.0)


def workers_for(client: object, concurrency: int) -> int:
    """Requests in flight for a client: ``concurrency`` within the client's own cap; for a
    provider Batch API client, its batch size (every request waits in the batch)."""
    batch_size = getattr(client, "batch_size", None)
    if batch_size:
        return int(batch_size)
    cap = getattr(client, "max_concurrency", None)
    return min(concurrency, cap or concurrency)
