"""A run's settings, declared once: what ``koed run`` and ``koed episodes`` take, what a
run job stores, what a plan asks for each model, what the Runs form fills in.

Each setting is a dataclass field whose metadata says how the command line spells it and
what its help says. The resolution rules ("direct uses the native prompts", "the paper
set takes the authors' step at each", "no temperature: the model's own decoding") are the
methods below, and nowhere else. A pipeline step is declared once in
:mod:`koed_core.run_steps`; :func:`with_steps` makes it a field of the run request, so the
command line, the Runs form, the job and a plan's keys take it with no edit here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any, ClassVar

from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.subsets import SAMPLE_DESIGNS, SUBSETS, select
from koed_core.dialogues.variants import CELLS
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.models.client import GenerationSettings
from koed_core.models.pipeline import FAMILIES, Steps, steps_for
from koed_core.models.prompts import PROMPT_SETS, PromptSet, default_prompt_set, load_prompt_set
from koed_core.models.protocol import PROTOCOLS
from koed_core.models.registry import ModelSpec, decoding, sampling
from koed_core.run_steps import PipelineStep, declared, step_names

DEFAULT_CONCURRENCY = 8
DEFAULT_BATCH_SIZE = 1000
DEFAULT_TURNS = 3
MAX_TURNS = 10
SPEAKER_MAX_TOKENS = 128
"""A Speaker turn is a line or two; a longer one is cut like any reply."""


def setting(
    default: Any = MISSING,
    *,
    help: str,
    flag: str | None = "",
    type: Callable[[str], Any] | None = None,
    choices: Sequence[str] | None = None,
    how: bool = False,
    nargs: str | None = None,
    aliases: tuple[str, ...] = (),
) -> Any:
    """A request field and how the command line offers it: ``flag`` ("" for ``--name``
    with dashes, None for no flag), ``help`` and ``type`` as argparse takes them; ``how``
    marks a setting that changes how fast work is asked, not what is asked or stored (two
    requests differing only there are the same work)."""
    meta = {"help": help, "flag": flag, "type": type, "choices": choices, "how": how}
    meta["nargs"], meta["aliases"] = nargs, aliases
    if default is MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


def pipeline_step(step: PipelineStep) -> Any:
    """A request's field for a pipeline step: None leaves it to the prompt set's profile;
    its values and help are the step's own (``koed_core.run_steps``)."""
    return setting(None, help=step.help, choices=step.choices)


def with_steps(cls: type[Any]) -> type[Any]:
    """Give a request class one field per declared pipeline step (after its own fields,
    before ``@dataclass`` reads them): a step declared in ``koed_core.run_steps`` is a
    request setting, and so a flag, a job parameter and a plan key, with no edit here."""
    own = cls.__dict__.get("__annotations__", {})
    for step in declared():
        own[step.name] = "str | None"
        setattr(cls, step.name, pipeline_step(step))
    cls.__annotations__ = own
    return cls


def cells_arg(text: str) -> tuple[str, ...]:
    """``--lang`` of a run: ko, en, the translated variants en-from-ko and ko-from-en, or
    several of them comma-separated."""
    import argparse

    langs = tuple(lang.strip() for lang in text.split(",") if lang.strip())
    if not langs or set(langs) - set(CELLS):
        raise argparse.ArgumentTypeError(
            f"takes ko, en, en-from-ko, ko-from-en or several of them comma-separated, not {text!r}"
        )
    return tuple(dict.fromkeys(langs))


def positive_int(text: str) -> int:
    """A whole number of at least 1 (0 never means "all")."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def temperature_arg(text: str) -> float | str:
    """A sampling temperature from 0 to 2, or ``default`` (the server's own: none sent)."""
    import argparse

    if text == "default":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (or default)") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2, not {value}")
    return value


def source_arg(shipped: Sequence[str]) -> Callable[[str], str]:
    """A shipped name as it is, anything else as a file's absolute path (a job may run in
    another folder)."""

    def read(text: str) -> str:
        from pathlib import Path

        return text if text in shipped else str(Path(text).resolve())

    return read


def file_arg(text: str) -> str:
    """A file's absolute path."""
    from pathlib import Path

    return str(Path(text).resolve())


class Request:
    """What every request shares: two requests that ask the same work compare equal
    (a second press of Start is refused by that), and a job's row keeps its fields."""

    kind: ClassVar[str]

    def resolved(self) -> dict[str, Any]:
        """The settings that decide what is asked and stored (those marked ``how``,
        concurrency and batch size, only change how fast)."""
        return {
            f.name: _frozen(getattr(self, f.name))
            for f in fields(self)  # type: ignore[arg-type]
            if not f.metadata.get("how")
        }

    def identity(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        """The kind and the resolved settings: equal identities do the same work."""
        return self.kind, tuple(sorted(self.resolved().items()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return self.identity() == other.identity()

    def __hash__(self) -> int:
        return hash(self.identity())

    def stored(self) -> dict[str, Any]:
        """The request as a job's row keeps it (JSON: tuples as lists)."""
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in asdict(self).items()  # type: ignore[call-overload]
        }


@dataclass(frozen=True, eq=False)
@with_steps
class RunRequest(Request):
    """``koed run`` as data: one model answering the chosen dialogues.

    Two requests asking the same work compare equal (see :meth:`identity`): a second
    press of Start is refused by that.
    """

    kind: ClassVar[str] = "run"
    model: str = setting(help="a name from models.toml, or openai:MODEL_ID (uses OPENAI_BASE_URL)")
    langs: tuple[str, ...] = setting(
        ("ko", "en"),
        flag="--lang",
        type=cells_arg,
        help="ko,en (default), or any of ko, en, en-from-ko, ko-from-en (translated "
        "variants: see koed translate)",
    )
    protocol: str = setting("single", choices=PROTOCOLS, help="single (default), multi or direct")
    prompts: str | None = setting(
        None,
        type=source_arg(PROMPT_SETS),
        help=f"prompt set: {', '.join(PROMPT_SETS)} or your own TOML file "
        "(default: paper for single and multi, native for direct)",
    )
    subset: str = setting("full", choices=SUBSETS, help="paper-100: the authors' sample")
    sample: int | None = setting(
        None, type=positive_int, help="a sample of N dialogues (see --sample-design)"
    )
    seed: int = setting(0, type=int, help="seed of --sample (default 0)")
    sample_design: str = setting(
        "label-sets",
        choices=SAMPLE_DESIGNS,
        help="how --sample draws: label-sets (default: every label before any repeats) or "
        "uniform (every dialogue equally likely; a reproduction's sample)",
    )
    limit: int | None = setting(None, type=positive_int, help="only the first N dialogues")
    concurrency: int = setting(
        DEFAULT_CONCURRENCY, type=positive_int, how=True, help="requests at once (default 8)"
    )
    temperature: float | str | None = setting(
        None,
        type=temperature_arg,
        help="default: the model's in models.toml, else 0.7; \"default\": the server's own",
    )
    max_tokens: int | None = setting(
        None, type=positive_int, help="default: the model's in models.toml, else 256"
    )
    batch: bool = setting(
        False,
        help="send the requests through the provider's Batch API (OpenAI: half the price, "
        "answers within 24 h); resumable like a live run",
    )
    batch_size: int = setting(
        DEFAULT_BATCH_SIZE,
        type=positive_int,
        how=True,
        help="with --batch: requests per provider batch (default 1000)",
    )
    data: str | None = setting(
        None, type=file_arg, help="KoED file (default: the app's data source)"
    )
    dataset_sha256: str | None = setting(None, flag=None, help="")
    """The data the job was queued against: a worker seeing other data refuses."""
    family: str | None = setting(
        None,
        choices=FAMILIES,
        help="post-processing rule of an openai:MODEL_ID model (default open)",
    )
    replicate: int = setting(
        0,
        type=int,
        help="n > 0: the same run made again, nothing changed, a run of its own",
    )
    timeout_s: float = setting(60.0, flag=None, how=True, help="")
    """The most one try of a request may take (see ``GenerationSettings``)."""
    max_retries: int = setting(4, flag=None, how=True, help="")
    """Retries of rate limits, 5xx and time-outs: how a request is asked, not what."""

    # -- resolution: the one place each default is decided ---------------------------

    def prompt_name(self) -> str:
        """The prompt set asked with: native for direct, else the one chosen, else the
        protocol's (paper for single and multi)."""
        if self.protocol == "direct":
            return "native"
        return self.prompts or default_prompt_set(self.protocol)  # type: ignore[arg-type]

    def prompt_set(self) -> PromptSet:
        """The prompt set, read (a shipped one or a TOML file).

        Raises:
            PromptSetError: no such set, or a file that is not one.
        """
        return load_prompt_set(self.prompt_name())

    def step_choices(self) -> dict[str, str | None]:
        """Each pipeline step as chosen here (None: the prompt set's profile)."""
        return {name: getattr(self, name) for name in step_names()}

    def steps_of(self, family: str, model: str = "") -> Steps:
        """The run's pipeline steps for a model of ``family`` with id ``model``: the prompt
        set's profile, each explicit choice overriding it.

        Raises:
            StepError: a value outside a step's choices.
        """
        return steps_for(self.prompt_set().profile, family, model=model, **self.step_choices())

    def steps(self, spec: ModelSpec) -> Steps:
        """The run's pipeline steps for ``spec``."""
        return self.steps_of(spec.family, spec.model or "")

    def settings(self, spec: ModelSpec) -> GenerationSettings:
        """The decoding asked: the temperature and token limit set here, else the model's
        own from models.toml (its generation config written out)."""
        return self._sent(settings_for(spec, self.temperature, self.max_tokens))

    def _sent(self, settings: GenerationSettings) -> GenerationSettings:
        """Decoding with this request's transport (time-out, retries)."""
        return replace(settings, timeout_s=self.timeout_s, max_retries=self.max_retries)

    def dialogues(self, every: Sequence[Dialogue]) -> list[Dialogue]:
        """The dialogues of the chosen subset (a stratified sample of it when asked);
        ``limit`` is taken later, after the languages are planned.

        Raises:
            SubsetError: a subset the data lacks, or a sample larger than it.
        """
        return select(
            every, self.subset, sample=self.sample, seed=self.seed, design=self.sample_design
        )

    # -- checks and identity ----------------------------------------------------------

    def problems(self) -> list[str]:
        """What the engine would refuse later, each in a sentence naming the setting."""
        found: list[str] = []
        if not self.langs or set(self.langs) - set(CELLS):
            found.append(_("langs must be among ko, en, en-from-ko and ko-from-en"))
        for f in fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value is not None and value not in choices:
                found.append(
                    _("{name} must be one of {choices}", name=f.name, choices=", ".join(choices))
                )
        if self.prompts is not None and self.prompts not in PROMPT_SETS:
            try:
                load_prompt_set(self.prompts)
            except KoedError as err:
                found.append(_("prompts: {error}", error=err))
        if self.concurrency < 1 or (self.limit is not None and self.limit < 1):
            found.append(_("concurrency and limit must be at least 1"))
        if self.batch_size < 1:
            found.append(_("batch size must be at least 1"))
        if self.replicate < 0:
            found.append(_("replicate must be 0 (the first run) or more"))
        if self.family is not None and not self.model.startswith("openai:"):
            found.append(
                _(
                    "family is for openai:MODEL_ID models; {model} takes its family from "
                    "models.toml",
                    model=self.model,
                )
            )
        return found

    def resolved(self) -> dict[str, Any]:
        """As :meth:`Request.resolved`, with the prompt set resolved the way the engine
        resolves it and the data named by its sha256 alone (not its path)."""
        return {**super().resolved(), "prompts": self.prompt_name(), "data": None}

    def label(self) -> str:
        """The request as people read it, in the page's language (English in a worker)."""
        label = _(
            "run {model}: {protocol}, {prompts} prompts, {langs}, {dialogues}",
            model=self.model,
            protocol=self.protocol,
            prompts=self.prompts or _("default"),
            langs=",".join(self.langs),
            dialogues=dialogues_said(self.subset, self.limit, self.sample, self.seed),
        )
        return _("{job}, Batch API", job=label) if self.batch else label


@dataclass(frozen=True, eq=False)
class EpisodeRequest(RunRequest):
    """``koed episodes`` as data: a run whose Listener hears a simulated Speaker for up
    to ``turns`` turns an episode."""

    kind: ClassVar[str] = "episodes"
    langs: tuple[str, ...] = setting(
        ("ko", "en"),
        flag="--lang",
        type=cells_arg,
        help="ko,en (default), or any of ko, en, en-from-ko, ko-from-en (translated "
        "variants: see koed translate)",
    )
    speaker: str = setting(
        "smollm2",
        help="who plays the Speaker (default smollm2, the offline model: fine for trying "
        "the pipeline, not for results)",
    )
    turns: int = setting(
        DEFAULT_TURNS,
        type=positive_int,
        help=f"Listener turns per episode after the KoED context (default {DEFAULT_TURNS}, "
        f"at most {MAX_TURNS})",
    )
    speaker_prompts: str | None = setting(
        None, type=file_arg, help="your own speaker prompt (TOML)"
    )
    """A speaker prompt TOML file; None: the shipped one."""
    speaker_temperature: float | str | None = setting(
        None, type=temperature_arg, help="the Speaker's (default: its own in models.toml)"
    )
    oracle: bool = setting(
        False,
        help="tell the Listener each dialogue's situation and emotion: the upper reference "
        "per dialogue, a run of its own (never a run under test)",
    )

    def speaker_settings(self, speaker: ModelSpec) -> GenerationSettings:
        """The Speaker's decoding: its temperature set here, else its own; short turns."""
        return self._sent(settings_for(speaker, self.speaker_temperature, SPEAKER_MAX_TOKENS))

    def problems(self) -> list[str]:
        found = super().problems()
        if not 1 <= self.turns <= MAX_TURNS:
            found.append(_("turns must be between 1 and {most}", most=MAX_TURNS))
        if self.batch:
            found.append(_("episodes are asked live: the Batch API cannot hold a conversation"))
        if self.speaker_prompts is not None:
            from koed_core.models.speaker import SPEAKER_SETS, load_speaker_prompt

            if self.speaker_prompts not in SPEAKER_SETS:
                try:
                    load_speaker_prompt(self.speaker_prompts)
                except KoedError as err:
                    found.append(_("speaker prompts: {error}", error=err))
        return found

    def label(self) -> str:
        values = {
            "model": self.model,
            "speaker": self.speaker,
            "turns": self.turns,
            "protocol": self.protocol,
            "langs": ",".join(self.langs),
            "dialogues": dialogues_said(self.subset, self.limit, self.sample, self.seed),
        }
        if self.oracle:
            return _(
                "oracle episodes {model} with speaker {speaker}: {turns} turns, {protocol}, "
                "{langs}, {dialogues}",
                **values,
            )
        return _(
            "episodes {model} with speaker {speaker}: {turns} turns, {protocol}, {langs}, "
            "{dialogues}",
            **values,
        )


def settings_for(
    spec: ModelSpec, temperature: float | str | None = None, max_tokens: int | None = None
) -> GenerationSettings:
    """Decoding: what the caller asks (``"default"``: the server's own, nothing sent),
    else the model's own from models.toml (its generation config written out:
    temperature, top_p, top_k, repetition penalty)."""
    temp, tokens = decoding(spec, temperature, max_tokens)  # type: ignore[arg-type]
    return GenerationSettings(temperature=temp, max_tokens=tokens, **sampling(spec, temp))


def dialogues_said(subset: str, limit: int | None, sample: int | None, seed: int) -> str:
    """Which dialogues a request takes ("first 5 of full (sample 40, seed 0)")."""
    size = _("first {limit} of {subset}", limit=limit, subset=subset) if limit else subset
    if sample:
        return _(
            "{dialogues} (sample {sample}, seed {seed})", dialogues=size, sample=sample, seed=seed
        )
    return size


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
