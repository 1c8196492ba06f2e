"""Before anything is sent: whether each server answers and serves its model, and how many
requests, tokens and batches the plan will take."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.variants import source_lang, text_lang
from koed_core.judge.rubric import codes
from koed_core.models.client import GenerationSettings
from koed_core.models.pipeline import same_reply_call
from koed_core.models.prompts import plan_messages, same_exchange
from koed_core.models.protocol import build_task
from koed_core.models.registry import ModelSpec
from koed_core.results.reproduce.plan import CHARS_PER_TOKEN, Plan, pinned, reusable
from koed_core.results.sensitivity import BASE
from koed_core.run_steps import judged_same, rereads_only


@dataclass(frozen=True)
class Problem:
    """Why a model (or the judge) is left out before anything is sent."""

    name: str
    reason: str


def check_reachable(spec: ModelSpec, key: str | None, timeout: float = 3.0) -> str | None:
    """Why a model cannot be used now (no key, server not answering), or None."""
    if spec.backend != "openai":
        return None
    if spec.base_url is None and not key:
        return f"no API key: set {spec.api_key_env}"
    url = (spec.base_url or "https://api.openai.com/v1").rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key or 'none'}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return None
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            return f"the server refused the key ({err.code})"
        return None  # the server answers; /models may simply not exist there
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        return f"server not reachable ({getattr(err, 'reason', err)})"


def check_served(spec: ModelSpec, key: str | None) -> str | None:
    """Why a reachable model's id would fail every call (retired by its provider, or not
    on that server), or None: the server's model list when it has the id, else one call
    of one token, whose "no such model" is the answer."""
    if spec.backend != "openai":
        return None
    from koed_core.models.backends import make_client
    from koed_core.models.backends.openai_compat import served_models
    from koed_core.models.client import ModelError

    try:
        if spec.model in served_models(spec.base_url, key, limit=None):
            return None
    except ModelError:
        pass  # no list there (Anthropic's endpoint keeps none): ask the model itself
    probe = GenerationSettings(temperature=0.0, max_tokens=1, timeout_s=30.0, max_retries=1)
    try:
        make_client(spec, key).complete([{"role": "user", "content": "Hi"}], probe, None)
    except ModelError as err:
        if err.kind != "not_found":
            return None  # reachable; any other trouble is the run's to report
        instead = (
            f"; use instead: {', '.join(spec.substitutes)} (set model = ... in models.toml)"
            if spec.substitutes
            else "; see README, Reproduce the paper, for substitutes"
        )
        return f"its id {spec.model!r} is not served (retired or missing){instead}"
    return None


@dataclass(frozen=True)
class Estimate:
    """The dry run for one server: how many requests and roughly how many prompt tokens."""

    server: str
    models: tuple[str, ...]
    requests: int
    prompt_tokens: int
    batch_api: bool = False
    """An OpenAI-compatible server: ``batch`` may send these through its Batch API."""


def estimate(
    plan: Plan, specs: Mapping[str, ModelSpec], judge: ModelSpec, dialogues: Sequence[Dialogue]
) -> list[Estimate]:
    """Requests and prompt tokens per server, from the prompts that would be sent.

    Listener calls are counted exactly (two per item for the paper set); judge calls
    assume one attempt per dimension and a reply of the length of the listener request.
    A sensitivity plan adds each variant: a variant that changes only the judge reuses
    the base's answers and costs judge calls alone.
    """
    if plan.kind == "episodes":
        return _estimate_episodes(plan, specs, judge, dialogues)
    if plan.variants:
        base = pinned(plan, specs)
        parts = [_estimate(base, specs, judge, dialogues)]
        for changes in plan.variants.values():
            listeners, judges, _why = _calls_of(changes, _reply_moves(base, changes, specs))
            variant = base.varied(changes)
            same = base if listeners and reusable(base, variant, specs) else None
            parts.append(_estimate(variant, specs, judge, dialogues, listeners, judges, same))
        merged: dict[str, Estimate] = {}
        for part in parts:
            for row in part:
                seen = merged.get(row.server)
                merged[row.server] = (
                    row
                    if seen is None
                    else Estimate(
                        row.server,
                        tuple(sorted(set(seen.models) | set(row.models))),
                        seen.requests + row.requests,
                        seen.prompt_tokens + row.prompt_tokens,
                        seen.batch_api or row.batch_api,
                    )
                )
        return list(merged.values())
    return _estimate(plan, specs, judge, dialogues)


def _reply_moves(base: Plan, changes: Mapping[str, Any], specs: Mapping[str, ModelSpec]) -> bool:
    """Whether a variant sends another reply call than the base to some model (the
    emotion as its message's repr or as text): then it is no reading of stored answers."""
    variant = base.varied(changes)
    return not all(
        same_reply_call(
            base.steps(specs[m].family, specs[m].model or ""),
            variant.steps(specs[m].family, specs[m].model or ""),
        )
        for m in base.models
        if m in specs
    )


def _calls_of(changes: Mapping[str, object], reply_moves: bool = False) -> tuple[bool, bool, str]:
    """Whether a variant calls the listeners and the judge, and why (for the dry run)."""
    if reply_moves:
        return (
            True,
            True,
            "a run of its own: the reply call changes (the emotion sent as its message's "
            "repr, or as text), so new answers, each judged",
        )
    if judged_same(changes):
        return (
            False,
            False,
            (
                "reads the base's answers again; its judged texts are the base's byte for byte, "
                "so the base's verdicts are reused"
            ),
        )
    if set(changes) == {"judge_parse"}:
        return (
            False,
            False,
            (
                "reads the judge's stored replies to the base again with the new parser: no "
                "call; a task the new parser would have asked again is left unscored (it "
                "changes the reading, never the retry rule)"
            ),
        )
    if set(changes) == {"judge_replicate"}:
        return (
            False,
            True,
            (
                "the base's answers judged a second time, nothing else changed: the noise "
                "floor (how far judging again alone moves a number)"
            ),
        )
    if rereads_only(changes):
        return (
            False,
            True,
            (
                "reads the base's answers again; judges only the replies whose judged text "
                "changes (at most this many), the rest reuse the base's verdicts"
            ),
        )
    judging = {"judge_template", "judge_parse", "judge_replicate"}
    if rereads_only(set(changes) - judging):
        return False, True, "the base's answers, judged again under the new configuration"
    if set(changes) == {"run_replicate"}:
        return (
            True,
            True,
            "the base made again and judged, nothing changed: the noise floor of a run of "
            "its own (the listener's and the judge's sampling together)",
        )
    return True, True, "a run of its own: new answers, each judged"


@dataclass(frozen=True)
class VariantCalls:
    """One variant of a sensitivity plan in the dry run."""

    name: str
    listener_calls: int
    judge_calls: int
    why: str


def variant_calls(
    plan: Plan, specs: Mapping[str, ModelSpec], judge: ModelSpec, dialogues: Sequence[Dialogue]
) -> list[VariantCalls]:
    """Per variant (the base first): how many listener and judge calls it makes, and why.
    A judge that shares a server with a listener is counted apart all the same."""
    base = pinned(plan, specs)

    def count(variant: Plan, listeners: bool, judges: bool) -> tuple[int, int]:
        same = base if listeners and variant != base and reusable(base, variant, specs) else None
        heard = _estimate(variant, specs, judge, dialogues, listeners, False, same)
        judged = _estimate(variant, specs, judge, dialogues, False, judges, same)
        return (
            sum(r.requests for r in heard) if listeners else 0,
            sum(r.requests for r in judged) if judges else 0,
        )

    rows = [VariantCalls(BASE, *count(base, True, True), "the plan as written: every call")]
    for name, changes in plan.variants.items():
        listeners, judges, why = _calls_of(changes, _reply_moves(base, changes, specs))
        variant = base.varied(changes)
        if listeners and reusable(base, variant, specs):
            why += "; a request byte for byte the base's takes its answer and verdicts (no call)"
        rows.append(VariantCalls(name, *count(variant, listeners, judges), why))
    return rows


def _estimate_episodes(
    plan: Plan, specs: Mapping[str, ModelSpec], judge: ModelSpec, dialogues: Sequence[Dialogue]
) -> list[Estimate]:
    """An episodes plan at full length: every Listener and judge request once per turn,
    and a Speaker request between turns. Prompts grow each turn; they are counted at the
    first turn's length, so the tokens are a lower bound."""
    single = _estimate(replace(plan, kind="runs"), specs, judge, dialogues)
    rows = [
        Estimate(r.server, r.models, r.requests * plan.turns, r.prompt_tokens * plan.turns)
        for r in single
    ]
    speaker = specs.get(plan.speaker or "")
    if speaker is None or plan.turns < 2:
        return rows
    langs: list[Any] = list(plan.langs)
    with_context = [
        d for d in dialogues for lang in langs if build_task(d, source_lang(lang)).turns
    ]
    episodes = len(with_context) * len(plan.models) * len(plan.protocols)
    server = speaker.base_url or "api.openai.com"
    extra = Estimate(server, (speaker.name,), episodes * (plan.turns - 1), 0)
    for i, row in enumerate(rows):
        if row.server == server:
            rows[i] = Estimate(
                server,
                tuple(sorted({*row.models, speaker.name})),
                row.requests + extra.requests,
                row.prompt_tokens,
            )
            return rows
    return [*rows, extra]


def _same_as_base(
    base: Plan, spec: ModelSpec, dialogue: Dialogue, lang: Any, protocol: Any, sent: Any
) -> bool:
    """Whether the base sends this item's requests byte for byte (first and reply call)."""
    task = build_task(dialogue, lang, base.steps(spec.family, spec.model or "").commas)
    return same_exchange(task, protocol, sent, base.prompts)


def _estimate(
    plan: Plan,
    specs: Mapping[str, ModelSpec],
    judge: ModelSpec,
    dialogues: Sequence[Dialogue],
    listeners: bool = True,
    judges: bool = True,
    base: Plan | None = None,
) -> list[Estimate]:
    """Requests and prompt characters per server; with ``base`` (a variant that may take
    the base's answers), an item whose requests are byte for byte the base's is left out:
    its answer and verdicts are the base's, no call."""
    from koed_core.judge.request import JudgeSteps
    from koed_core.judge.rubric import dimensions
    from koed_core.judge.verdicts import JudgeMode, build_judge_messages

    wording = JudgeSteps.choose(plan.judge_mode, plan.judge_template, plan.judge_parse).template

    per_server: dict[str, dict[str, Any]] = {}

    def add(spec: ModelSpec, requests: int, chars: int) -> None:
        server = spec.base_url or "api.openai.com"
        entry = per_server.setdefault(
            server,
            {"models": set(), "requests": 0, "chars": 0, "batch": spec.backend == "openai"},
        )
        entry["models"].add(spec.name)
        entry["requests"] += requests
        entry["chars"] += chars

    responses = 0
    judge_chars = 0
    for name in plan.models:
        spec = specs[name]
        for protocol in plan.protocols:
            for lang in plan.langs:
                for dialogue in dialogues:
                    commas = plan.steps(spec.family, spec.model or "").commas
                    # a variant is estimated on its source's turns (the same count)
                    task = build_task(dialogue, source_lang(lang), commas)
                    if not task.turns:
                        continue
                    prompt = plan_messages(task, protocol, plan.prompts)  # type: ignore[arg-type]
                    if base is not None and _same_as_base(
                        base, spec, dialogue, lang, protocol, prompt
                    ):
                        continue
                    chars = sum(len(m["content"]) for m in prompt.first)
                    calls = 2 if prompt.two_calls else 1
                    if listeners:
                        add(spec, calls, chars * calls)
                    responses += 1
                    context: list[tuple[str, str]] = [(t.role, t.text) for t in task.turns]
                    mode: JudgeMode = "strict" if plan.judge_mode == "strict" else "paper"
                    for dim in dimensions():
                        messages = build_judge_messages(
                            dim, mode, text_lang(lang), context, "x" * 200, wording
                        )
                        judge_chars += sum(len(m["content"]) for m in messages)
    if judges:
        add(judge, responses * len(codes()), judge_chars)
    return [
        Estimate(
            server,
            tuple(sorted(e["models"])),
            e["requests"],
            e["chars"] // CHARS_PER_TOKEN,
            e["batch"],
        )
        for server, e in per_server.items()
    ]
