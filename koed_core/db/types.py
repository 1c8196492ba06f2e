"""The values rows are made of, and the keys that identify them.

A number's identity lives here: a response belongs to a run (:class:`RunConfig`), a judge
score to a :class:`JudgeConfig`, a human rating to a study and a rubric version. Keys are
deterministic hashes, so a rerun, a resumed run or a double click updates a row instead
of adding one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any

from koed_core.i18n import N_, _, stored_word
from koed_core.run_steps import earlier_steps, step_names

MODE_WORDS = {"paper": N_("as in the paper"), "strict": N_("strict")}
"""The judge's modes as a Korean chart subtitle says them (an English one: the mode)."""


def _wall_clock() -> datetime:
    return datetime.now(UTC)


_CLOCK: list[Callable[[], datetime]] = [_wall_clock]


def utcnow() -> datetime:
    """The time now, in UTC. Everything that decides by time (places, timeouts, idle
    minutes) asks here, so a test or a benchmark can run a study's hours in a second
    through ``set_clock`` instead of sleeping."""
    return _CLOCK[0]()


def set_clock(clock: Callable[[], datetime] | None) -> None:
    """Make ``clock`` the source of ``utcnow`` and ``now`` (None: the wall clock again)."""
    _CLOCK[0] = clock or _wall_clock


def now() -> str:
    """UTC timestamp, ISO 8601, to the second."""
    return utcnow().isoformat(timespec="seconds")


def short_hash(*parts: object) -> str:
    """A stable 20-hex-digit key from JSON-able parts."""
    blob = json.dumps(parts, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class EmotionScore:
    """Emotion recognition against the gold set.

    single: ``hit`` is whether the one predicted label is in the gold set.
    multi: precision |P∩G|/|P|, recall |P∩G|/|G|, F1 their harmonic mean, Jaccard
    |P∩G|/|P∪G|; all 0 when nothing was predicted.
    """

    hit: bool
    precision: float
    recall: float
    f1: float
    jaccard: float
    given: bool = True
    """Whether the model named any label: "no label given" is reported apart from
    "wrong label", and left out of the recognition figures."""


DECODING_KEYS = ("temperature", "max_tokens", "top_p", "top_k", "repetition_penalty")
"""A run's decoding as its stored config names it (flat, beside the other keys)."""


@dataclass(frozen=True)
class Decoding:
    """How a run's model was asked to decode, as one value: what was sent (None: not
    sent, the server's or the model's own). A run's config stores it flat, under the keys
    every release stored (``DECODING_KEYS``), so a run's id and an old database's rows
    read as they did."""

    temperature: float | None
    """None: the server's or model's own default decoding."""
    max_tokens: int
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    """Decoding beside the temperature (None: not sent)."""

    @classmethod
    def from_stored(cls, config: Mapping[str, Any]) -> Decoding:
        """The decoding of a stored run config (its flat keys)."""
        return cls(
            temperature=config.get("temperature"),
            max_tokens=int(config.get("max_tokens") or 0),
            top_p=config.get("top_p"),
            top_k=config.get("top_k"),
            repetition_penalty=config.get("repetition_penalty"),
        )


@dataclass(frozen=True)
class RunConfig:
    """What makes two runs the same run: model, protocol, prompts, decoding, data."""

    model_name: str
    backend: str
    model_id: str
    base_url: str | None
    provenance: str
    protocol: str
    prompt_version: str
    decoding: Decoding
    """Temperature, token limit and the generation config beside them, as sent."""
    dataset_sha256: str
    kind: str = "batch"
    """batch (koed run, the Runs page) or live (answers saved from the chat page)."""
    prompt_set: str = "native"
    """The prompt set (paper or native); its version is ``prompt_version``."""
    steps: tuple[tuple[str, str], ...] = ()
    """The pipeline's steps as (name, value), one per step declared in
    ``koed_core.run_steps``; a step left out is at the value runs had before it was a
    choice. Stored flat (``"commas": "raw"`` beside the other keys), as every release
    stored them."""
    family: str = "open"
    """The model family whose post-processing rule applies (open, claude)."""
    turns: int | None = None
    """Episodes: the most Listener turns an episode has (None: a single reply)."""
    speaker: str | None = None
    speaker_model_id: str | None = None
    speaker_prompt_version: str | None = None
    speaker_temperature: float | None = None
    speaker_max_tokens: int | None = None
    """Episodes: who played the Speaker (registry name, model id), with which prompt
    wording, temperature and token limit."""
    oracle: str | None = None
    """Episodes: the Listener was told the situation and the emotion (the upper reference
    per dialogue), with this wording's version; None in every run under test."""
    replicate: int = 0
    """n > 0: the same run made again, nothing changed (a sensitivity plan's "base, run
    again": the listener and the judge re-sampled), a run of its own."""
    variants: str | None = None
    """The translated variants the run was asked in, each with the id of the version it
    read (``en-from-ko v2 3f9a...``, comma-separated); None: ko and en only."""

    def stored(self) -> dict[str, Any]:
        """The configuration as a run's row keeps it: every field, the decoding's and
        each pipeline step's under its own key (a step's earlier value when not set)."""
        flat = asdict(self)
        del flat["steps"]
        decoding = flat.pop("decoding")
        return {**flat, **decoding, **earlier_steps(), **dict(self.steps)}

    @classmethod
    def from_stored(cls, config: Mapping[str, Any]) -> RunConfig:
        """A run's configuration from its stored row (:meth:`stored`'s flat keys; keys
        it does not know, a later release's, are left out): the same id as it was made
        with."""
        known = {f.name for f in fields(cls)} - {"decoding", "steps"}
        steps = tuple((n, str(config[n])) for n in step_names() if config.get(n) is not None)
        return cls(
            **{k: v for k, v in config.items() if k in known},
            decoding=Decoding.from_stored(config),
            steps=steps,
        )

    @property
    def run_id(self) -> str:
        """Deterministic id: the same configuration resumes the same run. A field at the
        value runs had before it existed is left out of the hash, so a run made by an
        earlier release resumes across the upgrade (a native run hashes as 0.1.0 did)."""
        identity = self.stored()
        for name, before in earlier_values().items():
            if name in identity and identity[name] == before:
                del identity[name]
        return short_hash(identity)


def earlier_values() -> dict[str, object]:
    """Every run field's value before the field existed: the fixed ones
    (``EARLIER_VALUES``) and each declared pipeline step's."""
    return {**EARLIER_VALUES, **earlier_steps()}


EARLIER_VALUES: dict[str, object] = {
    "prompt_set": "native",
    "family": "open",
    "top_p": None,
    "top_k": None,
    "repetition_penalty": None,
    "turns": None,
    "speaker": None,
    "speaker_model_id": None,
    "speaker_prompt_version": None,
    "speaker_temperature": None,
    "speaker_max_tokens": None,
    "oracle": None,
    "replicate": 0,
    "variants": None,
}
"""A run field's value before the field existed (left out of the run's id when so); the
pipeline steps' are declared with each step (``koed_core.run_steps``)."""


@dataclass(frozen=True)
class ResponseRecord:
    """One model answer (or its failure) for one dialogue in one language."""

    run_id: str
    conv_id: str
    lang: str
    context_hash: str
    prompt: list[dict[str, str]]
    context: list[list[str]]
    """The transcript the model answered: [role, text] pairs, for raters and judges."""
    raw: str | None
    text: str | None
    predicted: tuple[str, ...] = ()
    unknown_labels: tuple[str, ...] = ()
    parse_notes: tuple[str, ...] = ()
    latency_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    error_kind: str | None = None
    emotion_raw: str | None = None
    """The first answer of a two-call prompt set (the emotion), as the model gave it."""
    turn: int | None = None
    """An episode's Listener turn, from 1 (None: a single reply after the KoED context)."""
    cut_at: int | None = None
    """The cap the answer was cut at (characters), when it was longer (None: whole)."""
    full_chars: int | None = None
    """The answer's length before the cut (None: whole)."""

    @property
    def response_id(self) -> str:
        """Unique per run, dialogue, language and context."""
        return short_hash(self.run_id, self.conv_id, self.lang, self.context_hash)


JUDGE_TEMPERATURES: dict[str, float] = {"paper": 0.7, "strict": 0.0, "episode": 0.0, "speaker": 0.0}
"""Each judge mode's temperature: paper the authors' 0.7; strict, whole episodes and
Speaker checks 0 (a verdict read as JSON, asked to be the same twice)."""


@dataclass(frozen=True)
class JudgeConfig:
    """Who produced a judge score: one value, never averaged with another.

    Two judgments are comparable only when all four fields agree: the same model in the
    same mode with the same prompt templates quoting the same rubric.
    """

    model: str
    mode: str
    prompt_version: str
    rubric_version: str
    template: str = "fenced"
    """The judge template's name (its wording is ``prompt_version``)."""
    parse: str = "lenient"
    """How the verdict was read: authors, lenient, or json (strict mode)."""
    replicate: int = 0
    """0: the first judging of these texts under these steps. n > 0: the same judge asked
    again, everything else equal (the sensitivity table's noise floor): its own source."""
    temperature: float | None = None
    """The judge's sampling temperature; None is the mode's (``JUDGE_TEMPERATURES``), what
    every judgment was asked at before it was a setting (m025 wrote it into them)."""

    def __post_init__(self) -> None:
        if self.temperature is None and self.mode in JUDGE_TEMPERATURES:
            object.__setattr__(self, "temperature", JUDGE_TEMPERATURES[self.mode])

    @property
    def label(self) -> str:
        """Short, human-readable, unique enough for a picker."""
        return (
            f"{self.model} · {self.mode} · {self.template} template · {self.parse} parse · "
            f"prompt {self.prompt_version[:8]} · rubric {self.rubric_version[:8]}"
            + (f" · judged again #{self.replicate}" if self.replicate else "")
            + ("" if self.at_mode_temperature() else f" · T={self.temperature:g}")
        )

    def at_mode_temperature(self) -> bool:
        """Whether the judge was asked at its mode's temperature (said only when not)."""
        return self.temperature is None or self.temperature == JUDGE_TEMPERATURES.get(self.mode)

    @property
    def spoken(self) -> str:
        """For a room: names, no hashes ("gpt-4o, paper mode"), in the page's language (a
        Korean chart subtitle says the mode in Korean); the export keeps the stored names."""
        return _("{model}, {mode} mode", model=self.model, mode=stored_word(self.mode, MODE_WORDS))

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> JudgeConfig:
        """The configuration a judgments query selected (judge_model, mode, prompt_version,
        rubric_version, template, parse, replicate, temperature): one reading for every
        query, so none leaves a field out."""
        return cls(
            row["judge_model"],
            row["mode"],
            row["prompt_version"],
            row["rubric_version"],
            row["template"],
            row["parse"],
            int(row["replicate"] or 0),
            row["temperature"],
        )

    def as_columns(self) -> dict[str, str]:
        """The configuration as the columns of an exported table."""
        return {
            "judge_model": self.model,
            "judge_mode": self.mode,
            "judge_prompt_version": self.prompt_version,
            "judge_rubric_version": self.rubric_version,
            "judge_template": self.template,
            "judge_parse": self.parse,
            "judge_replicate": str(self.replicate),
            "judge_temperature": "" if self.temperature is None else f"{self.temperature:g}",
        }


@dataclass(frozen=True)
class Sampling:
    """How a study chose its dialogues among those its runs answered. The unit is the
    dialogue: a chosen dialogue brings every run's response to it in each of the study's
    languages, so its Korean and English answers are rated together and its gap is paired.
    Prediction-powered inference needs a random choice (``koed_core.results.ppi``)."""

    method: str = "all"
    """all: every answered dialogue (raters reach them in the study's seeded random
    order); random: a uniform random sample, the first ``size`` dialogues of a permutation
    of the answered ones by ``seed``; stratified: a uniform random sample of ``sizes``
    within each stratum (``strata``); manual: chosen by hand (``conv_ids`` as given)."""
    seed: int = 0
    size: int | None = None
    """random: how many dialogues (None for manual and all)."""
    strata: tuple[tuple[str, str], ...] = ()
    """stratified: (conv_id, stratum) for every answered dialogue, the population's strata."""
    sizes: tuple[tuple[str, int], ...] = ()
    """stratified: (stratum, how many dialogues drawn from it)."""
    conv_ids: tuple[str, ...] = ()
    """The dialogues chosen (random and stratified: filled when the study is built)."""
    population: int | None = None
    """How many dialogues the runs had answered when they were drawn from."""

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> Sampling:
        """Rebuild from stored JSON; a study from before sampling was recorded took every
        answered dialogue (``all``)."""
        if not raw:
            return cls()
        return cls(
            method=str(raw.get("method", "all")),
            seed=int(raw.get("seed", 0)),
            size=raw.get("size"),
            strata=tuple((str(c), str(s)) for c, s in raw.get("strata", ())),
            sizes=tuple((str(s), int(n)) for s, n in raw.get("sizes", ())),
            conv_ids=tuple(str(c) for c in raw.get("conv_ids", ())),
            population=raw.get("population"),
        )


@dataclass(frozen=True, kw_only=True)
class StudyConfig:
    """What an admin decides when building a study: built by name only (eleven values in
    a row were read by position, and one moved meant another setting), each default here
    and nowhere else (the Studies page and ``koed study create`` read them with
    :meth:`default`)."""

    name: str
    run_ids: tuple[str, ...]
    langs: tuple[str, ...] = ("ko", "en")
    overlap: int = 3
    attention_checks: int = 2
    quota: int | None = None
    """Most items one rater rates in this study (None: no limit)."""
    timeout_minutes: int = 30
    seed: int = 0
    whole_episodes: bool = False
    """Episode runs: one item is one whole episode (the Listener rated over the whole
    conversation), not one item per Listener turn."""
    sampling: Sampling = Sampling()
    """Which dialogues the study holds, and how they were chosen."""
    bilingual: str = "free"
    """separate: no rater sees both language versions of one dialogue (the rater who read
    one would rate the other against it; what the Studies page and ``koed study create``
    choose for a ko+en study unless told otherwise); counterbalanced: a rater may, half
    their dialogues Korean first and half English first, the order recorded per rating
    (``ratings.lang_position``); free: no rule (a study from before the choice)."""

    @classmethod
    def default(cls, name: str) -> Any:
        """A setting's default (a form's first value, a flag's default).

        Raises:
            KeyError: no such setting, or one without a default.
        """
        found = cls.__dataclass_fields__[name].default
        if found is MISSING:
            raise KeyError(name)
        return found

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> StudyConfig:
        """Rebuild from the stored JSON (lists back to tuples)."""
        return cls(
            **{
                **raw,
                "run_ids": tuple(raw["run_ids"]),
                "langs": tuple(raw["langs"]),
                "sampling": Sampling.from_json(raw.get("sampling")),
                "bilingual": raw.get("bilingual", "free"),
            }
        )


@dataclass(frozen=True)
class RaterProfile:
    """Onboarding answers: stored for agreement breakdowns, exported only in aggregate."""

    username: str
    languages: tuple[str, ...]
    native_language: str
    years_korea: float
    years_english: float


@dataclass(frozen=True)
class RatingItem:
    """What a rater sees: the blind payload. No model, run, judge or other rater in it."""

    assignment_id: str
    study_id: int
    lang: str
    context: tuple[tuple[str, str], ...]
    response: str
    instruction: str | None = None
    """An attention check's instruction (what to choose), shown above the item."""
    instructed_score: int | None = None
    """The score that instruction asks for on every dimension (None: not a told check)."""
    kind: str = "response"
    """response, attention, or episode (a whole episode: the conversation is the item)."""


@dataclass(frozen=True)
class CandidateItem:
    """A study item a rater could be given next, with how many raters hold it."""

    item_id: str
    kind: str
    taken: int
    conv_id: str = ""
    lang: str = ""
