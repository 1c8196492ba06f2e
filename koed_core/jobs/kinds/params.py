"""What a job asks for: the parameters of each kind (run, judge, reproduce, episodes), read
back from the queue, checked before anything is queued."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from koed_core.db import Store
from koed_core.db.jobs import Job, JobError, Jobs
from koed_core.dialogues.subsets import SUBSETS
from koed_core.errors import KoedError
from koed_core.judge.rubric import codes
from koed_core.judge.verdicts import MODES
from koed_core.models.pipeline import COMMAS, EMOTION_READERS, FAMILIES, POSTPROCESS
from koed_core.models.prompts import (
    PROMPT_SETS,
    PromptSetError,
    load_prompt_set,
)
from koed_core.models.protocol import PROTOCOLS

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
