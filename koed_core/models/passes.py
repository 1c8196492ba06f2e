"""The one resumable engine behind model runs and judging: a pass over a plan of tasks.

A pass is a plan of tasks, each with a deterministic key (not a "batch": that word is a
worker's share of items, and the provider's Batch API is a ``ProviderBatchClient``). The
engine skips the keys already stored, sends the rest through a bounded pool
(:func:`run_bounded`: only ``workers`` requests in flight, refilled before each result is
handled), and hands
each result to ``save`` in the calling thread as it arrives (one SQLite writer; a killed
process loses only the requests in flight). ``save`` says how the task ended, and the
engine keeps the one report type both the pages and the CLI show.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_fixed

from koed_core.db.store import StoreUnavailable
from koed_core.errors import KoedError

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
    after_wake: Callable[[], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Call ``work`` on every item in a pool of ``workers`` threads; ``handle`` each result
    in this thread as it completes; ``after_wake`` after each wake-up (progress bars).

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
            if after_wake:
                after_wake()


@dataclass(frozen=True)
class Outcome:
    """How one task ended: answered, answered without a usable verdict, failed, or
    cancelled before its answer came (nothing stored; asked again on a rerun)."""

    status: Status
    error_kind: str | None = None
    detail: str | None = field(default=None, compare=False)
    """A failure's sentence (the ModelError's message): what a halted pass quotes."""


@dataclass
class PassReport:
    """What one pass did."""

    planned: int
    skipped: int = 0
    succeeded: int = 0
    unscored: int = 0
    failed: int = 0
    cancelled: int = 0
    """Tasks left unanswered because the job was cancelled (nothing stored for them)."""
    elsewhere: int = 0
    """Tasks another process had locked (it asks them; counted among ``skipped``)."""
    errors: Counter[str] = field(default_factory=Counter)
    unscored_reasons: Counter[str] = field(default_factory=Counter)
    """Why answers got no score, by kind (numbers as "n"): what a person fixes first."""
    run_id: str = ""
    """The run a model pass wrote to (empty for judging)."""
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


NOT_AN_API_IN_A_ROW = 3
"""Replies in a row that are not the API's (HTML, other JSON), with no answer before them
in the pass, after which the pass stops: a wrong base URL fails every item the same way."""
AUTH_IN_A_ROW = 3
"""Refused keys in a row, with no answer before them in the pass, after which it stops."""
SERVER_SILENCE_S = 300.0
"""How long a pass goes on while its server answers nothing (every item failing on time-outs,
refused connections, 5xx, rate limits) before it stops: without it a server that hangs
costs each item its tries times the time-out (about 5 minutes), over the whole benchmark."""
SERVER_SIDE_KINDS = frozenset(
    {"timeout", "connection", "server", "rate_limit", "not_api", "response", "auth"}
)


class ServerUnusable(KoedError):
    """A pass stopped early because its server answers nothing usable; what was stored
    before stays, and the same command resumes once the server is fixed."""


class Breaker:
    """Watches a pass's outcomes and says, with a sentence, when going on is pointless."""

    def __init__(self, silence_s: float | None = None) -> None:
        self.silence_s = SERVER_SILENCE_S if silence_s is None else silence_s
        self.answered = 0
        self.in_a_row: Counter[str] = Counter()
        self.failed_since_answer = 0
        self.last_answer = time.monotonic()
        self.reason: str | None = None

    def see(self, outcome: Outcome) -> None:
        """Count one outcome; set ``reason`` once the pass should stop."""
        if outcome.status in ("ok", "unscored"):
            self.answered += 1
            self.in_a_row.clear()
            self.failed_since_answer = 0
            self.last_answer = time.monotonic()
            return
        if outcome.status != "failed":
            return
        kind = (outcome.error_kind or "error").removeprefix("speaker ")
        self.in_a_row = Counter({kind: self.in_a_row[kind] + 1})
        detail = outcome.detail or kind
        if kind not in SERVER_SIDE_KINDS:
            return
        self.failed_since_answer += 1
        quiet = time.monotonic() - self.last_answer
        if self.reason is None and not self.answered:
            if kind == "not_api" and self.in_a_row[kind] >= NOT_AN_API_IN_A_ROW:
                self.reason = (
                    f"Stopped after {self.in_a_row[kind]} replies in a row that were not the "
                    f"API's answer, and none that was. The last: {detail}"
                )
            elif kind == "auth" and self.in_a_row[kind] >= AUTH_IN_A_ROW:
                self.reason = f"Stopped: the key was refused {self.in_a_row[kind]} times. {detail}"
        if self.reason is None and quiet >= self.silence_s:
            self.reason = (
                f"Stopped: the server has answered nothing for {quiet / 60:.0f} minutes "
                f"({self.failed_since_answer} items failed in that time; the limit is "
                f"{self.silence_s / 60:.0f} minutes). The last failure: {detail}"
            )


@dataclass
class PassHooks:
    """How a pass over items shows its progress and learns it should stop: a terminal's
    progress bar, a worker writing to a job's row, a test's list."""

    progress: ProgressFn | None = None
    """Called with (finished, planned) at the start and as results arrive."""
    stop: Callable[[], bool] | None = None
    """Once true, no further task starts (a cancelled job); see ``run_bounded``."""
    watch: Callable[[PassReport], None] | None = None
    """Given the whole report whenever ``progress`` is called (a job's failures and error
    kinds are shown while it runs)."""


NO_HOOKS = PassHooks()


def run_pass(
    tasks: Sequence[T],
    done: Callable[[T], bool],
    work: Callable[[T], R],
    save: Callable[[T, R], Outcome],
    *,
    workers: int,
    hooks: PassHooks = NO_HOOKS,
    run_id: str = "",
    lock: Callable[[T], bool] | None = None,
) -> PassReport:
    """Do every task not ``done`` already; report what happened.

    Args:
        tasks: the whole plan, in order (the report counts skipped tasks too).
        done: whether a task is stored already (it is skipped).
        work: the slow call, run in a worker thread; must return failures as values.
        save: stores one result in this thread and says how the task ended.
        workers: at most this many calls in flight.
        hooks: progress, cancel and the running report.
        run_id: copied into the report.
        lock: called in this thread just before a task is sent; False means another
            process holds it (or has answered it since ``done`` was read): it is not
            sent, and counts as skipped.

    Raises:
        ServerUnusable: the pass was stopped by its :class:`Breaker` (every reply so far
            not the API's, a refused key, or a server silent for ``SERVER_SILENCE_S``).
    """
    progress, stop, watch = hooks.progress, hooks.stop, hooks.watch
    pending = [t for t in tasks if not done(t)]
    report = PassReport(planned=len(tasks), skipped=len(tasks) - len(pending), run_id=run_id)
    if progress:
        progress(report.finished, report.planned)
    if watch:
        watch(report)

    breaker = Breaker()

    def handle(task: T, result: R) -> None:
        outcome = patiently(lambda: save(task, result))
        report.add(outcome)
        breaker.see(outcome)

    def after() -> None:
        if progress:
            progress(report.finished, report.planned)
        if watch:
            watch(report)

    def halt() -> bool:
        return breaker.reason is not None or bool(stop and stop())

    def locked() -> Iterator[T]:
        for task in pending:
            if lock is None or patiently(lambda: lock(task)):  # noqa: B023 - called at once
                yield task
            else:
                report.skipped += 1
                report.elsewhere += 1

    width = max(1, min(workers, len(pending) or 1))
    run_bounded(locked(), work, handle, width, after, halt)
    report.stopped = bool(stop and stop())
    if breaker.reason is not None and not report.stopped:
        left = report.planned - report.finished
        raise ServerUnusable(
            f"{breaker.reason.rstrip('.')}. {report.succeeded + report.unscored} answered and "
            f"{report.failed} failed in this pass; {left} not asked. What was stored is "
            "kept: fix the server or its address, then run the same command again to go on."
        )
    return report


SAVE_PATIENCE_S = 600.0
"""How long a run waits for a database another process keeps busy before it stops."""


def patiently(write: Callable[[], S], patience_s: float = SAVE_PATIENCE_S) -> S:
    """``write()``, tried again while the database is busy (a backup, a long import in
    another process): an answer already paid for is stored late rather than dropped, and
    the run goes on. A full disk, or a lock held past ``patience_s``, is raised. The
    loop is tenacity's, as every retry in the project."""
    retrying = Retrying(
        stop=stop_after_delay(patience_s),
        wait=wait_fixed(1.0),
        retry=retry_if_exception(lambda e: isinstance(e, StoreUnavailable) and e.kind == "busy"),
        reraise=True,
    )
    return retrying(write)


def workers_for(client: object, concurrency: int) -> int:
    """Requests in flight for a client: ``concurrency`` within the client's own cap; for a
    provider Batch API client, its batch size (every request waits in the batch)."""
    batch_size = getattr(client, "batch_size", None)
    if batch_size:
        return int(batch_size)
    cap = getattr(client, "max_concurrency", None)
    return min(concurrency, cap or concurrency)
