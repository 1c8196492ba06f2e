"""A judge job: one judge configuration scoring a run's responses."""

from __future__ import annotations

from typing import Any

from koed_core.db import Runs, Store
from koed_core.db.jobs import JobError
from koed_core.i18n import N_
from koed_core.jobs.kinds.environment import (
    Environment,
    Hooks,
    Result,
    job_client,
    job_dataset,
    pass_result,
)
from koed_core.judge.request import JudgeRequest
from koed_core.models.passes import PassReport
from koed_core.models.registry import ModelSpec

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


WHOLE_EPISODES = N_(
    "whole episodes of run {run} judged with {judge}: {scored} scored, {unscored} unscored, "
    "{skipped} already done, {failed} failed"
)
SPEAKER_TURNS = N_(
    "Speaker turns of run {run} checked with {judge}: {scored} scored, {unscored} unscored, "
    "{skipped} already done, {failed} failed"
)


def execute_judge(params: JudgeRequest, store: Store, env: Environment, hooks: Hooks) -> Result:
    """What `koed judge` does: one judge configuration over a run, kept verdicts reused."""
    from koed_core.judge.judging import judge_run

    if not Runs(store).has_run(params.run_id):
        raise JobError(f"no run {params.run_id!r} in {store.path}")
    if params.whole_episode or params.speaker_check:
        return _judge_episodes(params, store, env, hooks)
    spec = env.resolve(params.judge)
    with job_client(
        env, spec, store, hooks, batch=params.batch, batch_size=params.batch_size
    ) as client:
        report = judge_run(store, client, spec, params, hooks=hooks)
    data, counts = _told(params, spec, report)
    if report.unscored_reasons:
        reason, count = report.unscored_reasons.most_common(1)[0]
        return pass_result(
            report, UNSCORED, data, **counts, mode=params.mode, reason=reason, count=count
        )
    return pass_result(report, SUMMARY, data, **counts, mode=params.mode)


def _told(
    params: JudgeRequest, spec: ModelSpec, report: PassReport
) -> tuple[dict[str, Any], dict[str, str | int]]:
    """What every judging pass keeps and says: its run and judge, and its counts."""
    counts: dict[str, str | int] = {
        "run": params.run_id,
        "judge": spec.name,
        "scored": report.scored,
        "unscored": report.unscored,
        "skipped": report.skipped,
        "failed": report.failed,
    }
    return {"run_id": params.run_id, "judge": spec.name}, counts


def _judge_episodes(params: JudgeRequest, store: Store, env: Environment, hooks: Hooks) -> Result:
    """An episode run judged whole, or its Speaker turns checked."""
    from koed_core.judge.episodes import check_speakers, judge_whole_episodes

    stored = Runs(store).run_config(params.run_id)
    config = stored[0] if stored else {}
    if not config.get("turns"):
        raise JobError(
            f"run {params.run_id} is not an episode run: --whole-episode and --speaker-check "
            "read episodes (koed episodes)"
        )
    dataset = job_dataset(env, None, str(config.get("dataset_sha256") or "") or None)
    dialogues = {d.conv_id: d for d in dataset.dialogues}
    spec = env.resolve(params.judge)
    with job_client(env, spec, store, hooks) as client:
        if params.whole_episode:
            report = judge_whole_episodes(store, client, spec, params, dialogues, hooks=hooks)
        else:
            report = check_speakers(store, client, spec, params, dialogues, hooks=hooks)
    data, counts = _told(params, spec, report)
    return pass_result(
        report, WHOLE_EPISODES if params.whole_episode else SPEAKER_TURNS, data, **counts
    )
