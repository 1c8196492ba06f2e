"""A run job: one model answering the chosen dialogues, resumed where it stopped."""

from __future__ import annotations

from pathlib import Path

from koed_core.db import Store
from koed_core.i18n import N_
from koed_core.jobs.kinds.environment import (
    Environment,
    Hooks,
    Result,
    job_client,
    job_dataset,
    pass_result,
)
from koed_core.models.request import RunRequest
from koed_core.run_steps import steps_said

SUMMARY = N_("run {run}: {answered} answered, {skipped} already done, {failed} failed")
SUMMARY_SHARED = N_(
    "run {run}: {answered} answered, {skipped} already done ({elsewhere} of them asked by "
    "another process running the same run), {failed} failed"
)


def execute_run(params: RunRequest, store: Store, env: Environment, hooks: Hooks) -> Result:
    """What `koed run` does with the same request: the stored answers resume a run."""
    from koed_core.models.runs import run_benchmark

    spec = env.resolve(params.model, params.family)
    dataset = job_dataset(env, params.data, params.dataset_sha256)
    dialogues = params.dialogues(dataset.dialogues)
    settings = params.settings(spec)
    steps = params.steps(spec)
    temp = settings.temperature
    hooks.say(
        f"{spec.name} on {Path(dataset.path).name} ({params.subset}: {len(dialogues)} dialogues), "
        f"{params.protocol}, {params.prompt_name()} prompts, {','.join(params.langs)}, "
        f"temperature {'model default' if temp is None else temp}, {settings.max_tokens} "
        f"tokens; {steps_said(steps.chosen())} ({steps.family} family)"
        + (", through the Batch API" if params.batch else "")
    )
    with job_client(
        env, spec, store, hooks, batch=params.batch, batch_size=params.batch_size
    ) as client:
        report = run_benchmark(store, client, spec, dialogues, dataset.sha256, params, hooks=hooks)
    return pass_result(
        report,
        SUMMARY_SHARED if report.elsewhere else SUMMARY,
        {"run_id": report.run_id},
        run=report.run_id,
        answered=report.succeeded,
        skipped=report.skipped,
        failed=report.failed,
        **({"elsewhere": report.elsewhere} if report.elsewhere else {}),
    )
