"""Long work as queued jobs: what each kind of job takes and does (the same code the
CLI runs in a terminal), and the worker process that carries them out.
"""

from __future__ import annotations

from koed_core.jobs.kinds import ReproduceJob, enqueue, execute
from koed_core.jobs.worker import Worker, ensure_worker

__all__ = ["ReproduceJob", "Worker", "enqueue", "ensure_worker", "execute"]
