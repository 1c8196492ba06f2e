"""Long work described as data, carried out by the same code in the foreground or in a
worker: a run, a judging pass, a reproduction.

A page queues a job (its parameters as JSON, checked here first); a ``koed worker``
process takes it and calls ``execute``, exactly what ``koed run``, ``koed judge`` and
``koed reproduce`` call in a terminal. So a background job and a foreground command with
the same parameters store the same rows under the same keys, and a job taken over after
a crash resumes where its results stop.

One module per concern: ``params`` (each kind's parameters, checked before queueing),
``environment`` (hooks, result, clients, dataset), one module per kind (``run_job``,
``episode_job``, ``judge_job``, ``reproduce_job``, ``translate_job``), ``compute_job``
(computations every visitor shares: the Adaptation page's, the heavy result tables) and
``dispatch`` (which runs which).
"""

from koed_core.jobs.kinds.dispatch import execute, outcome_of
from koed_core.jobs.kinds.environment import (
    Environment,
    Hooks,
    Result,
    client_for,
    close_client,
    job_client,
    job_dataset,
)
from koed_core.jobs.kinds.episode_job import execute_episodes
from koed_core.jobs.kinds.judge_job import execute_judge
from koed_core.jobs.kinds.params import (
    KINDS,
    JobParams,
    ReproduceJob,
    SimilarityJob,
    TableJob,
    check,
    describe,
    enqueue,
    params_of,
)
from koed_core.jobs.kinds.reproduce_job import execute_reproduce
from koed_core.jobs.kinds.run_job import execute_run
from koed_core.jobs.kinds.translate_job import TranslateJob, execute_translate

__all__ = [
    "Environment",
    "Hooks",
    "JobParams",
    "KINDS",
    "ReproduceJob",
    "Result",
    "SimilarityJob",
    "TableJob",
    "TranslateJob",
    "check",
    "client_for",
    "close_client",
    "describe",
    "enqueue",
    "execute",
    "execute_episodes",
    "execute_judge",
    "execute_reproduce",
    "execute_run",
    "execute_translate",
    "job_client",
    "job_dataset",
    "outcome_of",
    "params_of",
]
