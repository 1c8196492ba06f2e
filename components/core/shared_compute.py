"""Heavy result tables computed once for every visitor and every server process, with
progress every visitor sees (issue 66: the Gap page's perception split and a gap broken
down by label took seconds, and each visitor and each ``koed serve`` process paid them
again).

A page asks for a table by name and inputs (``kept_table``). Kept in the database under
the change stamp and those inputs (``computed_results``), it is read back. Otherwise the
page queues one ``table`` job (``TableJob.identity``: a second asker, in any process,
finds it) and, when it queued it, this server process takes that job at once and runs
it in a thread of its own, warm (a worker process would first spend seconds importing
what this process has loaded; the thread also outlives the visitor's page run, so
leaving or clicking does not stop it). The asker waits up to ``wait_s()`` for it, so a
quick table is drawn in the same run; anyone else sees the job's bar, read from its row
every second, until the result is kept. If this process dies mid-way, the job's
heartbeat stops and a worker takes it over, as any job.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from components.core import auth, language, resources
from components.core.literal import md
from koed_core import i18n
from koed_core.db.computed_results import ComputedResults
from koed_core.db.jobs import Job, JobError, Jobs
from koed_core.db.owners import this_process
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import _
from koed_core.jobs.kinds import Environment, TableJob, enqueue
from koed_core.jobs.worker import Worker, ensure_worker
from koed_core.results import shared_tables
from koed_core.results.ppi_table import GapEstimates

WAIT_S = 1.5
"""How long the asker's page waits for the computation it started before it draws the
bar instead (``KOED_SHARED_WAIT_S`` sets another: the tests wait for the result)."""
REFRESH_S = 1.0


class _NotKept(LookupError):
    """Raised (so never cached) when no result is kept under a key."""


def wait_s() -> float:
    """Seconds the asker's page waits for a computation it started."""
    with suppress(ValueError):
        return max(float(os.environ.get("KOED_SHARED_WAIT_S", WAIT_S)), 0.0)
    return WAIT_S


def kept_table(
    name: str, inputs: Mapping[str, Any], dataset: Dataset | None = None
) -> pd.DataFrame | None:
    """The table ``name`` for ``inputs`` at the database's current stamp; None after
    drawing the computation's progress (the page reruns by itself when it is kept)."""
    result = _kept(name, inputs, dataset)
    if result is None or isinstance(result, pd.DataFrame):
        return result
    raise TypeError(f"{name} is not a table")


def kept_estimates(inputs: Mapping[str, Any]) -> GapEstimates | None:
    """The gap three ways (``shared_tables``' ``gap_estimates``) for ``inputs``; None
    after drawing the computation's progress."""
    result = _kept("gap_estimates", inputs, None)
    if result is None or isinstance(result, GapEstimates):
        return result
    raise TypeError("gap_estimates is not a GapEstimates")


def _kept(
    name: str, inputs: Mapping[str, Any], dataset: Dataset | None
) -> shared_tables.Result | None:
    store = resources.store()
    stamp = store.stamp()
    key = shared_tables.key(name, stamp, inputs)
    with suppress(_NotKept):
        return _read(store.path, key)
    jobs = Jobs(store)
    job = _job_for(jobs, key)
    if job is None:
        failed = _failed_before(jobs, key)
        if failed is not None and not _failed(failed, key):
            return None  # said, with the button that asks again: never a retry loop
        params = TableJob(
            name,
            dict(inputs),
            stamp,
            data=None if dataset is None else str(dataset.path),
            dataset_sha256=None if dataset is None else dataset.sha256,
        )
        with suppress(JobError):  # another asker's job came first: theirs is followed
            enqueue(store, params, auth.username())
        job = _job_for(jobs, key)
        if job is not None and _run_here(job):
            with suppress(_NotKept):
                return _read(store.path, key)
            job = jobs.get(job.id)
    if job is None or not job.active:  # ended already: kept, or failed (said on the rerun)
        with suppress(_NotKept):
            return _read(store.path, key)
        st.rerun()
    if job.state == "queued" or job.orphaned:
        ensure_worker(store)  # nobody runs it here (another process queued it and died)
    _progress(job.id, name)
    return None


@st.cache_data(max_entries=32, show_spinner=False)
def _read(path: str, key: str) -> shared_tables.Result:
    payload = ComputedResults(resources.store_at(path)).get(key)
    if payload is None:
        raise _NotKept(key)
    return shared_tables.decode(payload)


def _job_for(jobs: Jobs, key: str) -> Job | None:
    """The queued or running job computing the result kept under ``key``, if any."""
    for job in jobs.active_of(TableJob.kind):
        if _key_of(job) == key:
            return job
    return None


def _key_of(job: Job) -> str:
    """The key a table job's result is kept under."""
    params = job.params
    return shared_tables.key(
        params.get("name", ""), params.get("stamp", -1), params.get("inputs") or {}
    )


def _run_here(job: Job) -> bool:
    """Take the queued job in this process and run it in a thread of its own; True when
    it ended within ``wait_s()`` (False: still running, or a worker took it first). No
    wait when this server last took longer than that for the same table."""
    store = resources.store()
    mine = Jobs(store).claim_queued(job.id, this_process())
    if mine is None:
        return False
    worker = Worker(store, Environment(resources.settings()))
    thread = threading.Thread(
        target=worker.run_job, args=(mine,), name=f"koed-table-{job.id}", daemon=True
    )
    thread.start()
    limit = wait_s()
    took = ComputedResults(store).last_seconds(str(job.params.get("name")))
    # a table this server last took longer than the limit for gets its bar at once
    thread.join(0.0 if took is not None and took > limit else limit)
    return not thread.is_alive()


def elapsed_s(job: Job) -> float:
    """Seconds since the worker took the job (0 while it waits)."""
    if not job.started:
        return 0.0
    started = datetime.fromisoformat(job.started)
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return max((datetime.now(UTC) - started).total_seconds(), 0.0)


def _failed_before(jobs: Jobs, key: str) -> Job | None:
    """The last job for ``key`` when it failed (None: none, or it did not fail)."""
    for job in jobs.recent(50):
        if job.kind == TableJob.kind and not job.active and _key_of(job) == key:
            return job if job.state == "failed" else None
    return None


def _failed(job: Job, key: str) -> bool:
    """Say why the last computation failed, with a button; True in the run its press
    starts (then nothing is said: the computation's bar or table follows)."""
    again = f"shared.again.{key[:16]}"
    if st.session_state.get(again):
        return True
    reason = job.reason or _("no reason was recorded")
    st.error(
        md(_("This table could not be computed: {reason}", reason=reason)),
        icon=":material/error:",
    )
    st.button(_("Compute it again"), key=again)
    return False


@st.fragment(run_every=REFRESH_S)
def _progress(job_id: int, name: str) -> None:
    """The job's bar, read from its row every second; the page runs again once it ends."""
    language.start()  # a fragment's own run starts in a thread of its own: English else
    job = Jobs(resources.store()).get(job_id)
    if not job.active:
        st.rerun(scope="app")  # the result is kept (or the failure is said) by then
    what = _(shared_tables.TABLES.get(name, name))
    took = ComputedResults(resources.store()).last_seconds(name)
    elapsed = elapsed_s(job)
    if job.state == "queued":
        text = _("Waiting for the server to compute {table}...", table=what)
    elif took is None:
        text = _(
            "Computing {table}: {elapsed} s (this server has not timed it yet)",
            table=what,
            elapsed=i18n.number(round(elapsed)),
        )
    else:
        text = _(
            "Computing {table}: {elapsed} s of about {estimate} s, as this server took last time",
            table=what,
            elapsed=i18n.number(round(elapsed)),
            estimate=i18n.number(round(took, 1)),
        )
    fraction = 0.0 if took is None else min(elapsed / max(took, 0.1), 0.99)
    st.progress(fraction, text=text)
    st.caption(
        md(
            _(
                "Computed once by the server for every visitor (job {id}): another visitor "
                "sees this same bar, and leaving the page does not stop it.",
                id=job.id,
            )
        )
    )
