"""Judge every response of a run on the rubric: concurrent, retried, resumable, stored.

Each (response, dimension, sample) is one call and one row in ``judgments`` with the
judge model, mode, prompt version, raw prompt and raw reply. A reply that does not parse
is stored unscored with its reason; a call that fails for good is stored with the error
and tried again on the next run. As with batch runs, the calling thread alone writes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from koed_core.judge import (
    TEMPERATURE,
    JudgeMode,
    Verdict,
    build_judge_messages,
    judge_prompt_version,
    parse_verdict,
)
from koed_core.llm import ChatClient, GenerationSettings, ModelError
from koed_core.pool import run_bounded
from koed_core.registry import ModelSpec
from koed_core.rubric import codes, dimensions
from koed_core.storage import Store, now, short_hash

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class JudgeTask:
    """One call: a response, a dimension, a sample number."""

    response_id: str
    lang: str
    context: tuple[tuple[str, str], ...]
    response: str
    dimension: str
    sample: int


@dataclass
class JudgeReport:
    """What a judging pass did."""

    planned: int
    skipped: int = 0
    scored: int = 0
    unscored: int = 0
    failed: int = 0
    errors: Counter[str] = field(default_factory=Counter)


class JudgmentStore:
    """The ``judgments`` table next to runs and responses."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        with store.write():
            self.db.executescript(
                """
                create table if not exists judgments (
                    id text primary key, response_id text, judge_model text,
                    judge_backend text, mode text, prompt_version text, dimension text,
                    sample integer, score real, unscored_reason text, rationale text,
                    raw_prompt text, raw_reply text, error text, created text);
                create index if not exists judgments_response on judgments(response_id);
                """
            )

    @staticmethod
    def key(task: JudgeTask, judge: str, mode: str, version: str) -> str:
        """Deterministic id: the same judgment is updated, never added twice."""
        return short_hash(task.response_id, task.dimension, task.sample, judge, mode, version)

    def done(self, judge: str, mode: str, version: str) -> set[str]:
        """Ids of judgments that got an answer (scored or unscored); errors are retried."""
        rows = self.db.execute(
            "select id from judgments where judge_model = ? and mode = ? and prompt_version = ? "
            "and error is null",
            [judge, mode, version],
        )
        return {r[0] for r in rows.fetchall()}

    def save(self, row: dict[str, object]) -> None:
        """Insert or replace one judgment."""
        with self.store.write():
            self.db.table("judgments").upsert(row, pk="id")

    def scores(self, run_id: str | None = None) -> pd.DataFrame:
        """Mean score over samples per (response, dimension, judge, mode), with the item's data."""
        sql = """
            select j.response_id, j.dimension, j.judge_model, j.mode, j.prompt_version,
                   avg(j.score) as score, count(j.score) as samples_scored,
                   group_concat(j.unscored_reason, '; ') as unscored_reason,
                   max(j.rationale) as rationale, s.run_id, s.lang, s.conv_id, s.text
            from judgments j join responses s on s.id = j.response_id
            where j.error is null {where}
            group by j.response_id, j.dimension, j.judge_model, j.mode, j.prompt_version
        """.format(where="and s.run_id = ?" if run_id else "")
        return pd.DataFrame(list(self.db.query(sql, [run_id] if run_id else [])))


def tasks_for(store: Store, run_id: str, dims: Sequence[str], samples: int) -> list[JudgeTask]:
    """Every successful response of the run x dimension x sample."""
    rows = store.db.execute(
        "select id, lang, context, text from responses where run_id = ? and error is null "
        "and text is not null and text != '' order by conv_id, lang",
        [run_id],
    ).fetchall()
    return [
        JudgeTask(rid, lang, tuple((r, t) for r, t in json.loads(ctx or "[]")), text, dim, n)
        for rid, lang, ctx, text in rows
        for dim in dims
        for n in range(samples)
    ]


def _ask(
    client: ChatClient, task: JudgeTask, mode: JudgeMode, settings: GenerationSettings
) -> tuple[list[dict[str, str]], str | ModelError]:
    dim = next(d for d in dimensions() if d.code == task.dimension)
    messages = build_judge_messages(dim, mode, task.lang, list(task.context), task.response)
    prompt = [{"role": m["role"], "content": m["content"]} for m in messages]
    try:
        return prompt, client.complete(messages, settings, None).text
    except ModelError as err:
        return prompt, err


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
    max_tokens: int = 400,
    progress: ProgressFn | None = None,
) -> JudgeReport:
    """Judge what is not judged yet; store every answer as it arrives."""
    judgments = JudgmentStore(store)
    version = judge_prompt_version()
    chosen = list(dims or codes())
    unknown = set(chosen) - set(codes())
    if unknown:
        raise ValueError(
            f"unknown dimension(s) {', '.join(sorted(unknown))}; use {', '.join(codes())}"
        )
    tasks = tasks_for(store, run_id, chosen, samples if mode == "strict" else 1)
    done = judgments.done(judge.name, mode, version)
    pending = [t for t in tasks if judgments.key(t, judge.name, mode, version) not in done]
    report = JudgeReport(planned=len(tasks), skipped=len(tasks) - len(pending))
    settings = GenerationSettings(temperature=TEMPERATURE[mode], max_tokens=max_tokens)
    workers = max(1, min(concurrency, client.max_concurrency or concurrency))
    if progress:
        progress(report.skipped, len(tasks))

    def handle(task: JudgeTask, result: tuple[list[dict[str, str]], str | ModelError]) -> None:
        prompt, reply = result
        verdict = None if isinstance(reply, ModelError) else parse_verdict(reply, mode)
        judgments.save(_row(task, judge, mode, version, prompt, reply, verdict))
        _count(report, reply, verdict)

    def show_progress() -> None:
        if progress:
            finished = report.skipped + report.scored + report.unscored + report.failed
            progress(finished, len(tasks))

    run_bounded(
        pending, lambda task: _ask(client, task, mode, settings), handle, workers, show_progress
    )
    return report


def _row(
    task: JudgeTask,
    judge: ModelSpec,
    mode: str,
    version: str,
    prompt: list[dict[str, str]],
    reply: str | ModelError,
    verdict: Verdict | None,
) -> dict[str, object]:
    failed = isinstance(reply, ModelError)
    return {
        "id": JudgmentStore.key(task, judge.name, mode, version),
        "response_id": task.response_id,
        "judge_model": judge.name,
        "judge_backend": judge.backend,
        "mode": mode,
        "prompt_version": version,
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


def _count(report: JudgeReport, reply: str | ModelError, verdict: Verdict | None) -> None:
    if isinstance(reply, ModelError):
        report.failed += 1
        report.errors[reply.kind] += 1
    elif verdict is not None and verdict.score is not None:
        report.scored += 1
    else:
        report.unscored += 1
