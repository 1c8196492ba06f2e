"""A run job: one model answering the chosen dialogues, resumed where it stopped."""

from __future__ import annotations

from pathlib import Path

from koed_core.db import Store
from koed_core.i18n import N_
from koed_core.jobs.kinds.environment import (
    Environment,
    Hooks,
    Result,
    client_for,
    close_client,
    job_dataset,
    told,
)
from koed_core.jobs.kinds.params import RunJob
from koed_core.models.pipeline import steps_for
from koed_core.models.prompts import (
    default_prompt_set,
    load_prompt_set,
)

SUMMARY = N_("run {run}: {answered} answered, {skipped} already done, {failed} failed")
SUMMARY_SHARED = N_(
    "run {run}: {answered} answered, {skipped} already done ({elsewhere} of them asked by "
    "another process running the same run), {failed} failed"
)


def execute_run(params: RunJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    """What `koed run` does with the same parameters: the stored answers resume a run."""
    from koed_core.dialogues.subsets import select
    from koed_core.models.runs import run_benchmark, settings_for

    spec = env.resolve(params.model, params.family)
    dataset = job_dataset(env, params.data, params.dataset_sha256)
    dialogues = select(dataset.dialogues, params.subset, sample=params.sample, seed=params.seed)
    settings = settings_for(spec, params.temperature, params.max_tokens)
    prompts = params.prompts or default_prompt_set(params.protocol)  # type: ignore[arg-type]
    if params.protocol == "direct":
        prompts = "native"
    steps = steps_for(
        load_prompt_set(prompts).profile,
        spec.family,
        model=spec.model or "",
        postprocess=params.postprocess,
        commas=params.commas,
        emotion_reader=params.emotion_reader,
    )
    temp = settings.temperature
    hooks.say(
        f"{spec.name} on {Path(dataset.path).name} ({params.subset}: {len(dialogues)} dialogues), "
        f"{params.protocol}, {prompts} prompts, {','.join(params.langs)}, temperature "
        f"{'model default' if temp is None else temp}, {settings.max_tokens} tokens; "
        f"post-processing {steps.postprocess} ({steps.family}), commas {steps.commas}, "
        f"emotion reader {steps.emotion_reader}"
        + (", through the Batch API" if params.batch else "")
    )
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
        report = run_benchmark(
            store,
            client,
            spec,
            dialogues,
            dataset.sha256,
            langs=list(params.langs),  # type: ignore[arg-type]
            protocol=params.protocol,  # type: ignore[arg-type]
            settings=settings,
            limit=params.limit,
            concurrency=params.concurrency,
            progress=hooks.progress,
            prompt_set=prompts,
            steps=steps,
            stop=hooks.stop,
            watch=hooks.watch,
        )
    finally:
        close_client(client)
    summary, said = told(
        SUMMARY_SHARED if report.elsewhere else SUMMARY,
        run=report.run_id,
        answered=report.succeeded,
        skipped=report.skipped,
        failed=report.failed,
        **({"elsewhere": report.elsewhere} if report.elsewhere else {}),
    )
    return Result(
        summary,
        {"run_id": report.run_id, "errors": dict(report.errors), **said},
        report.failed,
        report.stopped,
    )
