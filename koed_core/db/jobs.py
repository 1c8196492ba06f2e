"""Jobs, the workers that run them, and the provider batches they sent.

A job's whole life is in the database (queued, running with its counts, finished,
failed with the reason, cancelled), so any page, the CLI and a restarted worker read the
same truth. Claiming is one ``BEGIN IMMEDIATE`` transaction: two workers never take the
same job. A running job whose worker stopped beating is taken over (and resumes, since
every result it stored is skipped).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from koed_core.db.owners import dead_here as _dead_here
from koed_core.db.store import Store
from koed_core.db.types import now
from koed_core.errors import KoedError
from koed_core.i18n import _

JobState = Literal["queued", "running", "finished", "failed", "cancelled"]
ENDED = ("finished", "failed", "cancelled")
STALE_AFTER_S = 20.0
"""A running job whose worker has not beaten for this long is taken over."""


class JobError(KoedError):
    """A job that cannot be found or changed as asked."""


@dataclass(frozen=True)
class Job:
    """One row of ``jobs``, as pages and the CLI show it."""

    id: int
    kind: str
    label: str
    params: dict[str, Any]
    state: JobState
    created_by: str | None
    created: str
    started: str | None
    ended: str | None
    done: int
    total: int
    failed: int
    errors: dict[str, int]
    rate: float | None
    message: str | None
    reason: str | None
    result: dict[str, Any]
    cancel_requested: bool
    worker: str | None
    heartbeat: float | None

    @property
    def active(self) -> bool:
        """Queued or running."""
        return self.state in ("queued", "running")

    @property
    def orphaned(self) -> bool:
        """Running, but its worker is gone (killed, or no heartbeat for STALE_AFTER_S):
        the next worker takes it over and resumes it where its results stop."""
        if self.state != "running":
            return False
        stale = (self.heartbeat or 0) < _clock() - STALE_AFTER_S
        return stale or _dead_here(self.worker)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Job:
        return cls(
            id=int(row["id"]),
            kind=row["kind"],
            label=row["label"],
            params=json.loads(row["params"] or "{}"),
            state=row["state"],
            created_by=row["created_by"],
            created=row["created"],
            started=row["started"],
            ended=row["ended"],
            done=int(row["done"] or 0),
            total=int(row["total"] or 0),
            failed=int(row["failed"] or 0),
            errors=json.loads(row["errors"] or "{}"),
            rate=row["rate"],
            message=row["message"],
            reason=row["reason"],
            result=json.loads(row["result"] or "{}"),
            cancel_requested=bool(row["cancel_requested"]),
            worker=row["worker"],
            heartbeat=row["heartbeat"],
        )


@dataclass(frozen=True)
class ProviderBatch:
    """A batch a job sent to a provider's Batch API, and where its results are."""

    id: str
    server: str
    model: str
    input_file_id: str | None
    custom_ids: tuple[str, ...]
    status: str
    output_file_id: str | None
    error_file_id: str | None
    owner: str | None = None
    """The process (host:pid) waiting for it; another live process leaves it alone."""


class Jobs:
    """The ``jobs``, ``job_workers`` and ``provider_batches`` tables."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # Jobs --------------------------------------------------------------------------------

    def enqueue(
        self,
        kind: str,
        label: str,
        params: Mapping[str, Any],
        created_by: str | None,
        same_as: Callable[[Job], bool] | None = None,
    ) -> int:
        """Queue a job; returns its id.

        Raises:
            JobError: ``same_as`` matches a queued or running job (looked for in the same
                transaction as the insert, so two presses at once queue one job).
        """
        with self.store.write():
            if same_as is not None:
                active = self.store.rows(
                    "select * from jobs where kind = ? and state in ('queued', 'running') "
                    "and cancel_requested = 0 order by id",
                    [kind],
                )
                for row in active:
                    twin = Job.from_row(row)
                    if same_as(twin):
                        message = (
                            _("The same work is already queued as job {id} ({label}).")
                            if twin.state == "queued"
                            else _("The same work is already running as job {id} ({label}).")
                        )
                        raise JobError(
                            message.format(id=twin.id, label=twin.label)
                            + " "
                            + _("Follow it in the jobs panel, or cancel it first.")
                        )
            cursor = self.store.db.execute(
                "insert into jobs (kind, label, params, state, created_by, created) "
                "values (?, ?, ?, 'queued', ?, ?)",
                [kind, label, json.dumps(dict(params), sort_keys=True), created_by, now()],
            )
            return int(cursor.lastrowid or 0)

    def get(self, job_id: int) -> Job:
        """One job.

        Raises:
            JobError: no such job.
        """
        rows = self.store.rows("select * from jobs where id = ?", [job_id])
        if not rows:
            raise JobError(f"no job {job_id}")
        return Job.from_row(rows[0])

    def recent(self, limit: int = 50) -> list[Job]:
        """Active jobs first, then the most recent ended ones."""
        rows = self.store.rows(
            "select * from jobs order by state in ('queued', 'running') desc, id desc limit ?",
            [limit],
        )
        return [Job.from_row(r) for r in rows]

    def active_of(self, kind: str) -> list[Job]:
        """The queued and running jobs of one kind, oldest first (a shared computation's
        visitors find the job already under way here, rather than start a second)."""
        rows = self.store.rows(
            "select * from jobs where kind = ? and state in ('queued', 'running') "
            "and cancel_requested = 0 order by id",
            [kind],
        )
        return [Job.from_row(r) for r in rows]

    def last_of(self, kind: str) -> Job | None:
        """The most recent ended job of one kind (how the last computation went)."""
        rows = self.store.rows(
            "select * from jobs where kind = ? and state in ('finished', 'failed', "
            "'cancelled') order by id desc limit 1",
            [kind],
        )
        return Job.from_row(rows[0]) if rows else None

    def claimable(self, stale_after_s: float = STALE_AFTER_S) -> int:
        """How many jobs a worker could take now (queued, or running with a dead worker)."""
        return len(self._claimable(stale_after_s))

    def _claimable(self, stale_after_s: float, worker: str | None = None) -> list[int]:
        """Queued jobs, and running ones whose worker is gone; never a job the asking
        ``worker`` runs itself (its heartbeat may only look stale: a full disk stops the
        beats, not the job)."""
        rows = self.store.rows(
            "select id, state, worker, heartbeat from jobs where (state = 'queued' and "
            "cancel_requested = 0) or state = 'running' order by id"
        )
        stale = _clock() - stale_after_s
        return [
            r["id"]
            for r in rows
            if r["state"] == "queued"
            or (
                r["worker"] != worker and ((r["heartbeat"] or 0) < stale or _dead_here(r["worker"]))
            )
        ]

    def claim(self, worker: str, stale_after_s: float = STALE_AFTER_S) -> Job | None:
        """Take the oldest queued job, or a running one whose worker died (its process is
        gone from this machine, or it stopped beating); None if there is none."""
        with self.store.write():
            ids = self._claimable(stale_after_s, worker)
            if not ids:
                return None
            job_id = ids[0]
            self.store.db.execute(
                "update jobs set state = 'running', worker = ?, heartbeat = ?, "
                "started = coalesce(started, ?) where id = ?",
                [worker, _clock(), now(), job_id],
            )
        return self.get(job_id)

    def claim_queued(self, job_id: int, worker: str) -> Job | None:
        """Take one queued job by its id (the page process that queued a shared
        computation runs it at once, warm); None when a worker took it first."""
        with self.store.write():
            cursor = self.store.db.execute(
                "update jobs set state = 'running', worker = ?, heartbeat = ?, "
                "started = coalesce(started, ?) where id = ? and state = 'queued' "
                "and cancel_requested = 0",
                [worker, _clock(), now(), job_id],
            )
            if cursor.rowcount != 1:
                return None
        return self.get(job_id)

    def progress(
        self,
        job_id: int,
        *,
        done: int,
        total: int,
        failed: int = 0,
        errors: Mapping[str, int] | None = None,
        rate: float | None = None,
        message: str | None = None,
    ) -> None:
        """Record how far a running job is (read by every jobs panel)."""
        with self.store.write():
            self.store.db.execute(
                "update jobs set done = ?, total = ?, failed = ?, errors = ?, rate = ?, "
                "message = coalesce(?, message), heartbeat = ? where id = ?",
                [
                    done,
                    total,
                    failed,
                    json.dumps(dict(errors or {})),
                    rate,
                    message,
                    _clock(),
                    job_id,
                ],
            )

    def finish(
        self,
        job_id: int,
        state: JobState,
        *,
        reason: str | None = None,
        result: Mapping[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        """End a job: finished, failed (with the reason) or cancelled."""
        if state not in ENDED:
            raise JobError(f"a job ends finished, failed or cancelled, not {state!r}")
        with self.store.write():
            self.store.db.execute(
                "update jobs set state = ?, reason = ?, result = ?, message = coalesce(?, "
                "message), ended = ?, heartbeat = ? where id = ?",
                [state, reason, json.dumps(dict(result or {})), message, now(), _clock(), job_id],
            )

    def request_cancel(self, job_id: int) -> JobState:
        """Cancel: a queued job at once, a running one at its worker's next step.

        Returns the state the job is in afterwards.

        Raises:
            JobError: no such job, or it has already ended.
        """
        with self.store.write():
            job = self.get(job_id)
            if not job.active:
                raise JobError(f"job {job_id} has already ended ({job.state})")
            if job.state == "queued":
                self.store.db.execute(
                    "update jobs set state = 'cancelled', cancel_requested = 1, ended = ?, "
                    "message = 'cancelled before it started' where id = ?",
                    [now(), job_id],
                )
                return "cancelled"
            self.store.db.execute("update jobs set cancel_requested = 1 where id = ?", [job_id])
            return "running"

    def requeue(self, job_id: int) -> None:
        """Back to the queue (its worker is stopping); the next worker resumes it."""
        with self.store.write():
            self.store.db.execute(
                "update jobs set state = 'queued', worker = null where id = ? and state = "
                "'running'",
                [job_id],
            )

    def still_ours(self, job_id: int, worker: str) -> bool:
        """Whether the job is still running under ``worker``: False once another worker
        took it over (this one's beats stopped landing) or it was recorded as ended, and
        the execution should stop asking models."""
        rows = self.store.rows("select state, worker from jobs where id = ?", [job_id])
        return bool(rows) and rows[0]["state"] == "running" and rows[0]["worker"] == worker

    def cancel_requested(self, job_id: int) -> bool:
        """Whether someone asked the job to stop."""
        rows = self.store.rows("select cancel_requested from jobs where id = ?", [job_id])
        return bool(rows and rows[0]["cancel_requested"])

    # Workers ------------------------------------------------------------------------------

    def beat(self, worker: str, pid: int, host: str, job_ids: Sequence[int] = ()) -> None:
        """A worker is alive, and so are the jobs it runs."""
        at = _clock()
        with self.store.write():
            self.store.db.execute(
                "insert into job_workers (id, pid, host, started, heartbeat) values (?,?,?,?,?) "
                "on conflict(id) do update set heartbeat = excluded.heartbeat",
                [worker, pid, host, at, at],
            )
            for job_id in job_ids:
                self.store.db.execute(
                    "update jobs set heartbeat = ? where id = ? and worker = ?",
                    [at, job_id, worker],
                )

    def leave(self, worker: str) -> None:
        """A worker stopped cleanly."""
        with self.store.write():
            self.store.db.execute("delete from job_workers where id = ?", [worker])

    def live_workers(self, within_s: float = STALE_AFTER_S / 2) -> list[dict[str, Any]]:
        """Workers that beat recently and whose process (on this machine) still exists."""
        rows = self.store.rows(
            "select id, pid, host, started, heartbeat from job_workers where heartbeat >= ?",
            [_clock() - within_s],
        )
        return [r for r in rows if not _dead_here(r["id"])]

    # Provider batches --------------------------------------------------------------------

    def add_batch(self, batch: ProviderBatch) -> None:
        """Remember a batch as soon as the provider accepted it (before any wait)."""
        with self.store.write():
            self.store.db.table("provider_batches").insert(
                {
                    "id": batch.id,
                    "server": batch.server,
                    "model": batch.model,
                    "input_file_id": batch.input_file_id,
                    "custom_ids": json.dumps(list(batch.custom_ids)),
                    "status": batch.status,
                    "created": _clock(),
                    "output_file_id": batch.output_file_id,
                    "error_file_id": batch.error_file_id,
                    "consumed": 0,
                    "owner": batch.owner,
                },
                pk="id",
                replace=True,
            )

    def update_batch(
        self, batch_id: str, status: str, output_file_id: str | None, error_file_id: str | None
    ) -> None:
        """The provider's latest word on a batch."""
        with self.store.write():
            self.store.db.execute(
                "update provider_batches set status = ?, output_file_id = ?, error_file_id = ? "
                "where id = ?",
                [status, output_file_id, error_file_id, batch_id],
            )

    def open_batches(self, server: str, model: str, owner: str) -> list[ProviderBatch]:
        """Batches sent to this server and model whose results were not all stored yet,
        by ``owner`` or by a process that has died (never another live job's)."""
        rows = self.store.rows(
            "select * from provider_batches where server = ? and model = ? and consumed = 0 "
            "order by created",
            [server, model],
        )
        return [
            ProviderBatch(
                r["id"],
                r["server"],
                r["model"],
                r["input_file_id"],
                tuple(json.loads(r["custom_ids"])),
                r["status"],
                r["output_file_id"],
                r["error_file_id"],
                r["owner"],
            )
            for r in rows
            if r["owner"] in (None, owner) or _dead_here(r["owner"])
        ]

    def consume(self, batch_ids: Sequence[str]) -> None:
        """Every result of these batches is stored: a later pass never reuses them."""
        with self.store.write():
            for batch_id in batch_ids:
                self.store.db.execute(
                    "update provider_batches set consumed = 1 where id = ?", [batch_id]
                )


def _clock() -> float:
    """Seconds since the epoch (heartbeats compare across processes on one machine)."""
    return time.time()
