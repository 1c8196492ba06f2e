"""A reproduce job: a whole reproduction plan, as `koed reproduce` runs it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict

from koed_core.db import Store
from koed_core.db.jobs import JobError
from koed_core.i18n import N_
from koed_core.jobs.kinds.environment import (
    Environment,
    Hooks,
    Result,
    job_client,
    job_dataset,
    told,
)
from koed_core.jobs.kinds.params import (
    ReproduceJob,
)
from koed_core.models.client import ChatClient, ModelError
from koed_core.models.registry import ModelSpec

SUMMARY = N_("{plan}: {runs} runs")
SUMMARY_LEFT_OUT = N_("{plan}: {runs} runs, left out: {models}")
SUMMARIES = (SUMMARY, SUMMARY_LEFT_OUT)


def execute_reproduce(params: ReproduceJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    """What `koed reproduce` does: the plan checked first, then every model and variant."""
    from koed_core.dialogues.subsets import select
    from koed_core.results import reproduce

    plan = reproduce.parse_plan(params.plan_text, params.plan)
    dataset = job_dataset(env, params.data, params.dataset_sha256)
    dialogues = select(
        dataset.dialogues,
        plan.subset,
        sample=plan.sample,
        seed=plan.seed,
        design=plan.sample_design,
    )
    specs = {name: env.resolve(name) for name in plan.models}
    judge_spec = env.resolve(plan.judge)
    speaker_spec = env.resolve(plan.speaker) if plan.kind == "episodes" and plan.speaker else None
    problems: dict[str, str] = {}

    def preflight(spec: ModelSpec) -> tuple[str | None, str | None]:
        """(why it cannot be reached, why its id would fail), each None when fine."""
        reason = reproduce.check_reachable(spec, env.key(spec))
        return reason, None if reason else reproduce.check_served(spec, env.key(spec))

    everyone = [*specs.items(), (judge_spec.name, judge_spec)]
    if speaker_spec is not None and speaker_spec.name not in dict(everyone):
        everyone.append((speaker_spec.name, speaker_spec))
    with ThreadPoolExecutor(max_workers=len(everyone)) as pool:  # servers answer in parallel
        checked = list(pool.map(lambda item: preflight(item[1]), everyone))
    retired: dict[str, str] = {}
    for (name, _spec), (reason, gone) in zip(everyone, checked, strict=True):
        if reason:
            problems[name] = reason
            hooks.say(f"left out: {name}: {reason}")
        elif gone:
            retired[name] = gone
    if retired:  # every call would fail: stop before anything is spent
        raise JobError(
            "stopped before sending anything: "
            + "; ".join(f"{name}: {reason}" for name, reason in retired.items())
        )
    held = ExitStack()  # every client made below, closed when the plan ends

    def client(spec: ModelSpec) -> ChatClient:
        if plan.batch and spec.backend == "openai":
            try:
                return held.enter_context(job_client(env, spec, store, hooks, batch=True))
            except ModelError as err:
                if err.kind != "not_found":
                    raise
                hooks.say(f"{spec.name}: no Batch API at its server, so live calls")
        return held.enter_context(job_client(env, spec, store, hooks))

    with held:
        listeners = {
            name: (spec, client(spec)) for name, spec in specs.items() if name not in problems
        }
        judge = None if judge_spec.name in problems else (judge_spec, client(judge_spec))
        voice = None
        if speaker_spec is not None and speaker_spec.name not in problems:
            found = listeners.get(speaker_spec.name)
            voice = (speaker_spec, found[1] if found else client(speaker_spec))
        outcome = reproduce.reproduce(
            plan,
            store,
            dialogues,
            dataset.sha256,
            reproduce.Reached(listeners, judge, voice),
            reproduce.StepHooks(hooks.say, hooks.stop, hooks.step),
        )
    problems.update(outcome.failures)
    runs = {f"{model} {protocol}": run for (model, protocol), run in outcome.runs.items()}
    left_out = ", ".join(sorted(problems))
    summary, said = (
        told(SUMMARY_LEFT_OUT, plan=plan.name, runs=len(outcome.runs), models=left_out)
        if problems
        else told(SUMMARY, plan=plan.name, runs=len(outcome.runs))
    )
    variants = {
        name: {
            "runs": {f"{model} {protocol}": run for (model, protocol), run in made.items()},
            "judge": asdict(config) if config else None,
        }
        for name, (made, config) in outcome.variants.items()
    }
    return Result(
        summary,
        {
            "runs": runs,
            "judge": outcome.judge.label if outcome.judge else None,
            **({"variants": variants} if variants else {}),
            **said,
        },
        len(problems),
        bool(hooks.stop and hooks.stop()),
        problems,
    )
