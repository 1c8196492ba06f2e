"""Long work as queued jobs: what each kind of job takes and does (the same code the
CLI runs in a terminal), and the worker process that carries them out.
"""

from __future__ import annotations

from koed_core.jobs.kinds import JudgeJob, ReproduceJob, RunJob, enqueue, execute
from koed_core.jobs.worker import Worker, ensure_worker

__all__ = ["JudgeJob", "ReproduceJob", "RunJob", "Worker", "enqueue", "ensure_worker", "execute"]
