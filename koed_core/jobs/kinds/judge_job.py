"""A judge job: one judge configuration scoring a run's responses."""

from __future__ import annotations

from koed_core.db import Store
from koed_core.db.jobs import JobError
from koed_core.i18n import N_
from koed_core.jobs.kinds.environment import (
    Environment,
    Hooks,
    Result,
    client_for,
    close_client,
    told,
)
from koed_core.jobs.kinds.params import JudgeJob

SUMMARY = N_(
    "judged run {run} with {judge} ({mode}): {scored} scored, {unscored} unscored, "
    "{skipped} already done, {failed} failed"
)
UNSCORED = N_(
    "judged run {run} with {judge} ({mode}): {scored} scored, {unscored} unscored, "
    "{skipped} already done, {failed} failed. The commonest reason for no score: {reason} "
    "({count} of {unscored}). If the judge wrote its score in another form (bold, "
    "'Final score: 4/5'), judge again with `--parse lenient`, which reads a final Score line "
    "in any usual form."
)
"""A pass that leaves verdicts unscored says why and what to try, not only how many."""


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
            replicate=params.replicate,
            progress=hooks.progress,
            stop=hooks.stop,
            watch=hooks.watch,
        )
    finally:
        close_client(client)
    counts: dict[str, str | int] = {
        "run": params.run_id,
        "judge": spec.name,
        "mode": params.mode,
        "scored": report.scored,
        "unscored": report.unscored,
        "skipped": report.skipped,
        "failed": report.failed,
    }
    if report.unscored_reasons:
        reason, count = report.unscored_reasons.most_common(1)[0]
        summary, said = told(UNSCORED, **counts, reason=reason, count=count)
    else:
        summary, said = told(SUMMARY, **counts)
    return Result(
        summary,
        {"run_id": params.run_id, "judge": spec.name, "errors": dict(report.errors), **said},
        report.failed,
        report.stopped,
    )
