"""`koed reproduce PLAN`: the paper's table from one command, resumable at every step.

A plan (TOML) names the models, protocols, languages, subset, prompt set and judge.
Before anything is sent, every model and the judge are checked (key present, server
answering); a model that fails is reported and left out, the others go on. Each model
then runs in its own thread at its own concurrency (models never wait on each other),
and each finished run is judged at once, overlapping the other models' runs. Runs and
judging are the same resumable batches as ``koed run`` and ``koed judge``: a killed
reproduction, started again, asks only what is not stored.
"""

from __future__ import annotations

import threading
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from koed_core.db import JudgeConfig, Store
from koed_core.dialogues.dialogue import Dialogue
from koed_core.errors import KoedError
from koed_core.judge.judging import current_config, judge_run
from koed_core.judge.rubric import codes
from koed_core.models.batch import BatchReport
from koed_core.models.client import ChatClient, GenerationSettings
from koed_core.models.pipeline import EARLIER, Steps, steps_for
from koed_core.models.prompts import PROMPT_SETS, load_prompt_set, plan_messages
from koed_core.models.protocol import PROTOCOLS, build_task
from koed_core.models.registry import ModelSpec, decoding
from koed_core.models.runs import READ_ONLY_STEPS
from koed_core.results.gaps import paired_gap
from koed_core.results.sensitivity import BASE

CHARS_PER_TOKEN = 4
"""For the dry run's token estimate (no tokenizer for every model offline)."""


class PlanError(KoedError):
    """A plan file that cannot be used; names the file and the key."""


@dataclass(frozen=True)
class Plan:
    """What to reproduce."""

    name: str
    models: tuple[str, ...]
    judge: str
    subset: str = "paper-100"
    langs: tuple[str, ...] = ("ko", "en")
    protocols: tuple[str, ...] = ("single", "multi")
    prompts: str = "paper"
    judge_mode: str = "paper"
    concurrency: int = 8
    judge_concurrency: int = 8
    sample: int | None = None
    seed: int = 0
    batch: bool = False
    """Send the requests of OpenAI-compatible models through the provider's Batch API."""
    postprocess: str | None = None
    commas: str | None = None
    emotion_reader: str | None = None
    """The pipeline's steps; None: the prompt set's profile (the authors' for paper)."""
    temperature: float | str | None = None
    """Every model's temperature, or "default" (the server's own); None: each model's."""
    judge_template: str | None = None
    judge_parse: str | None = None
    """None: the judge mode's (paper: the authors' template and parser)."""
    kind: str = "runs"
    """runs (one reply after each KoED context) or episodes (``koed episodes``: the
    models listen to a simulated Speaker for ``turns`` Listener turns)."""
    speaker: str | None = None
    """Episodes: who plays the Speaker (a registry name)."""
    turns: int = 3
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Named variants of the plan, each changing one step (a sensitivity plan): every
    variant is run and judged beside the plan itself, the base."""

    def steps(self, family: str) -> Steps:
        """The pipeline steps of one model's runs."""
        return steps_for(
            load_prompt_set(self.prompts).profile,
            family,
            postprocess=self.postprocess,
            commas=self.commas,
            emotion_reader=self.emotion_reader,
        )

    def judge_config(self, judge: str) -> JudgeConfig:
        """The judge configuration this plan's judging produces."""
        return current_config(judge, self.judge_mode, self.judge_template, self.judge_parse)


def load_plan(path: Path) -> Plan:
    """Read and check a plan file.

    Raises:
        PlanError: not TOML, an unknown key, or a value outside its choices.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file") from None
    except (IsADirectoryError, UnicodeDecodeError) as err:
        raise PlanError(f"{path}: not a plan file ({err})") from None
    return parse_plan(text, str(path))


def parse_plan(text: str, path: str = "plan") -> Plan:
    """Check a plan's TOML text (a job keeps the text it was queued with).

    Raises:
        PlanError: not TOML, an unknown key, or a value outside its choices.
    """
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise PlanError(f"{path}: not valid TOML ({err})") from None
    allowed = {f.name for f in fields(Plan)}
    unknown = set(raw) - allowed
    if unknown:
        raise PlanError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    for key in ("name", "models", "judge"):
        if key not in raw:
            raise PlanError(f"{path}: {key} is missing")
    for key in ("models", "langs", "protocols"):
        if key in raw:
            raw[key] = tuple(raw[key])
    variants = raw.get("variants", {})
    if not isinstance(variants, dict) or not all(isinstance(v, dict) for v in variants.values()):
        raise PlanError(f"{path}: variants is a table of named tables ([variants.NAME])")
    for name, changes in variants.items():
        wrong = set(changes) - set(VARIANT_KEYS)
        if wrong or not changes:
            raise PlanError(
                f"{path}: variant {name!r} may change {', '.join(VARIANT_KEYS)} "
                f"(found {', '.join(sorted(wrong)) or 'nothing'})"
            )
    plan = Plan(**raw)
    _check(plan, path)
    for name, changes in plan.variants.items():
        _check(replace(plan, variants={}, **changes), f"{path}: variant {name!r}")
    return plan


VARIANT_KEYS = (
    "prompts",
    "postprocess",
    "commas",
    "emotion_reader",
    "temperature",
    "judge_template",
    "judge_parse",
)


def _check(plan: Plan, path: str) -> None:
    """Every value of a plan within its choices.

    Raises:
        PlanError: naming the file (and variant) and the key.
    """
    checks = [
        (set(plan.langs) <= {"ko", "en"} and plan.langs, "langs must be ko and/or en"),
        (set(plan.protocols) <= set(PROTOCOLS) and plan.protocols, "protocols: single, multi"),
        (
            plan.prompts in PROMPT_SETS or Path(plan.prompts).suffix == ".toml",
            f"prompts must be one of {', '.join(PROMPT_SETS)} or a .toml file",
        ),
        (plan.judge_mode in ("paper", "strict"), "judge_mode must be paper or strict"),
        (plan.concurrency >= 1 and plan.judge_concurrency >= 1, "concurrency must be >= 1"),
        (plan.models, "models is empty"),
        (plan.kind in ("runs", "episodes"), "kind must be runs or episodes"),
        (plan.kind != "episodes" or bool(plan.speaker), "an episodes plan needs a speaker"),
        (
            plan.kind != "episodes" or (isinstance(plan.turns, int) and 1 <= plan.turns <= 10),
            "turns must be between 1 and 10",
        ),
        (plan.kind != "episodes" or not plan.variants, "an episodes plan has no variants"),
    ]
    temp = plan.temperature
    checks.append(
        (
            temp is None
            or temp == "default"
            or (isinstance(temp, int | float) and not isinstance(temp, bool) and 0 <= temp <= 2),
            'temperature must be a number from 0 to 2 or "default"',
        )
    )
    for ok, message in checks:
        if not ok:
            raise PlanError(f"{path}: {message}")
    try:
        load_prompt_set(plan.prompts)
        plan.steps("open")
        plan.judge_config(plan.judge)
    except KoedError as err:
        raise PlanError(f"{path}: {err}") from None


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
        base = pinned(plan)
        parts = [_estimate(base, specs, judge, dialogues)]
        for changes in plan.variants.values():
            no_calls = set(changes) <= {"judge_template", "judge_parse", *READ_ONLY_STEPS}
            variant = replace(base, **changes)
            parts.append(_estimate(variant, specs, judge, dialogues, listeners=not no_calls))
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
    with_context = [d for d in dialogues for lang in langs if build_task(d, lang).turns]
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


def _estimate(
    plan: Plan,
    specs: Mapping[str, ModelSpec],
    judge: ModelSpec,
    dialogues: Sequence[Dialogue],
    listeners: bool = True,
) -> list[Estimate]:
    from koed_core.judge.judging import JudgeSteps
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
                    task = build_task(dialogue, lang)  # type: ignore[arg-type]
                    if not task.turns:
                        continue
                    prompt = plan_messages(task, protocol, plan.prompts)  # type: ignore[arg-type]
                    chars = sum(len(m["content"]) for m in prompt.first)
                    calls = 2 if prompt.two_calls else 1
                    if listeners:
                        add(spec, calls, chars * calls)
                    responses += 1
                    context: list[tuple[str, str]] = [(t.role, t.text) for t in task.turns]
                    mode: JudgeMode = "strict" if plan.judge_mode == "strict" else "paper"
                    for dim in dimensions():
                        messages = build_judge_messages(
                            dim, mode, lang, context, "x" * 200, wording
                        )
                        judge_chars += sum(len(m["content"]) for m in messages)
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


def pinned(plan: Plan) -> Plan:
    """The plan with every step written out as its base resolves it, so that a variant
    changing one step leaves the others where the base has them (native prompts, say,
    would otherwise bring the native set's own post-processing)."""
    steps = plan.steps("open")
    judging = plan.judge_config(plan.judge)
    return replace(
        plan,
        variants={},
        postprocess=steps.postprocess,
        commas=steps.commas,
        emotion_reader=steps.emotion_reader,
        judge_template=plan.judge_template or judging.template,
        judge_parse=judging.parse,
    )


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
    base = pinned(plan) if plan.variants else plan
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
        reads_only = set(changes) <= set(READ_ONLY_STEPS)
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
            reuse=dict(outcome.runs) if reads_only else None,
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
) -> Outcome:
    """Run every model (in parallel, each at its own concurrency), judge each run as soon
    as it is done, and return the run ids. Everything stored is skipped on a rerun.

    ``stop`` cancels every step (answers in flight are stored); ``watch`` gets each step's
    report as it moves, named "MODEL PROTOCOL" or "MODEL PROTOCOL judge".
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
                )
            with lock:
                outcome.runs[(name, protocol)] = report.run_id
            say(
                f"{name} {protocol}: {report.succeeded} answered, {report.skipped} already "
                f"done, {report.failed} failed"
            )
            if judge is not None:
                jspec, jclient = judge
                judged = judge_run(
                    store,
                    jclient,
                    jspec,
                    report.run_id,
                    plan.judge_mode,  # type: ignore[arg-type]
                    concurrency=plan.judge_concurrency,
                    template=plan.judge_template,
                    parse=plan.judge_parse,
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
        steps=plan.steps(spec.family),
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
        steps=plan.steps(spec.family),
        reuse_from=reuse_from,
        stop=stop,
        watch=watch,
    )


def plan_settings(plan: Plan, spec: ModelSpec) -> GenerationSettings:
    """One model's decoding in a plan: the plan's temperature when it sets one ("default":
    the server's own, nothing sent), else the model's own from models.toml."""
    from koed_core.models.runs import settings_for

    if plan.temperature == "default":
        _, tokens = decoding(spec)
        return GenerationSettings(temperature=None, max_tokens=tokens)
    temperature = None if plan.temperature is None else float(plan.temperature)
    return settings_for(spec, temperature)


def paper_table(
    store: Store, runs: Mapping[tuple[str, str], str], judge: JudgeConfig | None
) -> pd.DataFrame:
    """The paper's layout: a row per model and protocol; ED (English) and KoED (Korean)
    means of EX, IP, ER, EEA, CA and emotion recognition; the gap (KoED minus ED, mean of
    the five dimensions per dialogue, paired) with its bootstrap 95% CI."""
    from koed_core.results import gaps

    frame = gaps.score_frame(store, judge=judge)
    rows = []
    for (model, protocol), run_id in sorted(runs.items()):
        mine = frame[frame["run_id"] == run_id]
        row: dict[str, Any] = {"model": model, "protocol": protocol, "run_id": run_id}
        for lang, side in (("en", "ED"), ("ko", "KoED")):
            for metric in [*codes(), gaps.EMOTION_METRIC, gaps.EMOTION_ANSWERED]:
                values = mine[(mine["lang"] == lang) & (mine["metric"] == metric)]["value"]
                row[f"{side} {metric}"] = float(values.mean()) if len(values) else np.nan
        judged = mine[mine["source"] == "judge"]
        per_dialogue = judged.pivot_table(
            index="conv_id", columns="lang", values="value", aggfunc="mean"
        )
        if {"en", "ko"} <= set(per_dialogue.columns):
            both = per_dialogue.dropna(subset=["en", "ko"])
            if len(both):
                gap, low, high = paired_gap(both["en"].to_numpy(), both["ko"].to_numpy())
                row.update(gap=gap, ci_low=low, ci_high=high, pairs=len(both))
        rows.append(row)
    table = pd.DataFrame(rows)
    if judge is not None and not table.empty:
        table = table.assign(**judge.as_columns())
    return table


def stored_runs(store: Store, dataset_sha256: str | None = None) -> dict[tuple[str, str], str]:
    """Every batch run (of one dataset) keyed as the table names it: (model, "protocol,
    prompt set"); the most recent run wins when one configuration was run twice."""
    import json

    runs = store.run_table(kind="batch")
    out: dict[tuple[str, str], str] = {}
    for row in runs.to_dict("records"):
        if dataset_sha256 and row["dataset_sha256"] != dataset_sha256:
            continue
        config = json.loads(row["config"])
        prompt_set = config.get("prompt_set", "native")
        label = f"{row['protocol']}, {prompt_set} prompts"
        # a run that changed a step of its set's profile is a row of its own, named by it
        profile = steps_for(prompt_set if prompt_set in PROMPT_SETS else "custom")
        changed = [
            f"{name.replace('_', ' ')} {config.get(name, getattr(EARLIER, name))}"
            for name in ("postprocess", "commas", "emotion_reader")
            if config.get(name, getattr(EARLIER, name)) != getattr(profile, name)
        ]
        if config.get("temperature") is None:
            changed.append("server's decoding")
        if changed:
            label += " (" + ", ".join(changed) + ")"
        out[(str(row["model"]), label)] = str(row["run_id"])
    return out


def to_markdown(table: pd.DataFrame, title: str) -> str:
    """The table as GitHub Markdown, numbers to two decimals."""
    shown = _shown(table)
    head = "| " + " | ".join(shown.columns) + " |"
    rule = "| " + " | ".join("---" for _ in shown.columns) + " |"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in shown.to_numpy()]
    return "\n".join([f"# {title}", "", head, rule, *body]) + "\n"


def to_latex(table: pd.DataFrame, title: str) -> str:
    """The table as a LaTeX tabular (booktabs), numbers to two decimals."""
    shown = _shown(table)

    def esc(text: object) -> str:
        return str(text).replace("_", r"\_").replace("&", r"\&").replace("%", r"\%")

    lines = [
        f"% {esc(title)}",
        r"\begin{tabular}{" + "l" * 2 + "r" * (len(shown.columns) - 2) + "}",
        r"\toprule",
        " & ".join(esc(c) for c in shown.columns) + r" \\",
        r"\midrule",
        *(" & ".join(esc(v) for v in row) + r" \\" for row in shown.to_numpy()),
        r"\bottomrule",
        r"\end{tabular}",
    ]
    return "\n".join(lines) + "\n"


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in table.columns if not c.startswith("judge_") and c != "run_id"]
    shown = table[keep].copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = shown[column].map(lambda v: "" if pd.isna(v) else f"{v:.2f}")
    return shown
