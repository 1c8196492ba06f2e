"""An episodes job: multi-turn episodes of a Listener and a simulated Speaker."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

from koed_core.db import Store
from koed_core.db.jobs import JobError
from koed_core.errors import KoedError
from koed_core.i18n import N_
from koed_core.jobs.kinds.environment import (
    Environment,
    Hooks,
    Result,
    job_client,
    job_dataset,
    pass_result,
)
from koed_core.models.request import EpisodeRequest

SUMMARY = N_(
    "episode run {run}: {played} episodes played, {skipped} already done, {failed} stopped "
    "by a failure"
)


def execute_episodes(
    params: EpisodeRequest, store: Store, env: Environment, hooks: Hooks
) -> Result:
    """What `koed episodes` does: the Listener and the Speaker, turn by turn, resumed."""
    from koed_core.models.episodes import run_episodes

    spec = env.resolve(params.model, params.family)
    try:
        speaker = env.resolve(params.speaker)
    except KoedError as err:
        raise JobError(f"speaker (--speaker {params.speaker}): {err}") from None
    dataset = job_dataset(env, params.data, params.dataset_sha256)
    dialogues = params.dialogues(dataset.dialogues)
    hooks.say(
        f"episodes: {spec.name} listens, {speaker.name} plays the Speaker; up to "
        f"{params.turns} Listener turns; {Path(dataset.path).name} ({params.subset}: "
        f"{len(dialogues)} dialogues{f', the first {params.limit}' if params.limit else ''}), "
        f"{params.protocol}, {params.prompt_name()} prompts, "
        f"{','.join(params.langs)}"
    )
    with (
        job_client(env, spec, store, hooks) as listener,
        (
            nullcontext(listener) if speaker == spec else job_client(env, speaker, store, hooks)
        ) as voice,  # one model plays both: one client
    ):
        report = run_episodes(
            store,
            (spec, listener),
            (speaker, voice),
            dialogues,
            dataset.sha256,
            params,
            hooks=hooks,
        )
    return pass_result(
        report,
        SUMMARY,
        {"run_id": report.run_id},
        run=report.run_id,
        played=report.succeeded,
        skipped=report.skipped,
        failed=report.failed,
    )
