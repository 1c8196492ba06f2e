"""What a job asks for: the parameters of each kind (run, judge, reproduce, episodes,
similarities, translate), read back from the queue, checked before anything is queued."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from koed_core import i18n
from koed_core.db import Store
from koed_core.db.jobs import Job, JobError, Jobs
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.jobs.kinds.translate_job import TranslateJob
from koed_core.judge.request import JudgeRequest
from koed_core.models.request import EpisodeRequest, RunRequest

KINDS = ("run", "judge", "reproduce", "episodes", "similarities", "translate", "table")


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
class SimilarityJob:
    """The Adaptation page's first computation (every ko/en pair of one file embedded
    and compared) as a job: run once by the worker for every visitor, kept on disk."""

    kind: ClassVar[str] = "similarities"
    data: str | None = None
    """The file's path (None: the configured source, as the app resolves it)."""
    dataset_sha256: str | None = None
    """The file it was queued on: a job finds a changed file and says so."""

    def label(self) -> str:
        """The job as people read it, in the page's language (English in a worker)."""
        return _("adaptation similarities of {sha}", sha=(self.dataset_sha256 or "")[:12])

    def problems(self) -> list[str]:
        """Nothing to check before queueing: the worker loads the file."""
        return []

    def stored(self) -> dict[str, Any]:
        """The parameters as the job's row keeps them."""
        return asdict(self)

    def identity(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        """Two jobs on the same file do the same work, whoever asked."""
        return self.kind, (("dataset_sha256", self.dataset_sha256),)


@dataclass(frozen=True)
class TableJob:
    """A heavy result table (``koed_core.results.shared_tables``) computed once for every
    visitor and server process at one change stamp, kept in the database."""

    kind: ClassVar[str] = "table"
    name: str
    """Which table (a key of ``shared_tables.TABLES``)."""
    inputs: dict[str, Any]
    """What it is computed from (JSON: a judge configuration, a study, runs...)."""
    stamp: int
    """The database's change stamp it was asked at: its result is kept under it."""
    data: str | None = None
    """The dialogues' file, for a table that reads them (a breakdown by label)."""
    dataset_sha256: str | None = None

    def label(self) -> str:
        """The job as people read it, in the page's language (English in a worker)."""
        from koed_core.results.shared_tables import TABLES

        return _("{table} (shared by every visitor)", table=_(TABLES.get(self.name, self.name)))

    def problems(self) -> list[str]:
        """An unknown table is refused before it is queued."""
        from koed_core.results.shared_tables import TABLES

        return [] if self.name in TABLES else [f"no shared table named {self.name!r}"]

    def stored(self) -> dict[str, Any]:
        """The parameters as the job's row keeps them."""
        return asdict(self)

    def identity(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        """Two jobs on the same table, inputs and stamp do the same work, whoever asked."""
        from koed_core.results.shared_tables import key

        return self.kind, (("key", key(self.name, self.stamp, self.inputs)),)


JobParams = (
    RunRequest
    | JudgeRequest
    | ReproduceJob
    | EpisodeRequest
    | SimilarityJob
    | TranslateJob
    | TableJob
)


_TYPES: dict[
    str,
    type[RunRequest]
    | type[JudgeRequest]
    | type[ReproduceJob]
    | type[SimilarityJob]
    | type[TranslateJob]
    | type[TableJob],
] = {
    "run": RunRequest,
    "judge": JudgeRequest,
    "reproduce": ReproduceJob,
    "episodes": EpisodeRequest,
    "similarities": SimilarityJob,
    "translate": TranslateJob,
    "table": TableJob,
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
    if isinstance(params, ReproduceJob):
        from koed_core.results.reproduce import parse_plan

        parse_plan(params.plan_text, params.plan)
        return
    problems = params.problems()
    if problems:
        raise JobError("; ".join(problems))


def identity(params: JobParams) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What a job would ask and store, each default resolved the way the engine resolves
    it: two jobs with equal identities do the same work (a double press)."""
    if isinstance(params, ReproduceJob):
        return params.kind, tuple(sorted(asdict(params).items()))
    return params.identity()


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
    data = asdict(params) if isinstance(params, ReproduceJob) else params.stored()
    with i18n.speaking("en"):
        if isinstance(params, JudgeRequest):  # the run as people see it in every picker
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
    if not isinstance(params, JudgeRequest):
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
