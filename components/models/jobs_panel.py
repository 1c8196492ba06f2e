"""Queue long work as jobs and watch them from any page.

Pages never run a long job in their own script any more (it would stop when the tab
closes): they queue it here, a ``koed worker`` process carries it out, and this panel
reads its progress from the database. Every page load also makes sure a worker is alive
while jobs wait, so a job survives a server restart.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import asdict
from typing import Any

import streamlit as st

from components.core import auth, language, resources, state
from components.core.literal import md
from components.shared.model_choice import count_call
from koed_core import i18n
from koed_core.config import api_key
from koed_core.db.jobs import Job, JobError, Jobs
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.jobs.kinds import JobParams, describe, enqueue, outcome_of
from koed_core.jobs.worker import DISK_FULL, ensure_worker
from koed_core.models.client import ModelError
from koed_core.models.registry import ModelSpec
from koed_core.models.runs import run_labels

REFRESH_S = 2.0
STATE_WORDS = {
    "queued": N_("waiting for the worker"),
    "running": N_("running"),
    "finished": N_("finished"),
    "failed": N_("failed"),
    "cancelled": N_("cancelled"),
}
ALREADY = {
    "queued": N_("the same job is already queued: #{id} ({job})"),
    "running": N_("the same job is already running: #{id} ({job})"),
}
FIXED = frozenset({N_("cancelled before it started"), DISK_FULL})
"""Messages a job's row keeps in English word for word (koed_core/db/jobs.py, the
worker), said in the reader's language; any other stored text is shown as it is."""


def check_may_queue(spec: ModelSpec) -> None:
    """A job calls models from the worker, with the server's keys: check both here.

    Raises:
        ModelError: not an admin for a paid or remote model, over the hourly allowance, or
            no key on the server (a key typed in the sidebar stays in this session only).
    """
    if spec.offline:
        return
    if not auth.is_admin():
        raise ModelError(
            "forbidden",
            _("{model} calls a remote or paid model: log in as an admin", model=spec.name),
        )
    needs_key = spec.backend == "openai" and spec.base_url is None
    if needs_key and not api_key(spec.api_key_env, os.environ, resources.secrets()):
        raise ModelError(
            "auth",
            _(
                "{model} needs {key} on the server: a job runs in the background worker, "
                "which uses the environment or .streamlit/secrets.toml (a key typed in the "
                "sidebar stays in this browser session)",
                model=spec.name,
                key=spec.api_key_env,
            ),
        )
    count_call(spec)


def queue(params: JobParams) -> int:
    """Queue a job for this session's account and make sure a worker will take it.

    Raises:
        JobError: the same job is already queued or running (an Enter pressed in a form
            field submits it, and a second press would queue it twice).
    """
    store = resources.store()
    wanted = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(params).items()}
    for job in Jobs(store).recent(30):
        if job.active and job.kind == params.kind and job.params == wanted:
            raise JobError(_(ALREADY[job.state], id=job.id, job=describe(job)))
    job_id = enqueue(store, params, auth.username() or "(no accounts)")  # stored: English
    ensure_worker(store)
    return job_id


def label_of(job_id: int) -> str:
    """A queued job as people read it (runs named by their label, not their id), in the
    reader's language."""
    return describe(Jobs(resources.store()).get(job_id))


def start(params: JobParams, *models: ModelSpec, check: Callable[[], object] | None = None) -> None:
    """Queue ``params`` from a form and say so: first ``check`` (what the engine would
    refuse) and whether each of ``models`` may be called from the worker; a refusal is one
    sentence on the page, never a traceback. Every page that starts a job does it so."""
    try:
        if check is not None:
            check()
        for spec in models:
            check_may_queue(spec)
        job_id = queue(params)
    except KoedError as err:
        st.error(md(str(err)))
    else:
        say_queued(job_id)


def batch_checkbox(where: Any) -> bool:
    """Whether a run's or a judging pass's requests go through the provider's Batch API
    (``where``: ``st`` or a column of the form)."""
    return bool(
        where.checkbox(
            _("Through the provider's Batch API"),
            help=_(
                "OpenAI and compatible servers with /v1/files and /v1/batches: the requests "
                "go out as batch jobs (OpenAI: about half the price, answers within 24 h)."
            ),
        )
    )


def say_queued(job_id: int) -> None:
    """The page's word that a job is queued, and what it is."""
    st.success(_("Job #{id} queued: {job}.", id=md(job_id), job=md(label_of(job_id))))


def said(text: str) -> str:
    """A message a job's row keeps, in the reader's language if it is a fixed one."""
    return _(text) if text in FIXED else text


def keep_worker_alive() -> None:
    """Start a worker when jobs wait and none is alive (after a restart, for instance).
    Checked at most every few seconds per session; cheap when there is nothing to do."""
    last = st.session_state.get(state.JOBS_CHECKED, 0.0)
    if time.monotonic() - last < 5:
        return
    st.session_state[state.JOBS_CHECKED] = time.monotonic()
    with suppress(KoedError):  # an unusable database: the page itself says so
        ensure_worker(resources.store())


def render_sidebar_panel() -> None:
    """The jobs panel in the sidebar, for admins (and for everyone with no accounts)."""
    if not auth.is_admin():
        return
    try:  # no job yet: no panel, so a page without controls keeps the sidebar's room
        if not Jobs(resources.store()).recent(1):
            return
    except KoedError:
        return  # an unusable database: the page itself says so
    with st.sidebar:
        _panel()


@st.fragment(run_every=REFRESH_S)
def _panel() -> None:
    language.start()  # a fragment's own run starts in a thread of its own: English else
    keep_worker_alive()  # a worker that died while the page is open is replaced
    try:
        jobs = Jobs(resources.store()).recent(8)
    except KoedError:
        return  # an unusable database: the page itself says so
    active = [job for job in jobs if job.active]
    if not jobs:
        return
    title = _("Jobs ({n} active)", n=i18n.number(len(active)))
    with st.expander(title, expanded=bool(active), icon=":material/sync:"):
        names = run_labels(resources.store())
        for job in jobs[:6]:
            render_job(job, "panel", names)
        st.caption(_("Also: `koed jobs` in a terminal."))


def render_job(job: Job, key_prefix: str, run_names: dict[str, str]) -> None:
    """One job: what it is, how far, and a Cancel button while it is active; a run it
    made is named by its label (``run_names``), never by its id."""
    words = _(STATE_WORDS[job.state]) if job.state in STATE_WORDS else job.state
    if job.cancel_requested and job.active:
        words = _("cancelling (answers arriving in the next seconds are stored)")
    elif job.orphaned:
        words = _("its worker stopped: a new worker takes it over and resumes it")
    st.markdown(f"**#{md(job.id)}** {md(describe(job))}  \n:gray[{md(words)}]")
    if job.state == "running" or (job.state != "queued" and job.total):
        fraction = job.done / job.total if job.total else 0.0
        counts = [_("{n} of {total}", n=i18n.number(job.done), total=i18n.number(job.total))]
        if job.rate:
            counts.append(_("{n}/min", n=i18n.number(job.rate)))
        if job.failed:
            counts.append(_("{n} failed", n=i18n.number(job.failed)))
        st.progress(min(max(fraction, 0.0), 1.0), text=", ".join(counts))
    if job.reason:
        st.error(md(said(job.reason)), icon=":material/error:")
    elif job.message:  # the last word: what it runs (as the worker wrote it), or how it ended
        ended = outcome_of(job, run_names) if job.state in ("finished", "cancelled") else None
        st.caption(md(ended or said(job.message)))
    cancellable = job.active and not job.cancel_requested
    if cancellable and st.button(_("Cancel"), key=f"{key_prefix}.cancel.{job.id}", type="tertiary"):
        cancel(job.id)


def cancel(job_id: int) -> None:
    """Ask a job to stop (admins only, checked here on the server)."""
    if not auth.is_admin():
        st.error(_("Only an admin can cancel jobs."))
        return
    try:
        Jobs(resources.store()).request_cancel(job_id)
    except JobError as err:
        st.warning(md(str(err)))


def render_jobs_table(*kinds: str) -> None:
    """This page's jobs (runs and episodes, or judging), newest first, with their
    progress: one list per page, so that one fragment alone watches them end."""
    shown = [job for job in Jobs(resources.store()).recent(30) if job.kind in kinds][:10]
    if not shown:
        return
    st.subheader(_("Jobs"), anchor=False)
    _jobs_list(kinds)


@st.fragment(run_every=REFRESH_S)
def _jobs_list(kinds: tuple[str, ...]) -> None:
    language.start()  # a fragment's own run starts in a thread of its own: English else
    shown = [job for job in Jobs(resources.store()).recent(30) if job.kind in kinds][:10]
    active = {job.id for job in shown if job.active}
    seen = st.session_state.get(state.JOBS_ACTIVE, set())
    st.session_state[state.JOBS_ACTIVE] = active
    if seen - active:
        st.rerun()  # a job of this page ended: show what it stored (the whole page)
    names = run_labels(resources.store())
    for job in shown:
        with st.container(border=True):
            render_job(job, f"page.{'.'.join(kinds)}", names)
