"""A judging pass's settings, declared once: what ``koed judge`` takes, what a judge job
stores, what a plan asks after each run, what the Judge form fills in.

As for runs (:mod:`koed_core.models.request`), each setting is a field whose metadata says
how the command line spells it; the resolution rules (the mode's template and parser, its
token limit, samples only in strict mode) are the methods below.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from koed_core.db import JudgeConfig
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.judge.rubric import codes, rubric_version
from koed_core.judge.verdicts import (
    MODES,
    PARSES,
    TEMPLATES,
    JudgeTemplate,
    default_parse,
    default_template,
    judge_prompt_version,
    load_template,
)
from koed_core.models.request import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CONCURRENCY,
    Request,
    positive_int,
    setting,
    source_arg,
    temperature_arg,
)


def judge_temperature_arg(text: str) -> float:
    """``--temperature`` of ``koed judge``: a number from 0 to 2."""
    import argparse

    value = temperature_arg(text)
    if isinstance(value, str):
        raise argparse.ArgumentTypeError("takes a number from 0 to 2 (the judge's own: leave out)")
    return value


class JudgeError(KoedError, ValueError):
    """A judging request that cannot be done as asked (no dimension, bad sample count)."""


@dataclass(frozen=True)
class JudgeSteps:
    """How a judging pass words its prompt and reads the verdict (both are part of the
    judge configuration: two passes differing in either are two sources)."""

    template: JudgeTemplate
    parse: str

    @classmethod
    def choose(cls, mode: str, template: str | None = None, parse: str | None = None) -> JudgeSteps:
        """The mode's defaults (paper: the authors' template and parser; strict: the
        fenced JSON template), with each explicit choice overriding them.

        Raises:
            JudgeError: a parser that does not fit the mode.
            TemplateError: no such template, or one without a form for the mode.
        """
        chosen = load_template(template or default_template(mode))
        how = parse or default_parse(mode)
        if mode == "strict" and how != "json":
            raise JudgeError("strict mode reads its JSON verdict: leave --parse out")
        if mode == "paper" and how not in PARSES:
            raise JudgeError(f"parse must be one of {', '.join(PARSES)}, not {how!r}")
        if mode not in chosen.tasks:
            raise JudgeError(f"the {chosen.name!r} judge template has no {mode} form")
        return cls(chosen, how)


def current_config(
    judge: str,
    mode: str,
    template: str | None = None,
    parse: str | None = None,
    replicate: int = 0,
    temperature: float | None = None,
) -> JudgeConfig:
    """The configuration a judging pass with these steps, today's wording and rubric
    produces (``temperature`` None: the mode's)."""
    steps = JudgeSteps.choose(mode, template, parse)
    return config_of(judge, mode, steps, replicate, temperature)


def config_of(
    judge: str,
    mode: str,
    steps: JudgeSteps,
    replicate: int = 0,
    temperature: float | None = None,
) -> JudgeConfig:
    """The configuration a pass of ``judge`` in ``mode`` with ``steps`` produces (at
    ``temperature``, None: the mode's)."""
    version = judge_prompt_version(steps.template)
    return JudgeConfig(
        judge,
        mode,
        version,
        rubric_version(),
        steps.template.name,
        steps.parse,
        replicate,
        temperature,
    )


def chosen_dimensions(dims: Sequence[str] | None) -> list[str]:
    """None means all five; an empty choice is a mistake, not "all".

    Raises:
        JudgeError: no dimension, or an unknown one.
    """
    if dims is None:
        return list(codes())
    chosen = list(dims)
    if not chosen:
        raise JudgeError(f"choose at least one dimension ({', '.join(codes())})")
    unknown = set(chosen) - set(codes())
    if unknown:
        raise JudgeError(
            f"unknown dimension(s) {', '.join(sorted(unknown))}; use {', '.join(codes())}"
        )
    return chosen


DEFAULT_ATTEMPTS = 5
"""How often an unparseable verdict is asked again (the authors retried up to 5 times)."""


PAPER_MAX_TOKENS = 256
"""The authors' limit for a verdict."""
STRICT_MAX_TOKENS = 400
"""Room for strict mode's JSON with its rationale first."""


@dataclass(frozen=True, eq=False)
class JudgeRequest(Request):
    """``koed judge`` as data: one judge configuration over one run."""

    kind: ClassVar[str] = "judge"
    run_id: str = setting(flag="--run", help="run id (see the Runs page)")
    judge: str = setting(
        "gpt-4o", help="registry name or openai:MODEL_ID (default: gpt-4o, the paper's)"
    )
    mode: str = setting("paper", choices=MODES, help="paper (default) or strict")
    dims: tuple[str, ...] | None = setting(
        None, flag="--dimensions", choices=codes(), nargs="+", help="default: all five"
    )
    samples: int = setting(1, type=positive_int, help="strict mode: k samples averaged")
    concurrency: int = setting(
        DEFAULT_CONCURRENCY, type=positive_int, how=True, help="calls at once (default 8)"
    )
    batch: bool = setting(
        False,
        help="send the calls through the provider's Batch API (OpenAI: half the price, "
        "answers within 24 h); resumable like a live pass",
    )
    batch_size: int = setting(
        DEFAULT_BATCH_SIZE,
        type=positive_int,
        how=True,
        help="with --batch: calls per provider batch (default 1000)",
    )
    template: str | None = setting(
        None,
        flag="--template",
        aliases=("--judge-template",),
        type=source_arg(TEMPLATES),
        help=f"judge prompt wording: {', '.join(TEMPLATES)} or your own TOML file (default: "
        "authors in paper mode, fenced in strict)",
    )
    """A shipped judge template (authors, fenced) or a TOML file; None: the mode's."""
    parse: str | None = setting(
        None,
        choices=PARSES,
        help="paper mode's verdict reader (default authors: split on 'Score:', then int)",
    )
    """authors or lenient (paper mode); None: the mode's."""
    replicate: int = setting(
        0,
        type=int,
        help="ask the judge again about texts it judged (N from 1), kept as a source of its "
        "own: the noise floor of a comparison",
    )
    whole_episode: bool = setting(
        False,
        help="an episode run: score each episode whole (the five dimensions and UND, came "
        "to understand), a judge configuration of its own",
    )
    speaker_check: bool = setting(
        False,
        help="an episode run: check each kept Speaker turn (stays in the situation, keeps "
        "the feeling unnamed, sounds native)",
    )
    temperature: float | None = setting(
        None,
        type=judge_temperature_arg,
        help="the judge's sampling temperature, from 0 to 2 (default: the mode's, paper 0.7 "
        "as the authors, strict 0); part of the judge configuration",
    )
    """None: the mode's (``JUDGE_TEMPERATURES``), what judging always asked at."""
    max_tokens: int | None = setting(None, flag=None, help="")
    """None: the mode's (``PAPER_MAX_TOKENS``, ``STRICT_MAX_TOKENS``)."""
    attempts: int = setting(DEFAULT_ATTEMPTS, flag=None, help="")
    """How often an unparseable verdict is asked in all."""

    # -- resolution -------------------------------------------------------------------

    def steps(self) -> JudgeSteps:
        """The template and verdict reader: the mode's, each explicit choice overriding.

        Raises:
            JudgeError: a parser that does not fit the mode.
            TemplateError: no such template, or one without a form for the mode.
        """
        return JudgeSteps.choose(self.mode, self.template, self.parse)

    def config(self, judge_name: str | None = None) -> JudgeConfig:
        """The judge configuration this pass produces (``judge_name``: the resolved
        model's registry name, default the one asked for)."""
        return current_config(
            judge_name or self.judge,
            self.mode,
            self.template,
            self.parse,
            self.replicate,
            self.temperature,
        )

    def dimensions(self) -> list[str]:
        """The dimensions judged (None: all five).

        Raises:
            JudgeError: none chosen, or an unknown one.
        """
        return chosen_dimensions(self.dims)

    def token_limit(self) -> int:
        """The verdict's token limit: the one set, else the mode's."""
        return self.max_tokens or (PAPER_MAX_TOKENS if self.mode == "paper" else STRICT_MAX_TOKENS)

    def samples_asked(self) -> int:
        """Samples per (response, dimension): strict mode averages them, paper asks once."""
        return self.samples if self.mode == "strict" else 1

    # -- checks and identity ----------------------------------------------------------

    def problems(self) -> list[str]:
        """What judging would refuse later, each in a sentence naming the setting."""
        found: list[str] = []
        if self.mode not in MODES:
            found.append(_("mode must be one of {choices}", choices=", ".join(MODES)))
        if self.dims is not None and (not self.dims or set(self.dims) - set(codes())):
            found.append(_("dimensions must be among {codes}", codes=", ".join(codes())))
        if self.samples < 1 or self.concurrency < 1 or self.attempts < 1:
            found.append(_("samples and concurrency must be at least 1"))
        if self.batch_size < 1:
            found.append(_("batch size must be at least 1"))
        if self.replicate < 0:
            found.append(_("replicate must be 0 (the first judging) or more"))
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            found.append(_("temperature must be between 0 and 2"))
        if self.whole_episode and self.speaker_check:
            found.append(_("whole episode and speaker check are two passes: choose one"))
        if self.mode in MODES and not found:
            try:
                self.steps()
            except KoedError as err:
                found.append(str(err))
        return found

    def label(self, run: str | None = None) -> str:
        """The pass as people read it, in the page's language (English in a worker);
        ``run``: the run as every picker names it (default: its id)."""
        settings = [
            self.mode,
            ",".join(self.dims) if self.dims else _("all dimensions"),
            *([_("template {name}", name=self.template)] if self.template else []),
            *([_("parse {name}", name=self.parse)] if self.parse else []),
            *([_("judged again #{n}", n=self.replicate)] if self.replicate else []),
            *([f"T={self.temperature:g}"] if self.temperature is not None else []),
        ]
        label = _(
            "judge {run} with {judge} ({settings})",
            run=run or _("run {run_id}", run_id=self.run_id),
            judge=self.judge,
            settings=", ".join(settings),
        )
        return _("{job}, Batch API", job=label) if self.batch else label
