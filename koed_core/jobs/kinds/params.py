"""What a job asks for: the parameters of each kind (run, judge, reproduce, episodes), read
back from the queue, checked before anything is queued."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from koed_core import i18n
from koed_core.db import Store
from koed_core.db.jobs import Job, JobError, Jobs
from koed_core.dialogues.subsets import SUBSETS
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.judge.rubric import codes
from koed_core.judge.verdicts import MODES
from koed_core.models.pipeline import COMMAS, EMOTION_READERS, FAMILIES, POSTPROCESS
from koed_core.models.prompts import (
    PROMPT_SETS,
    PromptSetError,
    default_prompt_set,
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
        """The job as people read it, in the page's language (English in a worker)."""
        label = _(
            "run {model}: {protocol}, {prompts} prompts, {langs}, {dialogues}",
            model=self.model,
            protocol=self.protocol,
            prompts=self.prompts or _("default"),
            langs=",".join(self.langs),
            dialogues=_dialogues(self.subset, self.limit, self.sample, self.seed),
        )
        return _("{job}, Batch API", job=label) if self.batch else label


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
    replicate: int = 0
    """n > 0: ask the judge again about texts it judged, as a source of its own."""
    whole_episode: bool = False
    """An episode run judged whole (five dimensions and UND, one call each)."""
    speaker_check: bool = False
    """An episode run's Speaker turns checked (SIT, HID, NAT)."""

    def label(self, run: str | None = None) -> str:
        """The job as people read it, in the page's language (English in a worker);
        ``run``: the run as every picker names it (default: its id)."""
        settings = [
            self.mode,
            ",".join(self.dims) if self.dims else _("all dimensions"),
            *([_("template {name}", name=self.template)] if self.template else []),
            *([_("parse {name}", name=self.parse)] if self.parse else []),
            *([_("judged again #{n}", n=self.replicate)] if self.replicate else []),
        ]
        label = _(
            "judge {run} with {judge} ({settings})",
            run=run or _("run {run_id}", run_id=self.run_id),
            judge=self.judge,
            settings=", ".join(settings),
        )
        return _("{job}, Batch API", job=label) if self.batch else label


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
        """The job as people read it, in the page's language (English in a worker)."""
        return _("reproduce {plan}", plan=self.plan)


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
    oracle: bool = False
    """The Listener is told each dialogue's situation and emotion: the upper reference."""

    def label(self) -> str:
        """The job as people read it, in the page's language (English in a worker)."""
        if self.oracle:
            return _(
                "oracle episodes {model} with speaker {speaker}: {turns} turns, {protocol}, "
                "{langs}, {dialogues}",
                model=self.model,
                speaker=self.speaker,
                turns=self.turns,
                protocol=self.protocol,
                langs=",".join(self.langs),
                dialogues=_dialogues(self.subset, self.limit, self.sample, self.seed),
            )
        return _(
            "episodes {model} with speaker {speaker}: {turns} turns, {protocol}, {langs}, "
            "{dialogues}",
            model=self.model,
            speaker=self.speaker,
            turns=self.turns,
            protocol=self.protocol,
            langs=",".join(self.langs),
            dialogues=_dialogues(self.subset, self.limit, self.sample, self.seed),
        )


JobParams = RunJob | JudgeJob | ReproduceJob | EpisodeJob


def _dialogues(subset: str, limit: int | None, sample: int | None, seed: int) -> str:
    """Which dialogues a run or an episodes job takes ("first 5 of full (sample 40, seed 0)")."""
    size = _("first {limit} of {subset}", limit=limit, subset=subset) if limit else subset
    if sample:
        return _(
            "{dialogues} (sample {sample}, seed {seed})", dialogues=size, sample=sample, seed=seed
        )
    return size


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
            problems.append(_("turns must be between 1 and {most}", most=MAX_TURNS))
        if params.speaker_prompts is not None and params.speaker_prompts not in SPEAKER_SETS:
            try:
                load_speaker_prompt(params.speaker_prompts)
            except KoedError as err:
                problems.append(_("speaker prompts: {error}", error=err))
    if isinstance(params, RunJob | EpisodeJob):
        if not params.langs or set(params.langs) - {"ko", "en"}:
            problems.append(_("langs must be ko and/or en"))
        if params.protocol not in PROTOCOLS:
            problems.append(_("protocol must be one of {choices}", choices=", ".join(PROTOCOLS)))
        if params.prompts is not None and params.prompts not in PROMPT_SETS:
            try:
                load_prompt_set(params.prompts)
            except PromptSetError as err:
                problems.append(_("prompts: {error}", error=err))
        if params.subset not in SUBSETS:
            problems.append(_("subset must be one of {choices}", choices=", ".join(SUBSETS)))
        if params.concurrency < 1 or (params.limit is not None and params.limit < 1):
            problems.append(_("concurrency and limit must be at least 1"))
        for name, allowed in (
            ("postprocess", POSTPROCESS),
            ("commas", COMMAS),
            ("emotion_reader", EMOTION_READERS),
            ("family", FAMILIES),
        ):
            value = getattr(params, name)
            if value is not None and value not in allowed:
                problems.append(
                    _("{name} must be one of {choices}", name=name, choices=", ".join(allowed))
                )
    elif isinstance(params, JudgeJob):
        if params.mode not in MODES:
            problems.append(_("mode must be one of {choices}", choices=", ".join(MODES)))
        if params.dims is not None and (not params.dims or set(params.dims) - set(codes())):
            problems.append(_("dimensions must be among {codes}", codes=", ".join(codes())))
        if params.samples < 1 or params.concurrency < 1:
            problems.append(_("samples and concurrency must be at least 1"))
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
        problems.append(_("batch size must be at least 1"))
    if problems:
        raise JobError("; ".join(problems))


HOW_NOT_WHAT = ("concurrency", "batch_size")
"""Parameters that change how fast a job asks, not what it asks or stores."""


def identity(params: JobParams) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What a job would ask and store, with each default resolved the way the engine
    resolves it: two jobs with equal identities do the same work (a double press)."""
    data = {k: v for k, v in asdict(params).items() if k not in HOW_NOT_WHAT}
    if isinstance(params, RunJob | EpisodeJob) and params.prompts is None:
        data["prompts"] = default_prompt_set(params.protocol)  # type: ignore[arg-type]
    if isinstance(params, RunJob | EpisodeJob) and params.data is None:
        data["data"] = None  # the data source is checked by the sha below
    return params.kind, tuple(sorted((k, _frozen(v)) for k, v in data.items()))


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _same_work(params: JobParams) -> Callable[[Job], bool]:
    """Whether a queued or running job does the work ``params`` asks for."""
    mine = identity(params)

    def same(job: Job) -> bool:
        try:
            return identity(params_of(job)) == mine
        except KoedError:
            return False  # a job this release cannot read is not ours to match

    return same


def enqueue(store: Store, params: JobParams, created_by: str | None) -> int:
    """Check and queue a job; a worker takes it. Returns the job id. Its label is stored
    in English, as the worker and ``koed jobs`` write; a page shows ``describe(job)``.

    Raises:
        JobError: the parameters are wrong, or the same work is already queued or
            running (a second press of Start): the sentence names that job.
    """
    check(params)
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(params).items()}
    with i18n.speaking("en"):
        if isinstance(params, JudgeJob):  # the run as people see it in every picker
            from koed_core.models.runs import run_labels

            label = params.label(run_labels(store).get(params.run_id))
        else:
            label = params.label()
    return Jobs(store).enqueue(params.kind, label, data, created_by, same_as=_same_work(params))


_RUN = "\x00"


def describe(job: Job) -> str:
    """A job's label in the page's language, made again from its parameters (a judge
    job's run named as when it was queued, read back from the stored label); the stored
    label itself for a job this release cannot read."""
    try:
        params = params_of(job)
    except KoedError:
        return job.label
    if not isinstance(params, JudgeJob):
        return params.label()
    with i18n.speaking("en"):
        before, after = params.label(_RUN).split(_RUN)
        unnamed = params.label()
    stored = job.label
    if stored != unnamed and stored.startswith(before) and stored.endswith(after):
        run = stored[len(before) : len(stored) - len(after)]
        if run:
            return params.label(run)
    return params.label()
