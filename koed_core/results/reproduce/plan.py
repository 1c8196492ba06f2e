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


RUN_KEYS: dict[str, str] = {
    "subset": "subset",
    "langs": "langs",
    "prompts": "prompts",
    "sample": "sample",
    "seed": "seed",
    "sample_design": "sample_design",
    "concurrency": "concurrency",
    "batch": "batch",
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "run_replicate": "replicate",
}
"""Plan keys that are a run request's fields (plan key -> ``RunRequest`` field): each
one's default and kind are the request's."""
EPISODE_KEYS: dict[str, str] = {"speaker": "speaker", "turns": "turns"}
"""Plan keys that are an episodes request's fields (``EpisodeRequest``)."""
JUDGE_KEYS: dict[str, str] = {
    "judge": "judge",
    "judge_mode": "mode",
    "judge_concurrency": "concurrency",
    "judge_template": "template",
    "judge_parse": "parse",
    "judge_replicate": "replicate",
    "judge_temperature": "temperature",
}
"""Plan keys that are a judge request's fields (``JudgeRequest``)."""
REPRODUCTION: dict[str, Any] = {
    "subset": "paper-100",
    "prompts": "paper",
    "sample_design": "uniform",
    "speaker": None,
}
"""Where a plan, a reproduction of the paper, asks otherwise than a request's default:
the authors' sample and prompts; a sample drawn uniformly, so its means estimate the
subset's (issue 64 #8); an episodes plan names its Speaker (the offline default is for
trying the pipeline, not for results)."""
PLAN_KINDS: dict[str, str] = {"prompts": "str", "speaker": "str | None"}
"""A request key whose kind differs in a plan: a plan names its prompt set (the request's
None, the protocol's, is not a TOML value), and its Speaker only when it has episodes."""


def request_for(key: str) -> tuple[type[Any], str]:
    """The request class and field a plan key is (``KeyError``: a plan's own key)."""
    for cls, keys in ((RunRequest, RUN_KEYS), (EpisodeRequest, EPISODE_KEYS)):
        if key in keys:
            return cls, keys[key]
    return JudgeRequest, JUDGE_KEYS[key]


def from_request(key: str) -> Any:
    """A plan field that is a request field: its default is the request's, unless a
    reproduction asks otherwise (``REPRODUCTION``); its kind is checked against the
    request's in tests/test_requests.py."""
    cls, name = request_for(key)
    found = {f.name: f for f in fields(cls)}[name]
    return field(default=REPRODUCTION.get(key, found.default), metadata={"request": name})


@dataclass(frozen=True)
class Plan:
    """What to reproduce: the plan's own keys (its models, protocols, judge, kind and
    variants) and request fields, each named as a plan file names it (``RUN_KEYS``,
    ``EPISODE_KEYS``, ``JUDGE_KEYS``) with the request's default."""

    name: str
    models: tuple[str, ...]
    judge: str
    subset: str = from_request("subset")
    langs: tuple[str, ...] = from_request("langs")
    protocols: tuple[str, ...] = ("single", "multi")
    prompts: str = from_request("prompts")
    judge_mode: str = from_request("judge_mode")
    concurrency: int = from_request("concurrency")
    judge_concurrency: int = from_request("judge_concurrency")
    sample: int | None = from_request("sample")
    seed: int = from_request("seed")
    sample_design: str = from_request("sample_design")
    batch: bool = from_request("batch")
    """Send the requests of OpenAI-compatible models through the provider's Batch API."""
    pipeline: Mapping[str, str] = field(default_factory=dict)
    """The pipeline steps chosen, each under its own key in the file (``commas = "raw"``;
    see ``koed_core.run_steps``); a step left out takes the prompt set's profile (the authors'
    for paper)."""
    temperature: float | str | None = from_request("temperature")
    """Every model's temperature, or "default" (the server's own); None: each model's."""
    max_tokens: int | None = from_request("max_tokens")
    """Every model's token limit; None: each model's (models.toml, else 256)."""
    judge_template: str | None = from_request("judge_template")
    judge_parse: str | None = from_request("judge_parse")
    """None: the judge mode's (paper: the authors' template and parser)."""
    judge_replicate: int = from_request("judge_replicate")
    """n > 0: the judge asked again about the same texts, a source of its own (the
    sensitivity table's "base, judged again" noise floor)."""
    judge_temperature: float | None = from_request("judge_temperature")
    """The judge's temperature; None: its mode's (paper 0.7, as the authors)."""
    run_replicate: int = from_request("run_replicate")
    """n > 0: every run made again, nothing changed, and judged (the sensitivity table's
    "base, run again": the listener and the judge re-sampled)."""
    kind: str = "runs"
    """runs (one reply after each KoED context) or episodes (``koed episodes``: the
    models listen to a simulated Speaker for ``turns`` Listener turns)."""
    speaker: str | None = from_request("speaker")
    """Episodes: who plays the Speaker (a registry name)."""
    turns: int = from_request("turns")
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Named variants of the plan, each changing one step (a sensitivity plan): every
    variant is run and judged beside the plan itself, the base."""

    def run_request(self, model: str, protocol: str) -> RunRequest:
        """What the plan asks of one model under one protocol: a run, or (an episodes
        plan) episodes with the plan's Speaker."""
        asked: dict[str, Any] = {name: getattr(self, key) for key, name in RUN_KEYS.items()}
        if not self.sample:  # only with a sample: a plan without one asks what it always asked
            del asked["sample_design"]
        asked.update(model=model, protocol=protocol, **self.pipeline)
        if self.kind == "episodes":  # asked live, and made once
            del asked["batch"], asked["replicate"]
            return EpisodeRequest(**asked, speaker=self.speaker or "", turns=self.turns)
        return RunRequest(**asked)

    def judge_request(self, run_id: str) -> JudgeRequest:
        """What the plan asks of its judge about one run."""
        return JudgeRequest(
            run_id, **{name: getattr(self, key) for key, name in JUDGE_KEYS.items()}
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
    checks += [
        (
            plan.max_tokens is None or plan.max_tokens >= 1,
            "max_tokens must be a whole number from 1",
        ),
        (
            plan.judge_temperature is None or 0 <= plan.judge_temperature <= 2,
            "judge_temperature must be a number from 0 to 2",
        ),
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


LISTS = tuple(f.name for f in fields(Plan) if str(f.type).startswith("tuple["))
"""Keys a plan file writes as a TOML list (``tuple(...)`` of a string: its letters)."""
KIND_WORDS = {
    "int": " (a whole number)",
    "tuple[str, ...]": " (a list of names)",
    "bool": " (true or false)",
}


def _fits(value: object, kind: str) -> bool:
    """Whether ``value`` (read from TOML) is of the kind a field's annotation names."""
    for one in kind.split(" | "):
        if (
            (one == "None" and value is None)
            or (one == "str" and isinstance(value, str))
            or (one == "bool" and isinstance(value, bool))
            or (one == "int" and isinstance(value, int) and not isinstance(value, bool))
            or (one == "float" and isinstance(value, int | float) and not isinstance(value, bool))
            or (
                one == "tuple[str, ...]"
                and isinstance(value, tuple)
                and all(isinstance(v, str) for v in value)
            )
        ):
            return True
    return False


def _check_types(plan: Plan, path: str) -> None:
    """Each key of the kind its field says (a request key: the request's), before any
    value is compared: ``sample = "3"`` or ``models = "a"`` is named here, not a
    TypeError later (or a run begun and left).

    Raises:
        PlanError: naming the file and the key.
    """
    wrong = []
    for f in fields(plan):
        kind = str(f.type)
        if kind.startswith("Mapping"):
            continue  # the pipeline's values are checked below, the variants as plans
        if not _fits(getattr(plan, f.name), kind):
            first = next(k for k in kind.split(" | ") if k != "None")
            wrong.append(f.name + KIND_WORDS.get(first, ""))
    wrong += [k for k, v in plan.pipeline.items() if not isinstance(v, str)]
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
