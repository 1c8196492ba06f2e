"""Which function runs a job of each kind."""

from __future__ import annotations

from koed_core.db import Store
from koed_core.jobs.kinds.environment import Environment, Hooks, Result
from koed_core.jobs.kinds.episode_job import execute_episodes
from koed_core.jobs.kinds.judge_job import execute_judge
from koed_core.jobs.kinds.params import EpisodeJob, JobParams, JudgeJob, RunJob
from koed_core.jobs.kinds.reproduce_job import execute_reproduce
from koed_core.jobs.kinds.run_job import execute_run


def execute(params: JobParams, store: Store, env: Environment, hooks: Hooks) -> Result:
    """Carry out a job with the engine the CLI uses.

    Raises:
        KoedError: what stops the whole job (unknown model, missing data, no key...).
    """
    if isinstance(params, RunJob):
        return execute_run(params, store, env, hooks)
    if isinstance(params, EpisodeJob):
        return execute_episodes(params, store, env, hooks)
    if isinstance(params, JudgeJob):
        return execute_judge(params, store, env, hooks)
    return execute_reproduce(params, store, env, hooks)
