"""The LLM judge: prompts for the five dimensions, and reading a verdict out of a reply.

``paper`` follows the KoED paper: one call per dimension, feedback first and then
``Score: n`` on 1-5, temperature 0.7. ``strict`` asks at temperature 0 for a JSON object
with the rationale before the score, and checks it. A reply that does not parse is
*unscored* with its reason, never a 0 or a 3.

The wording is data (``data/judge/*.toml``, or a researcher's own file): the ``authors``
template has the structure of the KoED authors' judge prompt, the ``fenced`` one quotes
the dialogue and the response between markers (with look-alikes neutralised inside them)
so text under judgment cannot end the quote and speak to the judge. The verdict is read
by the ``authors`` parser (theirs: ``split("Score:")`` then ``int``, anything else asked
again) or the ``lenient`` one (a final ``Score`` line in any of the usual forms).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from koed_core.db.types import JUDGE_TEMPERATURES
from koed_core.errors import KoedError
from koed_core.judge.rubric import SCALE, Dimension, rubric_version
from koed_core.models.protocol import ROLE_NAMES, Message
from koed_core.paths import DATA_DIR
from koed_core.tomlfile import read_toml, shipped_or_path

JudgeMode = Literal["paper", "strict"]
MODES: tuple[JudgeMode, ...] = ("paper", "strict")
TEMPLATES = ("authors", "fenced")
PARSES = ("authors", "lenient")
"""Parsers of a paper-mode verdict; strict mode reads its JSON (parse ``json``)."""
JUDGE_DIR = DATA_DIR / "judge"
LANGUAGE = {"ko": "Korean", "en": "English"}
TEMPERATURE: dict[str, float] = {m: JUDGE_TEMPERATURES[m] for m in ("paper", "strict")}
FENCE_OPEN = "<<<{name}>>>"
FENCE_CLOSE = "<<<END {name}>>>"
# One verdict line: "Score: 4", "**Score**: 4", "Score: [4]" (the authors' own template),
# "Score (EX): 4", "Final score: 4/5", "점수: 4". Only whole lines count, and the last one
# wins, so feedback that quotes an earlier score (or the judged reply's "Score: 5") can
# neither set nor void the verdict.
VERDICT_LINE = re.compile(
    r"^[\W_]*(?:final\s+)?(?:score|점수)\s*(?:\([^)]*\))?[\s*_]*[:：][\s*_]*\[?\s*"
    r"(?P<value>-?\d+(?:\.\d+)?)\s*\]?\s*(?:/\s*5)?[\W_]*$",
    re.IGNORECASE | re.MULTILINE,
)
# Fence look-alikes: angle brackets of any width or script, split by zero-width characters.
ANGLES_OPEN = "<＜﹤〈《≪‹⟨"
ANGLES_CLOSE = ">＞﹥〉》≫›⟩"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
FENCE_LIKE = re.compile(
    f"[{ANGLES_OPEN}](?:[{ZERO_WIDTH}\\s]*[{ANGLES_OPEN}])+|"
    f"[{ANGLES_CLOSE}](?:[{ZERO_WIDTH}\\s]*[{ANGLES_CLOSE}])+"
)


@dataclass(frozen=True)
class Verdict:
    """A judged dimension: a score, or no score and the reason why."""

    score: float | None
    rationale: str
    unscored_reason: str | None = None
    ask_again: bool = True
    """For an unscored verdict: whether the parser would have the judge asked again."""


def neutralise(text: str) -> str:
    """Text under judgment cannot contain the fence markers or anything like them: runs
    of two or more angle brackets (ASCII, full-width, guillemets, split by zero-width
    characters) become single-width guillemets, which never close a fence."""

    def soften(match: re.Match[str]) -> str:
        return "‹" if match.group(0)[0] in ANGLES_OPEN else "›"

    return FENCE_LIKE.sub(soften, text)


def fenced(name: str, body: str) -> str:
    """A quoted block the judge is told to treat as data."""
    return f"{FENCE_OPEN.format(name=name)}\n{neutralise(body)}\n{FENCE_CLOSE.format(name=name)}"


class TemplateError(KoedError, ValueError):
    """A judge template file that cannot be used; names the file and what is wrong."""


@dataclass(frozen=True)
class JudgeTemplate:
    """A judge prompt's wording: a system and a task template per mode, with placeholders."""

    name: str
    fence: bool
    anchor: str
    culture: str
    system: str
    tasks: Mapping[str, str]
    cultures: Mapping[str, str]
    source: str

    @property
    def version(self) -> str:
        """A hash of the wording and the rubric it quotes (the shipped ``fenced`` file
        hashes as the templates of releases 0.1 and 0.2 did, so their judgments resume)."""
        parts: list[object] = [
            self.system,
            self.tasks.get("paper", ""),
            self.tasks.get("strict", ""),
            dict(self.cultures),
            rubric_version(),
        ]
        if (self.fence, self.anchor, self.culture) != FENCED_SHAPE:
            parts.append([self.fence, self.anchor, self.culture])
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:12]


FENCED_SHAPE = (True, "{score}: {text}", "Judge against {culture}.\n")
PLACEHOLDERS = (
    "code",
    "name",
    "question",
    "anchors",
    "culture_note",
    "language",
    "dialogue",
    "response",
    "open_",
    "close",
)


def load_template(source: str | Path) -> JudgeTemplate:
    """A shipped template by name (``authors``, ``fenced``) or a TOML file by path.

    Raises:
        TemplateError: no such template, not TOML, a key missing, an unknown placeholder.
    """
    return shipped_or_path(source, JUDGE_DIR, TEMPLATES, _read_template)


def _read_template(path: Path) -> JudgeTemplate:
    raw = read_toml(path, "judge template", TEMPLATES, TemplateError)
    missing = [k for k in ("name", "system", "paper") if not isinstance(raw.get(k), str)]
    if missing:
        raise TemplateError(f"{path}: needs {', '.join(missing)} (text)")
    tasks: dict[str, str] = {str(m): str(raw[m]) for m in MODES if isinstance(raw.get(m), str)}
    if "fence" in raw and not isinstance(raw["fence"], bool):
        raise TemplateError(f"{path}: fence must be true or false, not {raw['fence']!r}")
    for mode, task in tasks.items():
        text = raw["system"] + task
        lost = [p for p in ("{dialogue}", "{response}") if p not in text]
        if lost:
            raise TemplateError(
                f"{path}: the {mode} form never shows {' or '.join(lost)}: the judge would "
                "score what it cannot see"
            )
    template = JudgeTemplate(
        name=str(raw["name"]),
        fence=bool(raw.get("fence", True)),
        anchor=str(raw.get("anchor", "{score}: {text}")),
        culture=str(raw.get("culture", "")),
        system=raw["system"],
        tasks=tasks,
        cultures={str(k): str(v) for k, v in dict(raw.get("cultures", {})).items()},
        source=str(path),
    )
    values = dict.fromkeys(PLACEHOLDERS, "")
    for key, text in [("system", template.system), *tasks.items()]:
        try:
            text.format(**values)
        except (KeyError, IndexError, ValueError) as err:
            raise TemplateError(
                f"{path}: {key} has a placeholder we do not fill ({err}); "
                f"use {', '.join('{' + p + '}' for p in PLACEHOLDERS)} and double any other brace"
            ) from None
    try:
        template.anchor.format(score=1, text="")
        template.culture.format(culture="", language="")
    except (KeyError, IndexError, ValueError) as err:
        raise TemplateError(
            f"{path}: anchor or culture has an unknown placeholder ({err})"
        ) from None
    return template


def default_template(mode: str) -> str:
    """The paper's structure for paper mode; strict mode's JSON lives in ``fenced``."""
    return "authors" if mode == "paper" else "fenced"


def default_parse(mode: str) -> str:
    """The authors' parser for paper mode; strict mode reads its JSON."""
    return "authors" if mode == "paper" else "json"


def _transcript(context: list[tuple[str, str]]) -> str:
    # English labels for both languages, as in the authors' judge prompts
    speaker, listener = ROLE_NAMES["en"]
    return "\n".join(
        f"{speaker if role == 'speaker' else listener}: {text}" for role, text in context
    )


def build_judge_messages(
    dim: Dimension,
    mode: JudgeMode,
    lang: str,
    context: list[tuple[str, str]],
    response: str,
    template: JudgeTemplate | None = None,
) -> list[Message]:
    """System rules plus one task message for one dimension of one response.

    The instructions stay in English (judges follow them better, and the authors' did);
    the quoted dialogue and reply stay in their own language. CA is judged against the
    dialogue's culture. ``template`` defaults to the shipped ``fenced`` one.

    Raises:
        TemplateError: the template has no task for this mode.
    """
    tpl = template or load_template("fenced")
    if mode not in tpl.tasks:
        raise TemplateError(f"judge template {tpl.name!r} has no {mode} form ({tpl.source})")
    dialogue, reply = _transcript(context), response
    if tpl.fence:
        dialogue, reply = fenced("CONVERSATION", dialogue), fenced("REPLY", reply)
    culture = ""
    if dim.code == "CA":
        culture = tpl.culture.format(culture=tpl.cultures.get(lang, ""), language=LANGUAGE[lang])
    values = {
        "code": dim.code,
        "name": dim.en,
        "question": dim.question_en,
        "anchors": "\n".join(tpl.anchor.format(score=s, text=dim.anchor(s, "en")) for s in SCALE),
        "culture_note": culture,
        "language": LANGUAGE[lang],
        "dialogue": dialogue,
        "response": reply,
        "open_": FENCE_OPEN.format(name="..."),
        "close": FENCE_CLOSE.format(name="..."),
    }
    return [
        {"role": "system", "content": tpl.system.format(**values)},
        {"role": "user", "content": tpl.tasks[mode].format(**values)},
    ]


def judge_prompt_version(template: JudgeTemplate | None = None) -> str:
    """Hash of a judge template and the rubric it quotes (default: ``fenced``)."""
    return (template or load_template("fenced")).version


def parse_verdict(reply: str, mode: JudgeMode, parse: str = "lenient") -> Verdict:
    """Read the score; anything ambiguous or out of range is unscored with the reason."""
    if mode == "strict":
        return _parse_strict(reply)
    return _parse_authors(reply) if parse == "authors" else _parse_paper(reply)


AUTHORS_RESCUE = re.compile(r"\*\*? (\d+)|(\d+)\*\*?")
"""Their eval_postprocessing's second look at a verdict all five attempts failed on: a
number beside bold markers, searched in the error their parser raised."""


def _parse_authors(reply: str) -> Verdict:
    """Their parser: the stripped reply split on ``Score:`` must give two parts and the
    second, stripped, must be an integer; anything else is asked again."""
    text = reply.strip()
    parts = text.split("Score:")
    why = {1: "no 'Score:' in the reply", 2: "the text after 'Score:' is not a whole number"}
    try:
        feedback, score = parts
        value = int(score.strip())
    except ValueError as err:
        # the error itself is kept: their rescue reads the number in it (rescue_authors)
        said = why.get(len(parts), "'Score:' appears more than once")
        return Verdict(None, text, f"the authors' parser rejects it: {said} ({err})")
    rationale = re.sub(r"^\W*feedback\s*[:：]\s*", "", feedback.strip(), flags=re.IGNORECASE)
    if value not in SCALE:
        # Their parser took it and asked no more; a score off the scale is not one here.
        return Verdict(None, rationale, f"score {value} is not from 1 to 5", ask_again=False)
    return Verdict(float(value), rationale)


def rescue_authors(verdict: Verdict) -> Verdict:
    """After every attempt failed: what their post-processing made of the last error
    (a number next to ``*`` or ``**``), or the verdict unchanged."""
    if verdict.score is not None or not verdict.unscored_reason:
        return verdict
    found = AUTHORS_RESCUE.search(verdict.unscored_reason)
    if not found:
        return verdict
    value = int(found.group(1) or found.group(2))
    if value not in SCALE:
        return verdict
    return Verdict(float(value), verdict.rationale)


def _parse_paper(reply: str) -> Verdict:
    lines = list(VERDICT_LINE.finditer(reply))
    if not lines:
        return Verdict(None, reply.strip(), "no 'Score: n' line in the reply")
    last = lines[-1]
    feedback = reply[: last.start()].strip()
    feedback = re.sub(r"^\W*feedback\s*[:：]\s*", "", feedback, flags=re.IGNORECASE)
    value = float(last.group("value"))
    if not value.is_integer() or int(value) not in SCALE:
        return Verdict(None, feedback, f"score {last.group('value')} is not an integer from 1 to 5")
    return Verdict(value, feedback)


def _parse_strict(reply: str) -> Verdict:
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end <= start:
        return Verdict(None, reply.strip(), "no JSON object in the reply")
    try:
        data = json.loads(reply[start : end + 1])
    except json.JSONDecodeError as err:
        return Verdict(None, reply.strip(), f"JSON does not parse ({err.msg})")
    if not isinstance(data, dict):
        return Verdict(None, reply.strip(), "the JSON is not an object")
    rationale, score = data.get("rationale"), data.get("score")
    if not isinstance(rationale, str) or not rationale.strip():
        return Verdict(None, reply.strip(), "the JSON has no rationale")
    if isinstance(score, bool) or not isinstance(score, int | float):
        return Verdict(None, rationale, "the JSON has no numeric score")
    if not float(score).is_integer() or int(score) not in SCALE:
        return Verdict(None, rationale, f"score {score} is not an integer from 1 to 5")
    return Verdict(float(score), rationale)
