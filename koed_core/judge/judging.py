"""Judge every response of a run on the rubric: concurrent, retried, resumable, stored.

Each (response, dimension, sample) is one call and one row in ``judgments`` with the
judge model, mode, prompt version, raw prompt and raw reply. A reply that does not parse
is stored unscored with its reason; a call that fails for good is stored with the error
and tried again on the next run. As with batch runs, the calling thread alone writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from koed_core.db import JudgeConfig, Judgments, Store, now, short_hash
from koed_core.errors import KoedError
from koed_core.judge.rubric import codes, dimensions, rubric_version
from koed_core.judge.verdicts import (
    TEMPERATURE,
    JudgeMode,
    Verdict,
    build_judge_messages,
    judge_prompt_version,
    parse_verdict,
)
from koed_core.models.batch import BatchReport, Outcome, ProgressFn, run_batch, workers_for
from koed_core.models.client import ChatClient, GenerationSettings, ModelError
from koed_core.models.protocol import Message
from koed_core.models.registry import ModelSpec


class JudgeError(KoedError, ValueError):
    """A judging request that cannot be done as asked (no dimension, bad sample count)."""


@dataclass(frozen=True)
class JudgeTask:
    """One call: a response, a dimension, a sample number."""

    response_id: str
    lang: str
    context: tuple[tuple[str, str], ...]
    response: str
    dimension: str
    sample: int


def current_config(judge: str, mode: str) -> JudgeConfig:
    """The configuration a judging pass with today's templates and rubric produces."""
    return JudgeConfig(judge, mode, judge_prompt_version(), rubric_version())


def judgment_key(task: JudgeTask, config: JudgeConfig) -> str:
    """Deterministic id: the same judgment is updated, never added twice. (The prompt
    version already hashes the rubric, so 0.1.0's keys stay valid.)"""
    return short_hash(
        task.response_id,
        task.dimension,
        task.sample,
        config.model,
        config.mode,
        config.prompt_version,
    )


def tasks_for(store: Store, run_id: str, dims: Sequence[str], samples: int) -> list[JudgeTask]:
    """Every successful response of the run x dimension x sample."""
    return [
        JudgeTask(
            row["id"],
            row["lang"],
            tuple((r, t) for r, t in json.loads(row["context"] or "[]")),
            row["text"],
            dim,
            n,
        )
        for row in store.answered([run_id])
        for dim in dims
        for n in range(samples)
    ]


def chosen_dimensions(dims: Sequence[str] | None) -> list[str]:
    """None means all five; an empty choice is a mistake, not "all".

    Raises:
        JudgeError: no dimension, or an unknown one.
    """
    if dims is None:
        return list(codes())
    chosen = list(dims)
    if not chosen:
        raise JudgeError(f"choose at least one dimension ({', '.join(codes())})")
    unknown = set(chosen) - set(codes())
    if unknown:
        raise JudgeError(
            f"unknown dimension(s) {', '.join(sorted(unknown))}; use {', '.join(codes())}"
        )
    return chosen


DEFAULT_ATTEMPTS = 5
"""How often an unparseable verdict is asked again (the authors retried up to 5 times)."""
Attempt = tuple[list[Message], str | ModelError, Verdict | None]


def _ask(
    client: ChatClient,
    task: JudgeTask,
    mode: JudgeMode,
    settings: GenerationSettings,
    attempts: int,
) -> list[Attempt]:
    """Ask until the verdict parses, at most ``attempts`` times; every attempt is kept.
    A failed call (after the client's own retries) ends the task for this pass."""
    dim = next(d for d in dimensions() if d.code == task.dimension)
    messages = build_judge_messages(dim, mode, task.lang, list(task.context), task.response)
    prompt: list[Message] = [{"role": m["role"], "content": m["content"]} for m in messages]
    tried: list[Attempt] = []
    for _ in range(attempts):
        try:
            reply = client.complete(messages, settings, None).text
        except ModelError as err:
            tried.append((prompt, err, None))
            break
        verdict = parse_verdict(reply, mode)
        tried.append((prompt, reply, verdict))
        if verdict.score is not None:
            break
    return tried


def judge_run(
    store: Store,
    client: ChatClient,
    judge: ModelSpec,
    run_id: str,
    mode: JudgeMode,
    *,
    dims: Sequence[str] | None = None,
    samples: int = 1,
    concurrency: int = 8,
    max_tokens: int | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    progress: ProgressFn | None = None,
    stop: Callable[[], bool] | None = None,
    watch: Callable[[BatchReport], None] | None = None,
) -> BatchReport:
    """Judge what is not judged yet under today's configuration; store answers as they come.

    An unparseable verdict is asked again, up to ``attempts`` times in all, and every
    attempt is stored (attempt 0, 1, ...); the task counts as unscored only when none
    parsed. ``max_tokens`` defaults to 256 in paper mode (the authors' limit), 400 strict.
    ``stop`` cancels as in ``run_benchmark``: a task given up for it stores nothing.

    Raises:
        JudgeError: no dimension chosen, an unknown one, or fewer than one sample/attempt.
    """
    chosen = chosen_dimensions(dims)
    if samples < 1 or attempts < 1:
        raise JudgeError("samples and attempts must be at least 1")
    max_tokens = max_tokens or (256 if mode == "paper" else 400)
    config = current_config(judge.name, mode)
    judgments = Judgments(store)
    settings = GenerationSettings(temperature=TEMPERATURE[mode], max_tokens=max_tokens)

    def store_one(task: JudgeTask, tried: list[Attempt]) -> Outcome:
        last = tried[-1][1]
        if isinstance(last, ModelError) and last.kind == "cancelled":
            return Outcome("cancelled")
        judgments.save_all(
            [
                _row(task, judge, config, prompt, reply, verdict, attempt)
                for attempt, (prompt, reply, verdict) in enumerate(tried)
            ]
        )
        _, reply, verdict = tried[-1]
        if isinstance(reply, ModelError):
            return Outcome("failed", reply.kind)
        return Outcome("ok" if verdict is not None and verdict.score is not None else "unscored")

    return run_batch(
        tasks_for(store, run_id, chosen, samples if mode == "strict" else 1),
        key=lambda task: judgment_key(task, config),
        done=judgments.done(config),
        work=lambda task: _ask(client, task, mode, settings, attempts),
        save=store_one,
        workers=workers_for(client, concurrency),
        progress=progress,
        stop=stop,
        watch=watch,
    )


def _row(
    task: JudgeTask,
    judge: ModelSpec,
    config: JudgeConfig,
    prompt: list[Message],
    reply: str | ModelError,
    verdict: Verdict | None,
    attempt: int = 0,
) -> dict[str, object]:
    failed = isinstance(reply, ModelError)
    key = judgment_key(task, config)
    return {
        "id": key if attempt == 0 else short_hash(key, attempt),
        "attempt": attempt,
        "response_id": task.response_id,
        "judge_model": judge.name,
        "judge_backend": judge.backend,
        "mode": config.mode,
        "prompt_version": config.prompt_version,
        "rubric_version": config.rubric_version,
        "dimension": task.dimension,
        "sample": task.sample,
        "score": verdict.score if verdict else None,
        "unscored_reason": verdict.unscored_reason if verdict else None,
        "rationale": verdict.rationale if verdict else None,
        "raw_prompt": json.dumps(prompt, ensure_ascii=False),
        "raw_reply": None if failed else reply,
        "error": str(reply) if failed else None,
        "created": now(),
    }
