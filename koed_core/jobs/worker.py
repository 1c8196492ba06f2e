"""``koed worker``: the process that carries out queued jobs, outside any page.

It beats a heartbeat into the database, takes the oldest queued job (or a running one
whose worker died) and executes it with the engine the CLI uses, writing progress to the
job's row. Closing a tab or restarting Streamlit does not touch it; if the worker itself
dies, the next worker takes its jobs over and, since every stored result is skipped,
resumes them where their results stop. SIGTERM (or Ctrl-C) stops gracefully: no new
request starts, answers arriving in the next seconds are stored, a request still out after
that is given up (a silent server cannot hold the worker), and the unfinished jobs go back
to the queue.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_fixed,
)

from koed_core.db import Store
from koed_core.db.jobs import Job, Jobs
from koed_core.errors import KoedError
from koed_core.i18n import N_
from koed_core.jobs.kinds import Environment, Hooks, execute, params_of
from koed_core.models.passes import PassReport

BEAT_S = 2.0
RECORD_RETRY_S = 2.0
T = TypeVar("T")
PROGRESS_EVERY_S = 0.5
DISK_FULL = N_(
    "the disk is full (the database could not store more): free some space, then start the "
    "job again; what was stored is kept"
)
"""A failure's reason, stored in English; a page shows it in its reader's language."""


def log(message: str) -> None:
    """One timestamped line on the worker's output (its log file when the app started it)."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}", flush=True)


class Worker:
    """Takes jobs from one database and runs up to ``parallel`` of them at once."""

    def __init__(
        self,
        store: Store,
        env: Environment,
        *,
        parallel: int = 2,
        idle_exit_s: float | None = None,
        tick_s: float = 0.5,
        record_for_s: float = 600.0,
        record_retry_s: float = RECORD_RETRY_S,
    ) -> None:
        self.store = store
        self.env = env
        self.jobs = Jobs(store)
        self.id = f"{socket.gethostname()}:{os.getpid()}"
        self.parallel = max(1, parallel)
        self.idle_exit_s = idle_exit_s
        self.tick_s = tick_s
        self.record_for_s = record_for_s
        self.record_retry_s = record_retry_s
        self.stopping = threading.Event()
        self._running: dict[int, threading.Thread] = {}

    def serve(self) -> int:
        """Work until stopped (or idle for ``idle_exit_s``); returns an exit status."""
        beat = threading.Thread(target=self._beat, name="koed-worker-beat", daemon=True)
        with suppress(sqlite3.Error, OSError):  # a full disk: the beat thread tries again
            self.jobs.beat(self.id, os.getpid(), socket.gethostname())
        beat.start()
        log(f"worker {self.id} on {self.store.path}: up to {self.parallel} jobs at once")
        idle_since = time.monotonic()
        try:
            while not self.stopping.is_set():
                for job_id, thread in list(self._running.items()):
                    if not thread.is_alive():
                        del self._running[job_id]
                while len(self._running) < self.parallel and not self.stopping.is_set():
                    try:
                        job = self.jobs.claim(self.id)
                    except (sqlite3.Error, OSError) as err:  # full disk, long lock: later
                        log(f"cannot take a job now ({err}); trying again")
                        break
                    if job is None:
                        break
                    self._start(job)
                if self._running:
                    idle_since = time.monotonic()
                elif self.idle_exit_s is not None and (
                    time.monotonic() - idle_since >= self.idle_exit_s
                ):
                    log(f"no job for {self.idle_exit_s:.0f} s: stopping")
                    break
                self.stopping.wait(self.tick_s)
        finally:
            self.stopping.set()
            for thread in self._running.values():
                thread.join()
            with suppress(Exception):  # a full disk: the heartbeat ages and others take over
                self.jobs.leave(self.id)
        return 0

    def _beat(self) -> None:
        while not self.stopping.wait(BEAT_S):
            with suppress(Exception):  # a busy database delays a beat; the next one comes
                self.jobs.beat(self.id, os.getpid(), socket.gethostname(), list(self._running))

    def _start(self, job: Job) -> None:
        took_over = " (taken over from a stopped worker)" if job.done else ""
        log(f"job {job.id} started{took_over}: {job.label}")
        thread = threading.Thread(target=self.run_job, args=(job,), name=f"koed-job-{job.id}")
        self._running[job.id] = thread
        thread.start()

    def run_job(self, job: Job) -> None:
        """Execute one claimed job and record how it ended (even after a full disk)."""
        stop = _throttled(
            lambda: (
                self.stopping.is_set()
                or self.jobs.cancel_requested(job.id)
                or not self.jobs.still_ours(job.id, self.id)
            )
        )
        reporter = _Reporter(self.jobs, job.id)
        hooks = Hooks(watch=reporter.watch, step=reporter.step, say=reporter.say, stop=stop)
        try:
            result = execute(params_of(job), self.store, self.env, hooks)
        except KoedError as err:
            message = str(err)
            self._fail(job.id, message)
            log(f"job {job.id} failed: {message}")
            return
        except Exception as err:  # noqa: BLE001 - a job's bug must not take the worker down
            traceback.print_exc()
            reason = failure_reason(err)
            self._fail(job.id, reason)
            log(f"job {job.id} failed: {reason}")
            return
        with suppress(Exception):  # progress only: the outcome below is what must land
            reporter.flush()
        if self._record(job.id, "taken over?", lambda: not self.jobs.still_ours(job.id, self.id)):
            log(f"job {job.id} stopped here: another worker runs it now, or it has ended")
            return
        if self._record(job.id, "cancelled?", lambda: self.jobs.cancel_requested(job.id)):
            self._record(
                job.id,
                "cancelled",
                lambda: self.jobs.finish(
                    job.id, "cancelled", message=result.summary, result=result.data
                ),
            )
            log(f"job {job.id} cancelled: {result.summary}")
        elif self.stopping.is_set() and result.cancelled:
            self._record(job.id, "queued", lambda: self.jobs.requeue(job.id))
            log(f"job {job.id} back in the queue (worker stopping): {result.summary}")
        else:
            self._record(
                job.id,
                "finished",
                lambda: self.jobs.finish(
                    job.id, "finished", message=result.summary, result=result.data
                ),
            )
            log(f"job {job.id} finished: {result.summary}")

    def _fail(self, job_id: int, reason: str) -> None:
        if self._record(job_id, "taken over?", lambda: not self.jobs.still_ours(job_id, self.id)):
            return  # another worker carries it on: its outcome is the job's
        self._record(job_id, "failed", lambda: self.jobs.finish(job_id, "failed", reason=reason))

    def _record(self, job_id: int, what: str, write: Callable[[], T]) -> T | None:
        """Write a job's outcome, waiting for the database if it cannot take it now (a full
        disk, a long lock): a job must never stay "running" because its end was lost.
        After ``record_for_s`` it gives up; the next worker then finds the job orphaned."""

        def first_wait(state: RetryCallState) -> None:
            if state.attempt_number == 1 and state.outcome is not None:
                err = state.outcome.exception()
                log(f"job {job_id}: could not record '{what}' yet ({err}); trying again")

        retrying = Retrying(
            stop=stop_after_delay(self.record_for_s),
            wait=wait_fixed(self.record_retry_s),
            retry=retry_if_exception_type((sqlite3.Error, OSError)),
            before_sleep=first_wait,
            reraise=True,
        )
        try:
            return retrying(write)
        except (sqlite3.Error, OSError) as err:
            log(f"job {job_id}: could not record '{what}' ({err}); giving up")
            return None


def failure_reason(err: BaseException) -> str:
    """A job's failure in words: a full disk says so, and what to do."""
    text = str(err)
    if isinstance(err, sqlite3.OperationalError | OSError) and (
        "disk is full" in text or getattr(err, "errno", None) == errno.ENOSPC
    ):
        return DISK_FULL
    return f"{type(err).__name__}: {text}"


class _Reporter:
    """Writes a job's progress to its row, at most every ``PROGRESS_EVERY_S``."""

    def __init__(self, jobs: Jobs, job_id: int) -> None:
        self.jobs = jobs
        self.job_id = job_id
        self.lock = threading.Lock()
        self.steps: dict[str, PassReport] = {}
        self.message: str | None = None
        self.start = time.monotonic()
        self.first_done: int | None = None
        self.last = 0.0

    def watch(self, report: PassReport) -> None:
        self.step("", report)

    def step(self, name: str, report: PassReport) -> None:
        with self.lock:
            self.steps[name] = report
            if time.monotonic() - self.last >= PROGRESS_EVERY_S or report.finished == (
                report.planned
            ):
                self._write()

    def say(self, message: str) -> None:
        with self.lock:
            self.message = message
            self._write()

    def flush(self) -> None:
        with self.lock:
            self._write()

    def _write(self) -> None:
        reports = list(self.steps.values())
        done = sum(r.finished for r in reports)
        total = sum(r.planned for r in reports)
        if self.first_done is None and reports:
            self.first_done = done  # what was stored before this pass
        elapsed = time.monotonic() - self.start
        new = done - (self.first_done or 0)
        errors: dict[str, int] = {}
        for r in reports:
            for kind, n in r.errors.items():
                errors[kind] = errors.get(kind, 0) + n
        self.jobs.progress(
            self.job_id,
            done=done,
            total=total,
            failed=sum(r.failed for r in reports),
            errors=errors,
            rate=new / elapsed * 60 if elapsed > 0 and new else None,
            message=self.message,
        )
        self.last = time.monotonic()


def _throttled(check: Callable[[], bool], every_s: float = 0.5) -> Callable[[], bool]:
    """``check`` asked at most every ``every_s`` (it reads the database); once true, true."""
    state = {"at": 0.0, "value": False}

    def ask() -> bool:
        if not state["value"] and time.monotonic() - float(state["at"]) >= every_s:
            state["value"] = bool(check())
            state["at"] = time.monotonic()
        return bool(state["value"])

    return ask


def install_signals(worker: Worker) -> None:
    """SIGTERM and SIGINT stop the worker gracefully (in the main thread only)."""

    def handler(signum: int, frame: object) -> None:
        log("stopping: no new requests; those in flight are stored")
        worker.stopping.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


_spawn_lock = threading.Lock()
_last_spawn: dict[str, float] = {}
SPAWN_GRACE_S = 15.0
"""A worker just started needs a moment to beat; no second one is started meanwhile."""


def _child_env() -> dict[str, str]:
    """The environment with this checkout first on the import path: the worker runs the
    same code as the app even where the package is not installed (a bare clone), or an
    installed copy points elsewhere."""
    from koed_core.paths import PROJECT_ROOT

    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(PROJECT_ROOT), path) if p)}


def ensure_worker(store: Store, cwd: Path | None = None) -> bool:
    """Start a worker for this database if jobs wait and none is alive; True if started.

    The worker runs in its own session (a Streamlit restart does not stop it), logs to
    ``<database>.worker.log`` (owner-only) and exits after two idle minutes.
    """
    jobs = Jobs(store)
    with _spawn_lock:
        if time.monotonic() - _last_spawn.get(store.path, -SPAWN_GRACE_S) < SPAWN_GRACE_S:
            return False
        if jobs.live_workers() or not jobs.claimable():
            return False
        _last_spawn[store.path] = time.monotonic()
    log_path = Path(store.path + ".worker.log")
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
            [
                sys.executable,
                "-m",
                "koed_core.cli",
                "worker",
                f"--db={store.path}",  # one argument: a path starting with '-' stays a path
                "--idle-exit",
                "120",
            ],
            cwd=cwd or Path.cwd(),
            env=_child_env(),
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        os.close(fd)
    return True
