"""Running a plan: each model's runs (or episodes), their judging, and a sensitivity plan's
variants, resuming what is already stored."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from koed_core.db import JudgeConfig, Store
from koed_core.dialogues.dialogue import Dialogue
from koed_core.errors import KoedError
from koed_core.judge.judging import judge_run, reparse_judgments, reuse_judgments
from koed_core.models.client import ChatClient
from koed_core.models.episodes import run_episodes
from koed_core.models.passes import PassHooks, PassReport
from koed_core.models.pipeline import same_reply_call
from koed_core.models.registry import ModelSpec
from koed_core.models.request import EpisodeRequest
from koed_core.models.runs import Reuse, run_benchmark
from koed_core.results.reproduce.plan import Plan, pinned, reusable
from koed_core.results.sensitivity import BASE
from koed_core.run_steps import rereads_only


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


@dataclass(frozen=True)
class Reached:
    """The models a reproduction talks to, each with its client: the listeners by
    registry name, the judge (None: no judging), the Speaker of an episodes plan."""

    listeners: Mapping[str, tuple[ModelSpec, ChatClient]]
    judge: tuple[ModelSpec, ChatClient] | None = None
    speaker: tuple[ModelSpec, ChatClient] | None = None

    def specs(self) -> dict[str, ModelSpec]:
        return {name: spec for name, (spec, _client) in self.listeners.items()}


@dataclass(frozen=True)
class StepHooks:
    """How a reproduction says what it does, learns it should stop, and reports each
    step ("MODEL PROTOCOL", "MODEL PROTOCOL judge") as it moves."""

    say: Callable[[str], None] = field(default=lambda _message: None)
    stop: Callable[[], bool] | None = None
    watch: Callable[[str, PassReport], None] | None = None

    def stopped(self) -> bool:
        return bool(self.stop and self.stop())

    def of_variant(self, name: str) -> StepHooks:
        """The same hooks, every line and step named by the variant."""
        watch = self.watch
        return StepHooks(
            lambda message: self.say(f"[{name}] {message}"),
            self.stop,
            None if watch is None else lambda step, report: watch(f"[{name}] {step}", report),
        )

    def of_step(self, step: str) -> PassHooks:
        """One step's pass hooks, passing the step's name on."""
        watch = self.watch
        return PassHooks(
            stop=self.stop,
            watch=None if watch is None else lambda report: watch(step, report),
        )


@dataclass(frozen=True)
class FromBase:
    """What a variant takes from its base: the base's runs by (model, protocol), whose
    answers are read again (``prompts``: only answers to byte-identical requests), and
    for a parser variant the base's parser, whose stored verdicts are read again."""

    runs: Mapping[tuple[str, str], str]
    prompts: str | None = None
    reparse_from: str | None = None


def reproduce(
    plan: Plan,
    store: Store,
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    models: Reached,
    hooks: StepHooks | None = None,
) -> Outcome:
    """Run and judge the plan (an episodes plan: play the episodes with the Speaker);
    a sensitivity plan also each of its variants in turn, one
    step changed from the base each (a run or a judging pass the base already made is
    found stored and skipped)."""
    hooks = hooks or StepHooks()
    base = pinned(plan, models.specs()) if plan.variants else plan
    outcome = _reproduce_one(base, store, dialogues, dataset_sha256, models, hooks)
    if not plan.variants:
        return outcome
    outcome.variants[BASE] = (dict(outcome.runs), outcome.judge)
    for name, changes in plan.variants.items():
        if hooks.stopped():
            break
        variant = base.varied(changes)
        reads_only = rereads_only(changes) and all(
            same_reply_call(
                base.steps(spec.family, spec.model or ""),
                variant.steps(spec.family, spec.model or ""),
            )
            for spec in models.specs().values()
        )
        parser_only = set(changes) == {"judge_parse"}
        # a run of its own still takes the base's answers to byte-identical requests
        again = not reads_only and reusable(base, variant, models.specs())
        got = _reproduce_one(
            variant,
            store,
            dialogues,
            dataset_sha256,
            models,
            hooks.of_variant(name),
            FromBase(
                dict(outcome.runs) if reads_only or again else {},
                base.prompts if again else None,
                (base.judge_parse or "") if parser_only else None,
            ),
        )
        outcome.variants[name] = (got.runs, got.judge)
        outcome.failures.update({f"{model} ({name})": why for model, why in got.failures.items()})
    return outcome


def _reproduce_one(
    plan: Plan,
    store: Store,
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    models: Reached,
    hooks: StepHooks,
    base: FromBase | None = None,
) -> Outcome:
    """Run every model (in parallel, each at its own concurrency), judge each run as soon
    as it is done, and return the run ids. Everything stored is skipped on a rerun.

    ``hooks.stop`` cancels every step (answers arriving within seconds are stored);
    ``hooks.watch`` gets each step's report as it moves.
    """
    outcome = Outcome()
    lock = threading.Lock()
    say, stop, judge, speaker = hooks.say, hooks.stop, models.judge, models.speaker
    reuse = base.runs if base else {}
    reuse_prompts = base.prompts if base else None
    reparse_from = base.reparse_from if base else None

    def one_model(name: str) -> None:
        spec, client = models.listeners[name]
        for protocol in plan.protocols:
            if stop and stop():
                return
            step = f"{name} {protocol}"
            asked = plan.run_request(name, protocol)
            if isinstance(asked, EpisodeRequest):
                if speaker is None:
                    raise KoedError(f"{name}: the plan's speaker {plan.speaker!r} is not reachable")
                report = run_episodes(
                    store,
                    (spec, client),
                    speaker,
                    dialogues,
                    dataset_sha256,
                    asked,
                    hooks=hooks.of_step(step),
                )
            else:
                base_run = reuse.get((name, protocol))
                report = run_benchmark(
                    store,
                    client,
                    spec,
                    dialogues,
                    dataset_sha256,
                    asked,
                    hooks=hooks.of_step(step),
                    reuse=Reuse(base_run, reuse_prompts) if base_run else None,
                )
            with lock:
                outcome.runs[(name, protocol)] = report.run_id
            say(
                f"{name} {protocol}: {report.succeeded} answered, {report.skipped} already "
                f"done, {report.failed} failed"
            )
            if judge is not None:
                jspec, jclient = judge
                base_run = reuse.get((name, protocol))
                if base_run and base_run != report.run_id:
                    kept = reuse_judgments(
                        store,
                        base_run,
                        report.run_id,
                        jspec,
                        plan.judge_mode,  # type: ignore[arg-type]
                        template=plan.judge_template,
                        parse=plan.judge_parse,
                        temperature=plan.judge_temperature,
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
                        temperature=plan.judge_temperature,
                    )
                    say(
                        f"{name} {protocol}: {read} verdicts read again with the "
                        f"{plan.judge_parse} parser (the judge's stored replies: no call)"
                    )
                judged = judge_run(
                    store,
                    jclient,
                    jspec,
                    plan.judge_request(report.run_id),
                    hooks=hooks.of_step(f"{step} judge"),
                )
                say(
                    f"{name} {protocol} judged: {judged.scored} scored, {judged.unscored} "
                    f"unscored, {judged.skipped} already done, {judged.failed} failed"
                )

    with ThreadPoolExecutor(max_workers=max(1, len(models.listeners))) as pool:
        futures = {pool.submit(one_model, name): name for name in models.listeners}
        for future, name in futures.items():
            try:
                future.result()
            except KoedError as err:
                outcome.failures[name] = str(err)
    if judge is not None:
        outcome.judge = plan.judge_config(judge[0].name)
    return outcome
