"""Running a plan: each model's runs (or episodes), their judging, and a sensitivity plan's
variants, resuming what is already stored."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from koed_core.db import JudgeConfig, Store
from koed_core.dialogues.dialogue import Dialogue
from koed_core.errors import KoedError
from koed_core.judge.judging import judge_run, reparse_judgments, reuse_judgments
from koed_core.models.batch import BatchReport
from koed_core.models.client import ChatClient, GenerationSettings
from koed_core.models.pipeline import same_reply_call
from koed_core.models.registry import ModelSpec
from koed_core.models.runs import READ_ONLY_STEPS
from koed_core.results.reproduce.plan import Plan, pinned, plan_settings, reusable
from koed_core.results.sensitivity import BASE


@dataclass
class Outcome:
    """What a reproduction did, per model."""

    runs: dict[tuple[str, str], str] = field(default_factory=dict)
    """(model, protocol) -> run id."""
    failures: dict[str, str] = field(default_factory=dict)
    judge: JudgeConfig | None = None
    variants: dict[str, tuple[dict[tuple[str, str], str], JudgeConfig | None]] = field(
        default_factory=dict
    )
    """A sensitivity plan's variants (the base first, as BASE): their runs and judge."""


def reproduce(
    plan: Plan,
    store: Store,
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    listeners: Mapping[str, tuple[ModelSpec, ChatClient]],
    judge: tuple[ModelSpec, ChatClient] | None,
    progress: Callable[[str], None] | None = None,
    *,
    stop: Callable[[], bool] | None = None,
    watch: Callable[[str, BatchReport], None] | None = None,
    speaker: tuple[ModelSpec, ChatClient] | None = None,
) -> Outcome:
    """Run and judge the plan (an episodes plan: play the episodes with ``speaker``);
    a sensitivity plan also each of its variants in turn, one
    step changed from the base each (a run or a judging pass the base already made is
    found stored and skipped)."""
    say = progress or (lambda _message: None)
    base = pinned(plan, {n: spec for n, (spec, _c) in listeners.items()}) if plan.variants else plan
    outcome = _reproduce_one(
        base,
        store,
        dialogues,
        dataset_sha256,
        listeners,
        judge,
        say,
        stop=stop,
        watch=watch,
        speaker=speaker,
    )
    if not plan.variants:
        return outcome
    outcome.variants[BASE] = (dict(outcome.runs), outcome.judge)
    for name, changes in plan.variants.items():
        if stop and stop():
            break
        variant = replace(base, **changes)
        reads_only = set(changes) <= set(READ_ONLY_STEPS) and all(
            same_reply_call(
                base.steps(spec.family, spec.model or ""),
                variant.steps(spec.family, spec.model or ""),
            )
            for spec, _client in listeners.values()
        )
        parser_only = set(changes) == {"judge_parse"}
        # a run of its own still takes the base's answers to byte-identical requests
        again = not reads_only and reusable(
            base, variant, {n: sp for n, (sp, _c) in listeners.items()}
        )
        got = _reproduce_one(
            variant,
            store,
            dialogues,
            dataset_sha256,
            listeners,
            judge,
            _tagged(say, name),
            stop=stop,
            watch=_prefixed(watch, name),
            reuse=dict(outcome.runs) if reads_only or again else None,
            reuse_prompts=base.prompts if again else None,
            reparse_from=(base.judge_parse or "") if parser_only else None,
        )
        outcome.variants[name] = (got.runs, got.judge)
        outcome.failures.update({f"{model} ({name})": why for model, why in got.failures.items()})
    return outcome


def _tagged(say: Callable[[str], None], name: str) -> Callable[[str], None]:
    """Progress lines of one variant, named."""
    return lambda message: say(f"[{name}] {message}")


def _prefixed(
    watch: Callable[[str, BatchReport], None] | None, name: str
) -> Callable[[str, BatchReport], None] | None:
    if watch is None:
        return None
    return lambda step, report: watch(f"[{name}] {step}", report)


def _reproduce_one(
    plan: Plan,
    store: Store,
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    listeners: Mapping[str, tuple[ModelSpec, ChatClient]],
    judge: tuple[ModelSpec, ChatClient] | None,
    progress: Callable[[str], None] | None = None,
    *,
    stop: Callable[[], bool] | None = None,
    watch: Callable[[str, BatchReport], None] | None = None,
    reuse: Mapping[tuple[str, str], str] | None = None,
    speaker: tuple[ModelSpec, ChatClient] | None = None,
    reparse_from: str | None = None,
    reuse_prompts: str | None = None,
) -> Outcome:
    """Run every model (in parallel, each at its own concurrency), judge each run as soon
    as it is done, and return the run ids. Everything stored is skipped on a rerun.

    ``stop`` cancels every step (answers arriving within seconds are stored); ``watch``
    gets each step's report as it moves, named "MODEL PROTOCOL" or "MODEL PROTOCOL judge".
    """
    outcome = Outcome()
    lock = threading.Lock()
    say = progress or (lambda _message: None)

    def one_model(name: str) -> None:
        spec, client = listeners[name]
        settings = plan_settings(plan, spec)
        for protocol in plan.protocols:
            if stop and stop():
                return
            step = f"{name} {protocol}"
            if plan.kind == "episodes":
                if speaker is None:
                    raise KoedError(f"{name}: the plan's speaker {plan.speaker!r} is not reachable")
                report = episodes_for(
                    store,
                    client,
                    spec,
                    speaker,
                    dialogues,
                    dataset_sha256,
                    plan,
                    protocol,
                    settings,
                    stop=stop,
                    watch=_named(watch, step),
                )
            else:
                report = run_benchmark_for(
                    store,
                    client,
                    spec,
                    dialogues,
                    dataset_sha256,
                    plan,
                    protocol,
                    settings,
                    stop=stop,
                    watch=_named(watch, step),
                    reuse_from=(reuse or {}).get((name, protocol)),
                    reuse_prompts=reuse_prompts,
                )
            with lock:
                outcome.runs[(name, protocol)] = report.run_id
            say(
                f"{name} {protocol}: {report.succeeded} answered, {report.skipped} already "
                f"done, {report.failed} failed"
            )
            if judge is not None:
                jspec, jclient = judge
                base_run = (reuse or {}).get((name, protocol))
                if base_run and base_run != report.run_id:
                    kept = reuse_judgments(
                        store,
                        base_run,
                        report.run_id,
                        jspec,
                        plan.judge_mode,  # type: ignore[arg-type]
                        template=plan.judge_template,
                        parse=plan.judge_parse,
                    )
                    say(
                        f"{name} {protocol}: {kept} verdicts taken from the base (the judged "
                        "text is byte-identical: asking again would only resample the judge)"
                    )
                if reparse_from is not None:
                    read = reparse_judgments(
                        store,
                        report.run_id,
                        jspec,
                        plan.judge_mode,  # type: ignore[arg-type]
                        template=plan.judge_template,
                        base_parse=reparse_from or None,
                        parse=plan.judge_parse or "",
                    )
                    say(
                        f"{name} {protocol}: {read} verdicts read again with the "
                        f"{plan.judge_parse} parser (the judge's stored replies: no call)"
                    )
                judged = judge_run(
                    store,
                    jclient,
                    jspec,
                    report.run_id,
                    plan.judge_mode,  # type: ignore[arg-type]
                    concurrency=plan.judge_concurrency,
                    template=plan.judge_template,
                    parse=plan.judge_parse,
                    replicate=plan.judge_replicate,
                    stop=stop,
                    watch=_named(watch, f"{step} judge"),
                )
                say(
                    f"{name} {protocol} judged: {judged.scored} scored, {judged.unscored} "
                    f"unscored, {judged.skipped} already done, {judged.failed} failed"
                )

    with ThreadPoolExecutor(max_workers=max(1, len(listeners))) as pool:
        futures = {pool.submit(one_model, name): name for name in listeners}
        for future, name in futures.items():
            try:
                future.result()
            except KoedError as err:
                outcome.failures[name] = str(err)
    if judge is not None:
        outcome.judge = plan.judge_config(judge[0].name)
    return outcome


def _named(
    watch: Callable[[str, BatchReport], None] | None, step: str
) -> Callable[[BatchReport], None] | None:
    """A step's own report callback, passing the step's name on."""
    if watch is None:
        return None
    return lambda report: watch(step, report)


def episodes_for(
    store: Store,
    client: ChatClient,
    spec: ModelSpec,
    speaker: tuple[ModelSpec, ChatClient],
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    plan: Plan,
    protocol: str,
    settings: GenerationSettings,
    *,
    stop: Callable[[], bool] | None = None,
    watch: Callable[[BatchReport], None] | None = None,
) -> BatchReport:
    """One model x protocol as episodes, both languages, as ``koed episodes`` would."""
    from koed_core.models.episodes import SPEAKER_MAX_TOKENS, run_episodes
    from koed_core.models.runs import settings_for

    voice, voice_client = speaker
    return run_episodes(
        store,
        client,
        spec,
        voice_client,
        voice,
        dialogues,
        dataset_sha256,
        langs=list(plan.langs),  # type: ignore[arg-type]
        settings=settings,
        speaker_settings=settings_for(voice, None, SPEAKER_MAX_TOKENS),
        protocol=protocol,  # type: ignore[arg-type]
        turns=plan.turns,
        concurrency=plan.concurrency,
        prompt_set=plan.prompts,
        steps=plan.steps(spec.family, spec.model or ""),
        stop=stop,
        watch=watch,
    )


def run_benchmark_for(
    store: Store,
    client: ChatClient,
    spec: ModelSpec,
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    plan: Plan,
    protocol: str,
    settings: GenerationSettings,
    *,
    stop: Callable[[], bool] | None = None,
    watch: Callable[[BatchReport], None] | None = None,
    reuse_from: str | None = None,
    reuse_prompts: str | None = None,
) -> BatchReport:
    """One model x protocol, both languages, as ``koed run`` would do it."""
    from koed_core.models.runs import run_benchmark

    return run_benchmark(
        store,
        client,
        spec,
        dialogues,
        dataset_sha256,
        langs=list(plan.langs),  # type: ignore[arg-type]
        protocol=protocol,  # type: ignore[arg-type]
        settings=settings,
        concurrency=plan.concurrency,
        prompt_set=plan.prompts,
        steps=plan.steps(spec.family, spec.model or ""),
        reuse_from=reuse_from,
        reuse_prompts=reuse_prompts,
        replicate=plan.run_replicate,
        stop=stop,
        watch=watch,
    )
