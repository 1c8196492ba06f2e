"""The Adaptation page's first computation, shared: one job the worker runs, its progress
read from the job's row by every visitor.

Computed in a visitor's own page run, the similarities belonged to that visitor: a second
visitor saw "not computed yet" and started again, and a first visitor who left took the
work with them (issue 66). Now the first press queues a job (a second press, anyone's,
finds it: ``SimilarityJob.identity``), the worker computes and keeps the scores on disk,
and every page open on them shows the same bar until they are there.
"""

from __future__ import annotations

from contextlib import suppress

import pandas as pd
import streamlit as st

from components.core import auth, language, resources, state
from components.core.literal import md
from components.core.shared_compute import elapsed_s
from koed_core import i18n
from koed_core.db.jobs import Job, JobError, Jobs
from koed_core.dialogues import adaptation
from koed_core.dialogues.dataset import Dataset
from koed_core.i18n import _
from koed_core.jobs.kinds import SimilarityJob, enqueue
from koed_core.jobs.worker import ensure_worker

REFRESH_S = 1.0


def similarities_or_progress(dataset: Dataset) -> pd.DataFrame:
    """The file's similarities when they are kept; otherwise the job computing them (its
    progress) or the button that queues it, and the page stops there."""
    sims = resources.cached_similarities(dataset)
    if sims is not None:
        return sims
    store = resources.store()
    job = _job_for(Jobs(store), dataset)
    if job is None:
        _offer(dataset)
    else:
        ensure_worker(store)  # none alive (a restart, a crash): one takes the job
        _progress(job.id, len(dataset))
    st.stop()


def _job_for(jobs: Jobs, dataset: Dataset) -> Job | None:
    """The queued or running job computing this file's similarities, if any."""
    for job in jobs.active_of(SimilarityJob.kind):
        if job.params.get("dataset_sha256") == dataset.sha256:
            return job
    return None


def _estimate(dialogues: int) -> str:
    """How long the whole computation takes, from this machine's last measurement."""
    timing = adaptation.timing(resources.settings().cache_dir)
    if timing is None:
        return _("this server has not timed it yet; the bar shows the time left once texts flow")
    return _(
        "about {seconds} s, as this server measured itself last time",
        seconds=i18n.number(timing.total_s(dialogues)),
    )


def _offer(dataset: Dataset) -> None:
    """Not computed and not under way: what it takes, and the button that queues it."""
    last = Jobs(resources.store()).last_of(SimilarityJob.kind)
    if last is not None and last.state == "failed" and last.reason:
        st.error(
            _("The last computation failed: {reason}", reason=md(last.reason)),
            icon=":material/error:",
        )
    st.info(
        md(
            _(
                "Similarities for this dataset are not computed yet ({n} dialogues; {estimate}). "
                "The server computes them once for every visitor and keeps them on disk. The "
                "linguists' annotations (similarity against their category, the gap by "
                "adaptation) appear below them.",
                n=i18n.number(len(dataset)),
                estimate=_estimate(len(dataset)),
            )
        )
    )
    if not st.button(_("Compute similarities"), type="primary", key=state.ADAPT_COMPUTE):
        return
    params = SimilarityJob(data=str(dataset.path), dataset_sha256=dataset.sha256)
    with suppress(JobError):  # someone else's press came first: theirs is shown after the rerun
        enqueue(resources.store(), params, auth.username())
    ensure_worker(resources.store())
    st.rerun()


@st.fragment(run_every=REFRESH_S)
def _progress(job_id: int, dialogues: int) -> None:
    """The job's bar, read from its row every second; the page runs again once it ends."""
    language.start()  # a fragment's own run starts in a thread of its own: English else
    job = Jobs(resources.store()).get(job_id)
    if not job.active:
        st.rerun(scope="app")  # the scores are kept (or the failure is said) by then
    st.progress(_fraction(job, dialogues), text=_said(job, dialogues))
    st.caption(
        md(
            _(
                "Computed once by the server for every visitor (job {id}): another visitor "
                "sees this same bar, and leaving the page does not stop it.",
                id=job.id,
            )
        )
    )


def _fraction(job: Job, dialogues: int) -> float:
    if job.total:
        return min(job.done / job.total, 0.99)
    timing = adaptation.timing(resources.settings().cache_dir)
    if timing is None or job.state != "running":
        return 0.0
    return min(elapsed_s(job) / max(timing.total_s(dialogues), 1.0), 0.99)


def _said(job: Job, dialogues: int) -> str:
    """Where the job is, in words, with the time left where it can be told."""
    if job.state == "queued":
        return _("Queued: waiting for the server's worker to take it...")
    if job.total and job.done:
        left = (job.total - job.done) / job.rate * 60 if job.rate else None
        if left is None:
            return _(
                "Embedding texts: {done} of {total}",
                done=i18n.number(job.done),
                total=i18n.number(job.total),
            )
        return _(
            "Embedding texts: {done} of {total} (about {left} s left)",
            done=i18n.number(job.done),
            total=i18n.number(job.total),
            left=i18n.number(left),
        )
    return _(
        "Loading the sentence encoder: {elapsed} s ({estimate})",
        elapsed=i18n.number(elapsed_s(job)),
        estimate=_estimate(dialogues),
    )
