"""A reproduction plan: reading the TOML file, what each key may be, and the generation
settings a plan gives a model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from koed_core.db import JudgeConfig
from koed_core.dialogues.subsets import SAMPLE_DESIGNS, SUBSETS
from koed_core.dialogues.variants import CELLS
from koed_core.errors import KoedError
from koed_core.judge.request import JudgeRequest
from koed_core.models.client import GenerationSettings
from koed_core.models.pipeline import Steps
from koed_core.models.prompts import PROMPT_SETS, load_prompt_set
from koed_core.models.protocol import PROTOCOLS
from koed_core.models.registry import ModelSpec
from koed_core.models.request import EpisodeRequest, RunRequest
from koed_core.run_steps import step_names
from koed_core.tomlfile import parse_toml

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
    sample_design: str = "uniform"
    """How ``sample`` draws (``koed_core.dialogues.subsets``): uniform, every dialogue
    equally likely, so the sample's means estimate the subset's (issue 64 #8)."""
    batch: bool = False
    """Send the requests of OpenAI-compatible models through the provider's Batch API."""
    pipeline: Mapping[str, str] = field(default_factory=dict)
    """The pipeline steps chosen, each under its own key in the file (``commas = "raw"``;
    see ``koed_core.run_steps``); a step left out takes the prompt set's profile (the authors'
    for paper)."""
    temperature: float | str | None = None
    """Every model's temperature, or "default" (the server's own); None: each model's."""
    judge_template: str | None = None
    judge_parse: str | None = None
    """None: the judge mode's (paper: the authors' template and parser)."""
    judge_replicate: int = 0
    """n > 0: the judge asked again about the same texts, a source of its own (the
    sensitivity table's "base, judged again" noise floor)."""
    run_replicate: int = 0
    """n > 0: every run made again, nothing changed, and judged (the sensitivity table's
    "base, run again": the listener and the judge re-sampled)."""
    kind: str = "runs"
    """runs (one reply after each KoED context) or episodes (``koed episodes``: the
    models listen to a simulated Speaker for ``turns`` Listener turns)."""
    speaker: str | None = None
    """Episodes: who plays the Speaker (a registry name)."""
    turns: int = 3
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Named variants of the plan, each changing one step (a sensitivity plan): every
    variant is run and judged beside the plan itself, the base."""

    def run_request(self, model: str, protocol: str) -> RunRequest:
        """What the plan asks of one model under one protocol: a run, or (an episodes
        plan) episodes with the plan's Speaker."""
        asked: dict[str, Any] = {
            "model": model,
            "langs": self.langs,
            "protocol": protocol,
            "prompts": self.prompts,
            "subset": self.subset,
            "sample": self.sample,
            "seed": self.seed,
            # only with a sample: a plan without one asks what it always asked
            **({"sample_design": self.sample_design} if self.sample else {}),
            "concurrency": self.concurrency,
            "temperature": self.temperature,
            **self.pipeline,
        }
        if self.kind == "episodes":
            return EpisodeRequest(**asked, speaker=self.speaker or "", turns=self.turns)
        return RunRequest(**asked, batch=self.batch, replicate=self.run_replicate)

    def judge_request(self, run_id: str) -> JudgeRequest:
        """What the plan asks of its judge about one run."""
        return JudgeRequest(
            run_id,
            judge=self.judge,
            mode=self.judge_mode,
            concurrency=self.judge_concurrency,
            template=self.judge_template,
            parse=self.judge_parse,
            replicate=self.judge_replicate,
        )

    def steps(self, family: str, model: str = "") -> Steps:
        """The pipeline steps of one model's runs (``model``: its id, which decides the
        paper profile's post-processing for the authors' open models)."""
        return self.run_request(model, self.protocols[0]).steps_of(family, model)

    def judge_config(self, judge: str) -> JudgeConfig:
        """The judge configuration this plan's judging produces."""
        return self.judge_request("").config(judge)

    def varied(self, changes: Mapping[str, Any]) -> Plan:
        """The plan with a variant's changes (a pipeline step's name changes that step)."""
        steps = {k: v for k, v in changes.items() if k in step_names()}
        rest = {k: v for k, v in changes.items() if k not in step_names()}
        return replace(self, variants={}, pipeline={**self.pipeline, **steps}, **rest)


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
    raw = parse_toml(text, path, PlanError)
    allowed = ({f.name for f in fields(Plan)} - {"pipeline"}) | set(step_names())
    unknown = set(raw) - allowed
    if unknown:
        raise PlanError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    for key in ("name", "models", "judge"):
        if key not in raw:
            raise PlanError(f"{path}: {key} is missing")
    for key in LISTS:
        if key in raw:
            if not isinstance(raw[key], list):  # tuple("gpt") would be three models
                raise PlanError(f'{path}: {key} must be a list (["a", "b"])')
            raw[key] = tuple(raw[key])
    variants = raw.get("variants", {})
    if not isinstance(variants, dict) or not all(isinstance(v, dict) for v in variants.values()):
        raise PlanError(f"{path}: variants is a table of named tables ([variants.NAME])")
    for name, changes in variants.items():
        wrong = set(changes) - set(variant_keys())
        if wrong or not changes:
            raise PlanError(
                f"{path}: variant {name!r} may change {', '.join(variant_keys())} "
                f"(found {', '.join(sorted(wrong)) or 'nothing'})"
            )
    raw["pipeline"] = {k: raw.pop(k) for k in step_names() if k in raw}
    plan = Plan(**raw)
    _check(plan, path)
    for name, changes in plan.variants.items():
        _check(plan.varied(changes), f"{path}: variant {name!r}")
    return plan


def variant_keys() -> tuple[str, ...]:
    """What a sensitivity plan's variant may change: every declared pipeline step among
    the other settings."""
    return ("prompts", *step_names(), *OTHER_VARIANT_KEYS)


OTHER_VARIANT_KEYS = (
    "temperature",
    "judge_template",
    "judge_parse",
    "judge_replicate",
    "run_replicate",
)
VARIANT_KEYS = variant_keys()
"""The keys as the steps were declared when this was imported (``variant_keys``: now)."""


def _check(plan: Plan, path: str) -> None:
    """Every value of a plan within its choices.

    Raises:
        PlanError: naming the file (and variant) and the key.
    """
    _check_types(plan, path)
    checks = [
        (
            set(plan.langs) <= set(CELLS) and plan.langs,
            "langs must be among ko, en, en-from-ko and ko-from-en",
        ),
        (plan.subset in SUBSETS, f"subset must be one of {', '.join(SUBSETS)}"),
        (plan.sample is None or plan.sample >= 1, "sample must be a whole number from 1"),
        (
            plan.sample_design in SAMPLE_DESIGNS,
            f"sample_design must be one of {', '.join(SAMPLE_DESIGNS)}",
        ),
        (set(plan.protocols) <= set(PROTOCOLS) and plan.protocols, "protocols: single, multi"),
        (
            plan.prompts in PROMPT_SETS or Path(plan.prompts).suffix == ".toml",
            f"prompts must be one of {', '.join(PROMPT_SETS)} or a .toml file",
        ),
        (plan.judge_mode in ("paper", "strict"), "judge_mode must be paper or strict"),
        (plan.concurrency >= 1 and plan.judge_concurrency >= 1, "concurrency must be >= 1"),
        (plan.judge_replicate >= 0, "judge_replicate must be 0 (the first judging) or more"),
        (plan.run_replicate >= 0, "run_replicate must be 0 (the first run) or more"),
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


TEXTS = ("name", "judge", "subset", "prompts", "judge_mode", "kind", "sample_design")
WHOLE_NUMBERS = (
    "concurrency",
    "judge_concurrency",
    "seed",
    "turns",
    "judge_replicate",
    "run_replicate",
)
LISTS = ("models", "langs", "protocols")
MAYBE_TEXTS = ("judge_template", "judge_parse")


def _check_types(plan: Plan, path: str) -> None:
    """Each key of the kind it must be, before any value is compared: ``sample = "3"`` or
    ``models = "a"`` is named here, not a TypeError later (or a run begun and left).

    Raises:
        PlanError: naming the file and the key.
    """

    def whole(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    wrong = [k for k in TEXTS if not isinstance(getattr(plan, k), str)]
    wrong += [f"{k} (a whole number)" for k in WHOLE_NUMBERS if not whole(getattr(plan, k))]
    wrong += [
        f"{k} (a list of names)"
        for k in LISTS
        if not all(isinstance(v, str) for v in getattr(plan, k))
    ]
    wrong += [
        k
        for k in MAYBE_TEXTS
        if getattr(plan, k) is not None and not isinstance(getattr(plan, k), str)
    ]
    wrong += [k for k, v in plan.pipeline.items() if not isinstance(v, str)]
    if plan.sample is not None and not whole(plan.sample):
        wrong.append("sample (a whole number)")
    if plan.speaker is not None and not isinstance(plan.speaker, str):
        wrong.append("speaker")
    if not isinstance(plan.batch, bool):
        wrong.append("batch (true or false)")
    if wrong:
        raise PlanError(f"{path}: wrong kind of value for {', '.join(wrong)}")


def pinned(plan: Plan, specs: Mapping[str, ModelSpec] | None = None) -> Plan:
    """The plan with every step written out as its base resolves it, so that a variant
    changing one step leaves the others where the base has them (native prompts, say,
    would otherwise bring the native set's own post-processing). With ``specs``, as the
    first model resolves them (the authors' open models: their literal path)."""
    first = (specs or {}).get(plan.models[0]) if plan.models else None
    steps = plan.steps(first.family, first.model or "") if first else plan.steps("open")
    judging = plan.judge_config(plan.judge)
    return replace(
        plan,
        variants={},
        pipeline=steps.chosen(),
        judge_template=plan.judge_template or judging.template,
        judge_parse=judging.parse,
    )


def reusable(base: Plan, variant: Plan, specs: Mapping[str, ModelSpec]) -> bool:
    """Whether a variant that is a run of its own may take the base's answers to the
    requests it sends byte for byte as the base did (the same decoding, reply-call rule
    and model; not a replicate, which is there to ask again)."""
    from koed_core.models.pipeline import same_reply_call

    if variant.run_replicate != base.run_replicate:
        return False
    for name in base.models:
        spec = specs.get(name)
        if spec is None:
            continue
        if plan_settings(base, spec) != plan_settings(variant, spec):
            return False
        model = spec.model or ""
        if not same_reply_call(base.steps(spec.family, model), variant.steps(spec.family, model)):
            return False
    return True


def plan_settings(plan: Plan, spec: ModelSpec) -> GenerationSettings:
    """One model's decoding in a plan: the plan's temperature when it sets one ("default":
    the server's own, nothing sent), else the model's own from models.toml."""
    return plan.run_request(spec.name, plan.protocols[0]).settings(spec)
