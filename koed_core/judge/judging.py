"""Judge every response of a run on the rubric: concurrent, retried, resumable, stored.

Each (response, dimension, sample) is one call and one row in ``judgments`` with the
judge model, mode, prompt version, raw prompt and raw reply. A reply that does not parse
is stored unscored with its reason; a call that fails for good is stored with the error
and tried again on the next run. As with batch runs, the calling thread alone writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from koed_core.db import JudgeConfig, Judgments, Runs, Store, now, short_hash
from koed_core.dialogues.variants import CELLS, text_lang
from koed_core.judge.request import (
    DEFAULT_ATTEMPTS,
    JudgeError,
    JudgeRequest,
    JudgeSteps,
    config_of,
)
from koed_core.judge.rubric import dimensions
from koed_core.judge.verdicts import (
    JudgeMode,
    Verdict,
    build_judge_messages,
    parse_verdict,
    rescue_authors,
)
from koed_core.models.client import ChatClient, GenerationSettings, ModelError, capped
from koed_core.models.passes import NO_HOOKS, Outcome, PassHooks, PassReport, run_pass, workers_for
from koed_core.models.protocol import Message
from koed_core.models.registry import ModelSpec


@dataclass(frozen=True)
class JudgeTask:
    """One call: a response, a dimension, a sample number."""

    response_id: str
    lang: str
    context: tuple[tuple[str, str], ...]
    response: str
    dimension: str
    sample: int


EARLIER_PARSE = {"paper": "lenient", "strict": "json"}


def judgment_key(task: JudgeTask, config: JudgeConfig) -> str:
    """Deterministic id: the same judgment is updated, never added twice. (The prompt
    version already hashes the rubric and the template's wording, so 0.1.0's keys stay
    valid; a parser other than the one earlier releases used is part of the key.)"""
    parts: list[object] = [
        task.response_id,
        task.dimension,
        task.sample,
        config.model,
        config.mode,
        config.prompt_version,
    ]
    if config.parse != EARLIER_PARSE.get(config.mode):
        parts.append(config.parse)
    if config.replicate:
        parts.append(f"replicate {config.replicate}")
    return short_hash(*parts)


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
        for row in Runs(store).answered([run_id], CELLS)
        for dim in dims
        for n in range(samples)
    ]


Attempt = tuple[list[Message], str | ModelError, Verdict | None]


def _ask(
    client: ChatClient,
    task: JudgeTask,
    mode: JudgeMode,
    settings: GenerationSettings,
    attempts: int,
    steps: JudgeSteps,
) -> list[Attempt]:
    """Ask until the verdict parses, at most ``attempts`` times; every attempt is kept.

    With the authors' parser a failed call uses up an attempt and the next one is made
    (their loop caught every error alike), and when every attempt was rejected their
    post-processing's rescue of bold numbers is tried on the last. Otherwise a failed
    call (after the client's own retries) ends the task for this pass."""
    dim = next(d for d in dimensions() if d.code == task.dimension)
    # a variant is judged in the language it is written in, on the transcript the model saw
    messages = build_judge_messages(
        dim, mode, text_lang(task.lang), list(task.context), task.response, steps.template
    )
    prompt: list[Message] = [{"role": m["role"], "content": m["content"]} for m in messages]
    authors = steps.parse == "authors"
    tried: list[Attempt] = []
    for _ in range(attempts):
        try:
            reply = capped(client.complete(messages, settings, None)).text
        except ModelError as err:
            tried.append((prompt, err, None))
            if authors and err.kind != "cancelled":
                continue
            break
        verdict = parse_verdict(reply, mode, steps.parse)
        tried.append((prompt, reply, verdict))
        if verdict.score is not None or not verdict.ask_again:
            break
    last_prompt, last_reply, last_verdict = tried[-1]
    if authors and last_verdict is not None and last_verdict.score is None:
        tried[-1] = (last_prompt, last_reply, rescue_authors(last_verdict))
    return tried


def reason_kind(reason: str | None) -> str:
    """An unscored verdict's reason with its score as "n", so that "score 7 is not from 1
    to 5" and "score 9 ..." count as one kind of failure."""
    # a trailing "(...)" holds the parser's own words for this one reply: not the kind
    kind = re.sub(r"\s*\((?:[^()]|\([^()]*\))*\)$", "", reason or "no score")
    return re.sub(r"\b(score )-?\d+(?:\.\d+)?", r"\1n", kind)[:160]


def reuse_judgments(
    store: Store,
    base_run: str,
    run_id: str,
    judge: ModelSpec,
    mode: JudgeMode,
    *,
    template: str | None = None,
    parse: str | None = None,
    temperature: float | None = None,
) -> int:
    """Copy the base run's verdicts onto this run's responses whose judged input is
    byte-identical (the same language, context and response text), under the same judge
    configuration, and return how many tasks need no call.

    A sensitivity variant that only reads the base's answers another way (the emotion
    reader) judges the very same texts: asking the judge again would only resample it
    (at temperature 0.7) and call that noise the variant's effect. Every attempt is
    copied, its id recomputed for the new response, so the copy is what judging it would
    have stored had the judge answered the same. ``temperature`` is the judge
    configuration's (None: the mode's): verdicts given at T=0.3 are copied as T=0.3's."""
    steps = JudgeSteps.choose(mode, template, parse)
    config = config_of(judge.name, mode, steps, temperature=temperature)
    judgments = Judgments(store)
    by_input = {
        (r["lang"], r["context"] or "[]", r["text"]): r["id"]
        for r in Runs(store).answered([base_run], CELLS)
    }
    stored: dict[str, dict[tuple[str, int], list[dict[str, Any]]]] = {}
    for row in judgments.of_run(base_run, config):
        place = (str(row["dimension"]), int(row["sample"] or 0))
        stored.setdefault(str(row["response_id"]), {}).setdefault(place, []).append(row)
    copies: list[dict[str, object]] = []
    tasks = 0
    for row in Runs(store).answered([run_id], CELLS):
        source = by_input.get((row["lang"], row["context"] or "[]", row["text"]))
        if source is None or source == row["id"]:
            continue
        for (dimension, sample), attempts in stored.get(source, {}).items():
            if all(a["error"] is not None for a in attempts):
                continue  # every attempt failed: the variant asks for itself
            key = judgment_key(JudgeTask(row["id"], row["lang"], (), "", dimension, sample), config)
            for attempt in attempts:
                n = int(attempt["attempt"] or 0)
                new_id = key if n == 0 else short_hash(key, n)
                copies.append({**attempt, "id": new_id, "response_id": row["id"]})
            tasks += 1
    if copies:
        judgments.save_all(copies)
    return tasks


REREAD_ONLY = "not asked again: a parser variant re-reads the stored replies only"
"""Said on a task a parser variant would have asked again (it makes no call)."""


def reparse_judgments(
    store: Store,
    run_id: str,
    judge: ModelSpec,
    mode: JudgeMode,
    *,
    template: str | None,
    base_parse: str | None,
    parse: str,
    temperature: float | None = None,
) -> int:
    """Read the verdicts the judge already gave under the base's parser again with
    ``parse``, storing them as that configuration's, and return how many tasks need no
    call. A parser variant changes how a reply is read, not what the judge is asked: a
    new call would resample the judge and count that noise as the parser's effect.

    The attempts are read in the order they were asked, up to the first the new parser
    scores (the judge would have been asked no further); a task whose every stored
    attempt is unreadable under the new parser too is stored unscored, as judging would
    have left it after the same replies, and so is a task the new parser would have asked
    again after its last stored reply (``REREAD_ONLY``): the variant changes the reading,
    never the retry rule, and makes no call. ``temperature`` is the judge configuration's
    (None: the mode's): replies given at T=0.3 are read again as T=0.3's, never filed
    under the mode's temperature."""
    steps = JudgeSteps.choose(mode, template, base_parse)
    base = config_of(judge.name, mode, steps, temperature=temperature)
    new_steps = JudgeSteps.choose(mode, template, parse)
    config = config_of(judge.name, mode, new_steps, temperature=temperature)
    if config == base:
        return 0
    judgments = Judgments(store)
    tasks: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for row in judgments.of_run(run_id, base):
        place = (str(row["response_id"]), str(row["dimension"]), int(row["sample"] or 0))
        tasks.setdefault(place, []).append(row)
    rows: list[dict[str, object]] = []
    count = 0
    for (response, dimension, sample), attempts in tasks.items():
        attempts.sort(key=lambda a: int(a["attempt"] or 0))
        if any(a["error"] is not None or a["raw_reply"] is None for a in attempts):
            continue  # a failed call is asked for again, by judging itself
        key = judgment_key(JudgeTask(response, "", (), "", dimension, sample), config)
        read: list[tuple[dict[str, Any], Verdict]] = []
        for attempt in attempts:
            verdict = parse_verdict(str(attempt["raw_reply"]), mode, new_steps.parse)
            read.append((attempt, verdict))
            if verdict.score is not None or not verdict.ask_again:
                break
        last = read[-1][1]
        if last.score is None and last.ask_again and len(read) < DEFAULT_ATTEMPTS:
            # the new parser would have asked again; that reply was never given, and asking
            # now would change the retry rule too: the variant reads, it never asks
            read[-1] = (
                read[-1][0],
                replace(
                    last, unscored_reason=f"{last.unscored_reason}; {REREAD_ONLY}", ask_again=False
                ),
            )
        if new_steps.parse == "authors" and last.score is None:
            read[-1] = (read[-1][0], rescue_authors(last))
        for n, (attempt, verdict) in enumerate(read):
            rows.append(
                {
                    **attempt,
                    "id": key if n == 0 else short_hash(key, n),
                    "attempt": n,
                    "parse": config.parse,
                    "score": verdict.score,
                    "unscored_reason": verdict.unscored_reason,
                    "rationale": verdict.rationale,
                }
            )
        count += 1
    if rows:
        judgments.save_all(rows)
    return count


def judge_run(
    store: Store,
    client: ChatClient,
    judge: ModelSpec,
    request: JudgeRequest,
    *,
    hooks: PassHooks = NO_HOOKS,
) -> PassReport:
    """Judge what is not judged yet of the request's run under its configuration; store
    answers as they come.

    An unparseable verdict is asked again, up to ``request.attempts`` times in all, and
    every attempt is stored (attempt 0, 1, ...); the task counts as unscored only when
    none parsed. The request resolves the template, the parser and the token limit
    (:class:`~koed_core.judge.request.JudgeRequest`). A replicate n > 0 asks the judge
    again about texts it already judged, as a source of its own (the noise floor: how far
    a second asking moves a number when nothing else changed). ``hooks.stop`` cancels as
    in ``run_benchmark``: a task given up for it stores nothing.

    Raises:
        JudgeError: no dimension chosen, an unknown one, fewer than one sample/attempt,
            or a parser that does not fit the mode.
        TemplateError: the template cannot be read or has no form for the mode.
    """
    chosen = request.dimensions()
    if request.samples < 1 or request.attempts < 1:
        raise JudgeError("samples and attempts must be at least 1")
    if request.replicate < 0:
        raise JudgeError("replicate must be 0 (the first judging) or more")
    mode: JudgeMode = request.mode  # type: ignore[assignment]
    steps = request.steps()
    config = request.config(judge.name)
    judgments = Judgments(store)
    settings = GenerationSettings(
        temperature=config.temperature, max_tokens=request.token_limit(), stop=hooks.stop
    )

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
            return Outcome("failed", reply.kind, str(reply))
        if verdict is not None and verdict.score is not None:
            return Outcome("ok")
        return Outcome("unscored", reason_kind(verdict.unscored_reason if verdict else None))

    done = judgments.done(config)
    return run_pass(
        tasks_for(store, request.run_id, chosen, request.samples_asked()),
        done=lambda task: judgment_key(task, config) in done,
        work=lambda task: _ask(client, task, mode, settings, request.attempts, steps),
        save=store_one,
        workers=workers_for(client, request.concurrency),
        hooks=hooks,
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
        "template": config.template,
        "parse": config.parse,
        "replicate": config.replicate,
        "temperature": config.temperature,
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
