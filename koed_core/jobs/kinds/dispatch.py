"""Which function runs a job of each kind, and how its outcome reads on a page."""

from __future__ import annotations

from collections.abc import Mapping

from koed_core import i18n
from koed_core.db import Store
from koed_core.db.jobs import Job
from koed_core.i18n import _
from koed_core.jobs.kinds import (
    compute_job,
    episode_job,
    judge_job,
    reproduce_job,
    run_job,
    translate_job,
)
from koed_core.jobs.kinds.compute_job import execute_similarities, execute_table
from koed_core.jobs.kinds.environment import Environment, Hooks, Result
from koed_core.jobs.kinds.episode_job import execute_episodes
from koed_core.jobs.kinds.judge_job import execute_judge
from koed_core.jobs.kinds.params import JobParams, SimilarityJob, TableJob
from koed_core.jobs.kinds.reproduce_job import execute_reproduce
from koed_core.jobs.kinds.run_job import execute_run
from koed_core.jobs.kinds.translate_job import TranslateJob, execute_translate
from koed_core.judge.request import JudgeRequest
from koed_core.models.request import EpisodeRequest, RunRequest


def execute(params: JobParams, store: Store, env: Environment, hooks: Hooks) -> Result:
    """Carry out a job with the engine the CLI uses.

    Raises:
        KoedError: what stops the whole job (unknown model, missing data, no key...).
    """
    if isinstance(params, EpisodeRequest):  # a run request of its own kind: asked first
        return execute_episodes(params, store, env, hooks)
    if isinstance(params, RunRequest):
        return execute_run(params, store, env, hooks)
    if isinstance(params, JudgeRequest):
        return execute_judge(params, store, env, hooks)
    if isinstance(params, SimilarityJob):
        return execute_similarities(params, store, env, hooks)
    if isinstance(params, TranslateJob):
        return execute_translate(params, store, env, hooks)
    if isinstance(params, TableJob):
        return execute_table(params, store, env, hooks)
    return execute_reproduce(params, store, env, hooks)


SUMMARIES = frozenset(
    {
        run_job.SUMMARY,
        episode_job.SUMMARY,
        judge_job.SUMMARY,
        compute_job.SUMMARY,
        compute_job.TABLE_SUMMARY,
        *reproduce_job.SUMMARIES,
        *translate_job.SUMMARIES,
    }
)


def outcome_of(job: Job, run_names: Mapping[str, str] | None = None) -> str | None:
    """How an ended job went, in the page's language, said again from what its result
    keeps (``told``); None when it keeps nothing to say it with (a job from before this
    release, or one cancelled before it started): its stored message says it then.

    The run is named by its label in ``run_names`` (people pick runs by label; the id
    stays in the stored sentence for ``koed jobs`` and the logs), or said to be gone."""
    said = job.result.get("said")
    if not isinstance(said, dict) or said.get("message") not in SUMMARIES:
        return None
    values = said.get("values")
    if not isinstance(values, dict):
        return None
    shown = {name: _count(value) for name, value in values.items()}
    if "run" in shown and run_names is not None:
        shown["run"] = run_names.get(str(shown["run"])) or _("(a run no longer stored)")
    try:
        return _(said["message"], **shown)
    except (KeyError, IndexError, ValueError):  # values of another release's message
        return None


def _count(value: object) -> object:
    """A count with the reader's grouping (1,234); any other value as it is."""
    return i18n.number(value) if isinstance(value, int) and not isinstance(value, bool) else value
