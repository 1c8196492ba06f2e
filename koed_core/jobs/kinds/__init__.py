"""Long work described as data, carried out by the same code in the foreground or in a
worker: a run, a judging pass, a reproduction.

A page queues a job (its parameters as JSON, checked here first); a ``koed worker``
process takes it and calls ``execute``, exactly what ``koed run``, ``koed judge`` and
``koed reproduce`` call in a terminal. So a background job and a foreground command with
the same parameters store the same rows under the same keys, and a job taken over after
a crash resumes where its results stop.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from koed_core.config import Settings, api_key, merged_env, read_secrets
from koed_core.db import Store
from koed_core.db.jobs import Job, JobError, Jobs
from koed_core.dialogues.subsets import SUBSETS
from koed_core.errors import KoedError
from koed_core.judge.rubric import codes
from koed_core.judge.verdicts import MODES
from koed_core.models.batch import BatchReport, ProgressFn
from koed_core.models.client import ChatClient, ModelError
from koed_core.models.pipeline import COMMAS, EMOTION_READERS, FAMILIES, POSTPROCESS, steps_for
from koed_core.models.prompts import (
    PROMPT_SETS,
    PromptSetError,
    default_prompt_set,
    load_prompt_set,
)
from koed_core.models.protocol import PROTOCOLS
from koed_core.models.registry import ModelSpec, load_registry, resolve_model

KINDS = ("run", "judge", "reproduce", "episodes")
DEFAULT_BATCH_SIZE = 1000


@dataclass(frozen=True)
class RunJob:
    """``koed run`` as data."""

    kind: ClassVar[str] = "run"
    model: str
    langs: tuple[str, ...] = ("ko", "en")
    protocol: str = "single"
    prompts: str | None = None
    """None: paper for single and multi, native for direct."""
    subset: str = "full"
    sample: int | None = None
    seed: int = 0
    limit: int | None = None
    concurrency: int = 8
    temperature: float | None = None
    """None: the model's own decoding from models.toml."""
    max_tokens: int | None = None
    batch: bool = False
    batch_size: int = DEFAULT_BATCH_SIZE
    data: str | None = None
    """A KoED file; None: the data source the app and the CLI resolve."""
    dataset_sha256: str | None = None
    """The data the job was queued against: a worker seeing other data refuses."""
    postprocess: str | None = None
    commas: str | None = None
    emotion_reader: str | None = None
    """None: the prompt set's profile (the authors' steps for paper)."""
    family: str | None = None
    """The post-processing family of an ad-hoc openai: model (registry models say theirs)."""

    def label(self) -> str:
        size = f"first {self.limit} of {self.subset}" if self.limit else self.subset
        sample = f" (sample {self.sample}, seed {self.seed})" if self.sample else ""
        how = ", Batch API" if self.batch else ""
        return (
            f"run {self.model}: {self.protocol}, {self.prompts or 'default'} prompts, "
            f"{','.join(self.langs)}, {size}{sample}{how}"
        )


@dataclass(frozen=True)
class JudgeJob:
    """``koed judge`` as data."""

    kind: ClassVar[str] = "judge"
    run_id: str
    judge: str = "gpt-4o"
    mode: str = "paper"
    dims: tuple[str, ...] | None = None
    samples: int = 1
    concurrency: int = 8
    batch: bool = False
    batch_size: int = DEFAULT_BATCH_SIZE
    template: str | None = None
    """A shipped judge template (authors, fenced) or a TOML file; None: the mode's."""
    parse: str | None = None
    """authors or lenient (paper mode); None: the mode's."""

    def label(self) -> str:
        dims = ",".join(self.dims) if self.dims else "all dimensions"
        how = ", Batch API" if self.batch else ""
        steps = ", ".join(
            f"{name} {value}"
            for name, value in (("template", self.template), ("parse", self.parse))
            if value
        )
        extra = f", {steps}" if steps else ""
        return f"judge run {self.run_id} with {self.judge} ({self.mode}, {dims}{extra}){how}"


@dataclass(frozen=True)
class ReproduceJob:
    """``koed reproduce PLAN`` as data; the plan's text is kept with the job."""

    kind: ClassVar[str] = "reproduce"
    plan: str
    """Where the plan came from (for people)."""
    plan_text: str
    data: str | None = None
    dataset_sha256: str | None = None

    def label(self) -> str:
        return f"reproduce {self.plan}"


@dataclass(frozen=True)
class EpisodeJob:
    """``koed episodes`` as data: a Listener model, a Speaker model, up to ``turns``
    Listener turns an episode."""

    kind: ClassVar[str] = "episodes"
    model: str
    speaker: str = "smollm2"
    turns: int = 3
    langs: tuple[str, ...] = ("ko", "en")
    protocol: str = "single"
    prompts: str | None = None
    speaker_prompts: str | None = None
    """A speaker prompt TOML file; None: the shipped one."""
    subset: str = "full"
    sample: int | None = None
    seed: int = 0
    limit: int | None = None
    concurrency: int = 8
    temperature: float | None = None
    max_tokens: int | None = None
    speaker_temperature: float | None = None
    """None: the Speaker model's own decoding from models.toml."""
    data: str | None = None
    dataset_sha256: str | None = None
    postprocess: str | None = None
    commas: str | None = None
    emotion_reader: str | None = None
    family: str | None = None

    def label(self) -> str:
        size = f"first {self.limit} of {self.subset}" if self.limit else self.subset
        sample = f" (sample {self.sample}, seed {self.seed})" if self.sample else ""
        return (
            f"episodes {self.model} with speaker {self.speaker}: {self.turns} turns, "
            f"{self.protocol}, {','.join(self.langs)}, {size}{sample}"
        )


JobParams = RunJob | JudgeJob | ReproduceJob | EpisodeJob
_TYPES: dict[str, type[RunJob] | type[JudgeJob] | type[ReproduceJob] | type[EpisodeJob]] = {
    "run": RunJob,
    "judge": JudgeJob,
    "reproduce": ReproduceJob,
    "episodes": EpisodeJob,
}


def params_of(job: Job) -> JobParams:
    """A stored job's parameters as their type.

    Raises:
        JobError: a kind or a parameter this release does not know.
    """
    cls = _TYPES.get(job.kind)
    if cls is None:
        raise JobError(f"job {job.id}: unknown kind {job.kind!r}")
    known = {f.name for f in fields(cls)}
    extra = set(job.params) - known
    if extra:
        raise JobError(f"job {job.id}: unknown parameter(s) {', '.join(sorted(extra))}")
    data: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in job.params.items()
    }
    try:
        return cls(**data)
    except TypeError as err:
        raise JobError(f"job {job.id}: {err}") from None


def check(params: JobParams) -> None:
    """Refuse parameters the engine would refuse later, before a job is queued.

    Raises:
        JobError: naming the parameter that is wrong.
    """
    problems: list[str] = []
    if isinstance(params, EpisodeJob):
        from koed_core.models.episodes import MAX_TURNS
        from koed_core.models.speaker import SPEAKER_SETS, load_speaker_prompt

        if not 1 <= params.turns <= MAX_TURNS:
            problems.append(f"turns must be between 1 and {MAX_TURNS}")
        if params.speaker_prompts is not None and params.speaker_prompts not in SPEAKER_SETS:
            try:
                load_speaker_prompt(params.speaker_prompts)
            except KoedError as err:
                problems.append(f"speaker prompts: {err}")
    if isinstance(params, RunJob | EpisodeJob):
        if not params.langs or set(params.langs) - {"ko", "en"}:
            problems.append("langs must be ko and/or en")
        if params.protocol not in PROTOCOLS:
            problems.append(f"protocol must be one of {', '.join(PROTOCOLS)}")
        if params.prompts is not None and params.prompts not in PROMPT_SETS:
            try:
                load_prompt_set(params.prompts)
            except PromptSetError as err:
                problems.append(f"prompts: {err}")
        if params.subset not in SUBSETS:
            problems.append(f"subset must be one of {', '.join(SUBSETS)}")
        if params.concurrency < 1 or (params.limit is not None and params.limit < 1):
            problems.append("concurrency and limit must be at least 1")
        for name, allowed in (
            ("postprocess", POSTPROCESS),
            ("commas", COMMAS),
            ("emotion_reader", EMOTION_READERS),
            ("family", FAMILIES),
        ):
            value = getattr(params, name)
            if value is not None and value not in allowed:
                problems.append(f"{name} must be one of {', '.join(allowed)}")
    elif isinstance(params, JudgeJob):
        if params.mode not in MODES:
            problems.append(f"mode must be one of {', '.join(MODES)}")
        if params.dims is not None and (not params.dims or set(params.dims) - set(codes())):
            problems.append(f"dimensions must be among {', '.join(codes())}")
        if params.samples < 1 or params.concurrency < 1:
            problems.append("samples and concurrency must be at least 1")
        if params.mode in MODES and not problems:
            from koed_core.judge.judging import JudgeSteps

            try:
                JudgeSteps.choose(params.mode, params.template, params.parse)
            except KoedError as err:
                problems.append(str(err))
    else:
        from koed_core.results.reproduce import parse_plan

        parse_plan(params.plan_text, params.plan)
    if getattr(params, "batch_size", 1) < 1:
        problems.append("batch size must be at least 1")
    if problems:
        raise JobError("; ".join(problems))


def enqueue(store: Store, params: JobParams, created_by: str | None) -> int:
    """Check and queue a job; a worker takes it. Returns the job id."""
    check(params)
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(params).items()}
    label = params.label()
    if isinstance(params, JudgeJob):  # the run as people see it in every picker
        from koed_core.models.runs import run_labels

        shown = run_labels(store).get(params.run_id)
        label = label.replace(f"run {params.run_id}", shown) if shown else label
    return Jobs(store).enqueue(params.kind, label, data, created_by)


@dataclass
class Hooks:
    """How a job shows progress and learns it should stop: a terminal's progress bar, or
    a worker writing to the job's row."""

    progress: ProgressFn | None = None
    watch: Callable[[BatchReport], None] | None = None
    step: Callable[[str, BatchReport], None] | None = None
    """A reproduction's per-step reports."""
    say: Callable[[str], None] = field(default=lambda _message: None)
    stop: Callable[[], bool] | None = None


@dataclass
class Result:
    """What a job did, in one sentence and as data for its row."""

    summary: str
    data: dict[str, Any]
    failed: int = 0
    cancelled: bool = False
    problems: dict[str, str] = field(default_factory=dict)
    """Models left out of a reproduction, with the reason."""


@dataclass
class Environment:
    """Where keys and settings come from for one execution (the worker's process, or the
    terminal's): environment, then .streamlit/secrets.toml."""

    settings: Settings
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    secrets: Mapping[str, Any] = field(default_factory=read_secrets)

    def resolve(self, name: str, family: str | None = None) -> ModelSpec:
        """A registry name or openai:MODEL_ID (of post-processing ``family``, open unless
        told)."""
        registry = load_registry(self.settings.models_path)
        return resolve_model(name, registry, merged_env(self.env, self.secrets), family or "open")

    def key(self, spec: ModelSpec) -> str | None:
        return api_key(spec.api_key_env, self.env, self.secrets)


def client_for(
    env: Environment,
    spec: ModelSpec,
    store: Store,
    *,
    batch: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    stop: Callable[[], bool] | None = None,
    say: Callable[[str], None] | None = None,
) -> ChatClient:
    """A live client, or one that sends its calls through the provider's Batch API (whose
    problems with the provider's output are told through ``say``)."""
    from koed_core.models.backends import make_client

    if not batch:
        return make_client(spec, env.key(spec))
    from koed_core.models.backends.openai_batch import BatchClient

    client = BatchClient(
        spec,
        env.key(spec),
        Jobs(store),
        poll_s=env.settings.batch_poll_s,
        batch_size=batch_size,
        stop=stop,
        say=say,
    )
    client.check()
    return client


def _close(client: ChatClient) -> None:
    close = getattr(client, "close", None)
    if close is not None:
        close()


def _dataset(env: Environment, data: str | None, expected: str | None) -> Any:
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.dialogues.sources import resolve_source

    settings = env.settings
    path = Path(data) if data else resolve_source(settings.data_path, settings.cache_dir).path
    dataset = load_dataset(path)
    if expected and dataset.sha256 != expected:
        raise JobError(
            f"the data changed since the job was queued: {path} has sha256 "
            f"{dataset.sha256[:12]}, the job was queued against {expected[:12]}; queue it again"
        )
    return dataset


def execute(params: JobParams, store: Store, env: Environment, hooks: Hooks) -> Result:
    """Carry out a job with the engine the CLI uses.

    Raises:
        KoedError: what stops the whole job (unknown model, missing data, no key...).
    """
    if isinstance(params, RunJob):
        return _run(params, store, env, hooks)
    if isinstance(params, EpisodeJob):
        return _episodes(params, store, env, hooks)
    if isinstance(params, JudgeJob):
        return _judge(params, store, env, hooks)
    return _reproduce(params, store, env, hooks)


def _run(params: RunJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    from koed_core.dialogues.subsets import select
    from koed_core.models.runs import run_benchmark, settings_for

    spec = env.resolve(params.model, params.family)
    dataset = _dataset(env, params.data, params.dataset_sha256)
    dialogues = select(dataset.dialogues, params.subset, sample=params.sample, seed=params.seed)
    settings = settings_for(spec, params.temperature, params.max_tokens)
    prompts = params.prompts or default_prompt_set(params.protocol)  # type: ignore[arg-type]
    if params.protocol == "direct":
        prompts = "native"
    steps = steps_for(
        load_prompt_set(prompts).profile,
        spec.family,
        postprocess=params.postprocess,
        commas=params.commas,
        emotion_reader=params.emotion_reader,
    )
    temp = settings.temperature
    hooks.say(
        f"{spec.name} on {Path(dataset.path).name} ({params.subset}: {len(dialogues)} dialogues), "
        f"{params.protocol}, {prompts} prompts, {','.join(params.langs)}, temperature "
        f"{'model default' if temp is None else temp}, {settings.max_tokens} tokens; "
        f"post-processing {steps.postprocess} ({steps.family}), commas {steps.commas}, "
        f"emotion reader {steps.emotion_reader}"
        + (", through the Batch API" if params.batch else "")
    )
    client = client_for(
        env,
        spec,
        store,
        batch=params.batch,
        batch_size=params.batch_size,
        stop=hooks.stop,
        say=hooks.say,
    )
    try:
        report = run_benchmark(
            store,
            client,
            spec,
            dialogues,
            dataset.sha256,
            langs=list(params.langs),  # type: ignore[arg-type]
            protocol=params.protocol,  # type: ignore[arg-type]
            settings=settings,
            limit=params.limit,
            concurrency=params.concurrency,
            progress=hooks.progress,
            prompt_set=prompts,
            steps=steps,
            stop=hooks.stop,
            watch=hooks.watch,
        )
    finally:
        _close(client)
    summary = (
        f"run {report.run_id}: {report.succeeded} answered, {report.skipped} already done, "
        f"{report.failed} failed"
    )
    return Result(
        summary,
        {"run_id": report.run_id, "errors": dict(report.errors)},
        report.failed,
        report.stopped,
    )


def _episodes(params: EpisodeJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    from koed_core.dialogues.subsets import select
    from koed_core.models.episodes import SPEAKER_MAX_TOKENS, run_episodes
    from koed_core.models.runs import settings_for

    spec = env.resolve(params.model, params.family)
    try:
        speaker = env.resolve(params.speaker)
    except KoedError as err:
        raise JobError(f"speaker (--speaker {params.speaker}): {err}") from None
    dataset = _dataset(env, params.data, params.dataset_sha256)
    dialogues = select(dataset.dialogues, params.subset, sample=params.sample, seed=params.seed)
    settings = settings_for(spec, params.temperature, params.max_tokens)
    speaker_settings = settings_for(speaker, params.speaker_temperature, SPEAKER_MAX_TOKENS)
    prompts = "native" if params.protocol == "direct" else params.prompts
    prompts = prompts or default_prompt_set(params.protocol)  # type: ignore[arg-type]
    steps = steps_for(
        load_prompt_set(prompts).profile,
        spec.family,
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
            progress=hooks.progress,
            stop=hooks.stop,
            watch=hooks.watch,
        )
    finally:
        _close(listener)
        if voice is not listener:
            _close(voice)
    summary = (
        f"episode run {report.run_id}: {report.succeeded} episodes played, "
        f"{report.skipped} already done, {report.failed} stopped by a failure"
    )
    return Result(
        summary,
        {"run_id": report.run_id, "errors": dict(report.errors)},
        report.failed,
        report.stopped,
    )


def _judge(params: JudgeJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    from koed_core.judge.judging import judge_run

    if not store.has_run(params.run_id):
        raise JobError(f"no run {params.run_id!r} in {store.path}")
    spec = env.resolve(params.judge)
    client = client_for(
        env,
        spec,
        store,
        batch=params.batch,
        batch_size=params.batch_size,
        stop=hooks.stop,
        say=hooks.say,
    )
    try:
        report = judge_run(
            store,
            client,
            spec,
            params.run_id,
            params.mode,  # type: ignore[arg-type]
            dims=list(params.dims) if params.dims else None,
            samples=params.samples,
            concurrency=params.concurrency,
            template=params.template,
            parse=params.parse,
            progress=hooks.progress,
            stop=hooks.stop,
            watch=hooks.watch,
        )
    finally:
        _close(client)
    summary = (
        f"judged run {params.run_id} with {spec.name} ({params.mode}): {report.scored} scored, "
        f"{report.unscored} unscored, {report.skipped} already done, {report.failed} failed"
    )
    return Result(
        summary,
        {"run_id": params.run_id, "judge": spec.name, "errors": dict(report.errors)},
        report.failed,
        report.stopped,
    )


def _reproduce(params: ReproduceJob, store: Store, env: Environment, hooks: Hooks) -> Result:
    from koed_core.dialogues.subsets import select
    from koed_core.results import reproduce

    plan = reproduce.parse_plan(params.plan_text, params.plan)
    dataset = _dataset(env, params.data, params.dataset_sha256)
    dialogues = select(dataset.dialogues, plan.subset, sample=plan.sample, seed=plan.seed)
    specs = {name: env.resolve(name) for name in plan.models}
    judge_spec = env.resolve(plan.judge)
    speaker_spec = env.resolve(plan.speaker) if plan.kind == "episodes" and plan.speaker else None
    problems: dict[str, str] = {}

    def preflight(spec: ModelSpec) -> tuple[str | None, str | None]:
        """(why it cannot be reached, why its id would fail), each None when fine."""
        reason = reproduce.check_reachable(spec, env.key(spec))
        return reason, None if reason else reproduce.check_served(spec, env.key(spec))

    everyone = [*specs.items(), (judge_spec.name, judge_spec)]
    if speaker_spec is not None and speaker_spec.name not in dict(everyone):
        everyone.append((speaker_spec.name, speaker_spec))
    with ThreadPoolExecutor(max_workers=len(everyone)) as pool:  # servers answer in parallel
        checked = list(pool.map(lambda item: preflight(item[1]), everyone))
    retired: dict[str, str] = {}
    for (name, _spec), (reason, gone) in zip(everyone, checked, strict=True):
        if reason:
            problems[name] = reason
            hooks.say(f"left out: {name}: {reason}")
        elif gone:
            retired[name] = gone
    if retired:  # every call would fail: stop before anything is spent
        raise JobError(
            "stopped before sending anything: "
            + "; ".join(f"{name}: {reason}" for name, reason in retired.items())
        )
    clients: list[ChatClient] = []

    def client(spec: ModelSpec) -> ChatClient:
        batch = plan.batch and spec.backend == "openai"
        if batch:
            try:
                made = client_for(env, spec, store, batch=True, stop=hooks.stop, say=hooks.say)
            except ModelError as err:
                if err.kind != "not_found":
                    raise
                hooks.say(f"{spec.name}: no Batch API at its server, so live calls")
                made = client_for(env, spec, store, stop=hooks.stop)
        else:
            made = client_for(env, spec, store, stop=hooks.stop)
        clients.append(made)
        return made

    try:
        listeners = {
            name: (spec, client(spec)) for name, spec in specs.items() if name not in problems
        }
        judge = None if judge_spec.name in problems else (judge_spec, client(judge_spec))
        voice = None
        if speaker_spec is not None and speaker_spec.name not in problems:
            found = listeners.get(speaker_spec.name)
            voice = (speaker_spec, found[1] if found else client(speaker_spec))
        outcome = reproduce.reproduce(
            plan,
            store,
            dialogues,
            dataset.sha256,
            listeners,
            judge,
            progress=hooks.say,
            stop=hooks.stop,
            watch=hooks.step,
            speaker=voice,
        )
    finally:
        for made in clients:
            _close(made)
    problems.update(outcome.failures)
    runs = {f"{model} {protocol}": run for (model, protocol), run in outcome.runs.items()}
    summary = f"{plan.name}: {len(outcome.runs)} runs" + (
        f", left out: {', '.join(sorted(problems))}" if problems else ""
    )
    variants = {
        name: {
            "runs": {f"{model} {protocol}": run for (model, protocol), run in made.items()},
            "judge": asdict(config) if config else None,
        }
        for name, (made, config) in outcome.variants.items()
    }
    return Result(
        summary,
        {
            "runs": runs,
            "judge": outcome.judge.label if outcome.judge else None,
            **({"variants": variants} if variants else {}),
        },
        len(problems),
        bool(hooks.stop and hooks.stop()),
        problems,
    )


__all__ = [
    "KINDS",
    "EpisodeJob",
    "Environment",
    "Hooks",
    "JobParams",
    "JudgeJob",
    "ReproduceJob",
    "Result",
    "RunJob",
    "check",
    "enqueue",
    "execute",
    "params_of",
]
