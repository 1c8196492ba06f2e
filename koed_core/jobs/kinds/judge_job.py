"""A judge job: one judge configuration scoring a run's responses."""

from __future__ import annotations

from koed_core.db import Store
from koed_core.db.jobs import JobError
from koed_core.jobs.kinds.environment import Environment, Hooks, Result, client_for, close_client
from koed_core.jobs.kinds.params import JudgeJob


def execute_judge(params: JudgeJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    """What `koed judge` does: one judge configuration over a run, kept verdicts reused."""
    from koed_core.judge.judging import judge_run

    if not store.has_run(params.run_id):
        raise JobError(f"no run {params.run_id!r} in {store.path}")
    spec = env.resolve(params.judge)
    client = client_for(
        env,
        spec,
        store,
        batch=params.batch,
        batch_size=params.batch_size,
        stop=hooks.stop,
        say=hooks.say,
    )
    try:
        report = judge_run(
            store,
            client,
            spec,
            params.run_id,
            params.mode,  # type: ignore[arg-type]
            dims=list(params.dims) if params.dims else None,
            samples=params.samples,
            concurrency=params.concurrency,
            template=params.template,
            parse=params.parse,
            progress=hooks.progress,
            stop=hooks.stop,
            watch=hooks.watch,
        )
    finally:
        close_client(client)
    summary = (
        f"judged run {params.run_id} with {spec.name} ({params.mode}): {report.scored} scored, "
        f"{report.unscored} unscored, {report.skipped} already done, {report.failed} failed"
    )
    return Result(
        summary,
        {"run_id": params.run_id, "judge": spec.name, "errors": dict(report.errors)},
        report.failed,
        report.stopped,
    )
