"""An episodes job: multi-turn episodes of a Listener and a simulated Speaker."""

from __future__ import annotations

from pathlib import Path

from koed_core.db import Store
from koed_core.db.jobs import JobError
from koed_core.errors import KoedError
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
from koed_core.jobs.kinds.params import EpisodeJob
from koed_core.models.pipeline import steps_for
from koed_core.models.prompts import (
    default_prompt_set,
    load_prompt_set,
)

SUMMARY = N_(
    "episode run {run}: {played} episodes played, {skipped} already done, {failed} stopped "
    "by a failure"
)


def execute_episodes(params: EpisodeJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    """What `koed episodes` does: the Listener and the Speaker, turn by turn, resumed."""
    from koed_core.dialogues.subsets import select
    from koed_core.models.episodes import SPEAKER_MAX_TOKENS, run_episodes
    from koed_core.models.runs import settings_for

    spec = env.resolve(params.model, params.family)
    try:
        speaker = env.resolve(params.speaker)
    except KoedError as err:
        raise JobError(f"speaker (--speaker {params.speaker}): {err}") from None
    dataset = job_dataset(env, params.data, params.dataset_sha256)
    dialogues = select(dataset.dialogues, params.subset, sample=params.sample, seed=params.seed)
    settings = settings_for(spec, params.temperature, params.max_tokens)
    speaker_settings = settings_for(speaker, params.speaker_temperature, SPEAKER_MAX_TOKENS)
    prompts = "native" if params.protocol == "direct" else params.prompts
    prompts = prompts or default_prompt_set(params.protocol)  # type: ignore[arg-type]
    steps = steps_for(
        load_prompt_set(prompts).profile,
        spec.family,
        model=spec.model or "",
        postprocess=params.postprocess,
        commas=params.commas,
        emotion_reader=params.emotion_reader,
    )
    hooks.say(
        f"episodes: {spec.name} listens, {speaker.name} plays the Speaker; up to "
        f"{params.turns} Listener turns; {Path(dataset.path).name} ({params.subset}: "
        f"{len(dialogues)} dialogues{f', the first {params.limit}' if params.limit else ''}), "
        f"{params.protocol}, {prompts} prompts, "
        f"{','.join(params.langs)}"
    )
    listener = client_for(env, spec, store, stop=hooks.stop)
    voice = listener if speaker == spec else client_for(env, speaker, store, stop=hooks.stop)
    try:
        report = run_episodes(
            store,
            listener,
            spec,
            voice,
            speaker,
            dialogues,
            dataset.sha256,
            langs=list(params.langs),  # type: ignore[arg-type]
            settings=settings,
            speaker_settings=speaker_settings,
            protocol=params.protocol,  # type: ignore[arg-type]
            turns=params.turns,
            limit=params.limit,
            concurrency=params.concurrency,
            prompt_set=prompts,
            steps=steps,
            speaker_prompt=params.speaker_prompts,
            oracle=params.oracle,
            progress=hooks.progress,
            stop=hooks.stop,
            watch=hooks.watch,
        )
    finally:
        close_client(listener)
        if voice is not listener:
            close_client(voice)
    summary, said = told(
        SUMMARY,
        run=report.run_id,
        played=report.succeeded,
        skipped=report.skipped,
        failed=report.failed,
    )
    return Result(
        summary,
        {"run_id": report.run_id, "errors": dict(report.errors), **said},
        report.failed,
        report.stopped,
    )
