"""Episodes judged whole, and the simulated Speaker checked turn by turn.

A per-turn judgment reads one Listener reply after the episode so far; a researcher also
needs the episode as one outcome. ``judge_whole_episodes`` asks the judge about the whole
conversation, once per rubric dimension and once for "came to understand" (UND, read
against the situation and emotion the Listener was never told). ``check_speakers`` asks,
for every Speaker turn an episode kept, whether it stayed in the situation (SIT), kept the
feeling unnamed (HID) and sounded native (NAT): a gap over turns can then be read against
how well the Speaker played each language's side.

Both are stored in ``judgments`` under configurations of their own (mode ``episode`` and
``speaker``, template ``episode``), so they never mix with single-reply verdicts and the
rubric version of those is unchanged. A whole-episode verdict hangs on the episode's last
Listener turn; a Speaker verdict on its ``episode_turns`` row. Resumable, like any judging.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from koed_core.db import JudgeConfig, Judgments, Runs, Store, now, short_hash
from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.variants import text_lang
from koed_core.judge.request import JudgeRequest
from koed_core.judge.rubric import SCALE, codes, dimensions, rubric_version
from koed_core.judge.verdicts import FENCE_CLOSE, FENCE_OPEN, LANGUAGE, fenced
from koed_core.models.client import ChatClient, GenerationSettings, ModelError, capped
from koed_core.models.passes import NO_HOOKS, Outcome, PassHooks, PassReport, run_pass, workers_for
from koed_core.models.protocol import Message
from koed_core.models.registry import ModelSpec
from koed_core.models.speaker import emotion_words
from koed_core.models.variant_texts import recorded_dialogues
from koed_core.paths import DATA_DIR
from koed_core.tomlfile import content_version, read_toml

EPISODE_FILE = DATA_DIR / "judge" / "episode.toml"
WHOLE = "episode"
"""The mode of a whole-episode verdict."""
SPEAKER = "speaker"
"""The mode of a Speaker-turn check."""
UNDERSTOOD = "UND"
SPEAKER_CHECKS = ("SIT", "HID", "NAT")
SPEAKER_NAMES = {
    "SIT": "stays in the situation",
    "HID": "keeps the feeling unnamed",
    "NAT": "sounds native",
}
MAX_TOKENS = 400


def whole_dimensions() -> tuple[str, ...]:
    """What a whole episode is scored on: the five rubric dimensions, then UND."""
    return (*codes(), UNDERSTOOD)


@cache
def _template() -> Mapping[str, Any]:
    return read_toml(EPISODE_FILE, "episode judge template", (), ValueError)


def template_version() -> str:
    """A hash of the wording and the rubric it quotes: part of both configurations."""
    return content_version([_template(), rubric_version()])


def whole_config(judge: str, replicate: int = 0) -> JudgeConfig:
    """The configuration whole-episode verdicts are stored under."""
    return JudgeConfig(
        judge, WHOLE, template_version(), rubric_version(), "episode", "json", replicate
    )


def speaker_config(judge: str) -> JudgeConfig:
    """The configuration Speaker checks are stored under."""
    return JudgeConfig(judge, SPEAKER, template_version(), rubric_version(), "episode", "json")


@dataclass(frozen=True)
class EpisodeText:
    """One episode as the judge reads it."""

    key: str
    """The row the verdict hangs on: the last Listener turn, or the Speaker turn."""
    conv_id: str
    lang: str
    lines: tuple[tuple[str, str], ...]
    """(role, text) in order: the dataset's turns, then the episode's kept turns."""


def _conversation(lines: Sequence[tuple[str, str]], last: int | None = None) -> str:
    said = []
    for n, (role, text) in enumerate(lines):
        name = "Speaker" if role == "speaker" else "Listener"
        said.append(f"{name}{' (LAST)' if n == last else ''}: {text}")
    return fenced("CONVERSATION", "\n".join(said))


def episodes_of(store: Store, run_id: str) -> list[EpisodeText]:
    """Every episode of a run that has a Listener turn, with its kept turns in order."""
    from koed_core.db.episodes import Episodes

    stored = Episodes(store)
    out = []
    last_of: dict[tuple[str, str], str] = {}
    for row in stored.listener_rows(run_id):
        if row["error"] is None:
            last_of[(row["conv_id"], row["lang"])] = row["id"]
    for (conv_id, lang), response_id in sorted(last_of.items()):
        entries = stored.transcript(run_id, conv_id, lang)
        lines = tuple((e["role"], e["text"]) for e in entries if e["kept"] and not e.get("error"))
        out.append(EpisodeText(response_id, conv_id, lang, lines))
    return out


def speaker_turns_of(store: Store, run_id: str) -> list[EpisodeText]:
    """Every Speaker turn an episode kept, with the conversation up to and including it."""
    from koed_core.db.episodes import Episodes

    rows = Episodes(store).kept_speaker_turns(run_id)
    whole = {(e.conv_id, e.lang): e for e in episodes_of(store, run_id)}
    out = []
    for row in rows:
        episode = whole.get((row["conv_id"], row["lang"]))
        if episode is None:
            continue
        # the n-th kept Speaker turn after the dataset's own turns is the n-th "speaker"
        # line of the episode part; the dataset's turns are the same in every episode
        seen, cut = 0, None
        start = Episodes(store).opening_turns(run_id, row["conv_id"], row["lang"])
        for n, (role, _text) in enumerate(episode.lines[start:], start=start):
            if role == "speaker":
                seen += 1
                if seen == int(row["turn"]):
                    cut = n
                    break
        if cut is not None:
            lines = episode.lines[: cut + 1]
            out.append(EpisodeText(row["id"], row["conv_id"], row["lang"], lines))
    return out


def whole_messages(episode: EpisodeText, dimension: str, dialogue: Dialogue) -> list[Message]:
    """The request for one dimension of one whole episode."""
    tpl = _template()
    lang = text_lang(episode.lang)  # a variant is judged in the language it is written in
    values: dict[str, str] = {
        "language": LANGUAGE[lang],
        "dialogue": _conversation(episode.lines),
        "situation": dialogue.situation(lang),
        "emotions": emotion_words(dialogue.labels, lang),
        "open_": FENCE_OPEN.format(name="..."),
        "close": FENCE_CLOSE.format(name="..."),
        "culture_note": "",
    }
    if dimension == UNDERSTOOD:
        task = str(tpl["understood"]).strip().format(**values)
    else:
        dim = next(d for d in dimensions() if d.code == dimension)
        if dim.code == "CA":
            culture = str(tpl["cultures"][lang])
            values["culture_note"] = str(tpl["culture"]).format(culture=culture)
        anchors = "\n".join(
            str(tpl["anchor"]).format(score=s, text=dim.anchor(s, "en")) for s in SCALE
        )
        task = (
            str(tpl["whole"])
            .strip()
            .format(code=dim.code, name=dim.en, question=dim.question_en, anchors=anchors, **values)
        )
    system = str(tpl["system"]).strip().format(**values)
    return [{"role": "system", "content": system}, {"role": "user", "content": task}]


def speaker_messages(turn: EpisodeText, dialogue: Dialogue) -> list[Message]:
    """The request checking one Speaker turn (the last line of ``turn``)."""
    tpl = _template()
    lang = text_lang(turn.lang)
    values = {
        "language": LANGUAGE[lang],
        "dialogue": _conversation(turn.lines, last=len(turn.lines) - 1),
        "situation": dialogue.situation(lang),
        "emotions": emotion_words(dialogue.labels, lang),
        "open_": FENCE_OPEN.format(name="..."),
        "close": FENCE_CLOSE.format(name="..."),
    }
    return [
        {"role": "system", "content": str(tpl["system"]).strip().format(**values)},
        {"role": "user", "content": str(tpl["speaker"]).strip().format(**values)},
    ]


def read_scores(reply: str, names: Sequence[str]) -> tuple[dict[str, float | None], str, str]:
    """The scores a JSON verdict gives for ``names``, its rationale, and why any is
    missing ('' when all are there). A score off the 1-5 scale is no score."""
    start, end = reply.find("{"), reply.rfind("}")
    empty: dict[str, float | None] = dict.fromkeys(names)
    if start < 0 or end <= start:
        return empty, reply.strip(), "no JSON object in the reply"
    try:
        data = json.loads(reply[start : end + 1])
    except json.JSONDecodeError as err:
        return empty, reply.strip(), f"JSON does not parse ({err.msg})"
    if not isinstance(data, dict):
        return empty, reply.strip(), "the JSON is not an object"
    rationale = str(data.get("rationale") or "").strip()
    scores: dict[str, float | None] = {}
    missing = []
    for name in names:
        value = data.get(name)
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and float(value).is_integer()
            and int(value) in SCALE
        ):
            scores[name] = float(value)
        else:
            scores[name] = None
            missing.append(name)
    why = f"no score from 1 to 5 for {', '.join(missing)}" if missing else ""
    return scores, rationale, why


@dataclass(frozen=True)
class Call:
    """One judge call: the row its verdicts hang on, the request, and which field of the
    JSON verdict is stored as which dimension."""

    response_id: str
    messages: list[Message]
    read: Mapping[str, str]
    """dimension stored -> field of the verdict it is read from."""

    @property
    def key(self) -> str:
        """Unique per call (a whole episode has one call per dimension)."""
        return self.response_id + "\x00" + ",".join(self.read)


def _rows(
    call: Call, config: JudgeConfig, judge: ModelSpec, reply: str | ModelError
) -> list[dict[str, object]]:
    failed = isinstance(reply, ModelError)
    fields = list(dict.fromkeys(call.read.values()))
    scores, rationale, why = ({}, "", "") if failed else read_scores(str(reply), fields)
    rows: list[dict[str, object]] = []
    for name, field in call.read.items():
        score = scores.get(field)
        parts: list[object] = [call.response_id, name, config.model, config.mode]
        parts += [config.prompt_version, *([config.replicate] if config.replicate else [])]
        rows.append(
            {
                "id": short_hash(*parts),
                "attempt": 0,
                "response_id": call.response_id,
                "judge_model": judge.name,
                "judge_backend": judge.backend,
                "mode": config.mode,
                "prompt_version": config.prompt_version,
                "rubric_version": config.rubric_version,
                "template": config.template,
                "parse": config.parse,
                "replicate": config.replicate,
                "temperature": config.temperature,
                "dimension": name,
                "sample": 0,
                "score": score,
                "unscored_reason": None if failed or score is not None else why,
                "rationale": rationale or None,
                "raw_prompt": json.dumps(call.messages, ensure_ascii=False),
                "raw_reply": None if failed else reply,
                "error": str(reply) if failed else None,
                "created": now(),
            }
        )
    return rows


def _judge(
    store: Store,
    client: ChatClient,
    judge: ModelSpec,
    config: JudgeConfig,
    calls: Sequence[Call],
    concurrency: int,
    hooks: PassHooks,
) -> PassReport:
    """Every call not answered yet under ``config``; each answer stored as it comes (a
    failed call is stored with its error and asked again next time)."""
    judgments = Judgments(store)
    settings = GenerationSettings(
        temperature=config.temperature, max_tokens=MAX_TOKENS, stop=hooks.stop
    )
    answered = judgments.answered_pairs(config)
    done = {c.key for c in calls if all((c.response_id, n) in answered for n in c.read)}

    def ask(call: Call) -> str | ModelError:
        try:
            return capped(client.complete(call.messages, settings, None)).text
        except ModelError as err:
            return err

    def save(call: Call, reply: str | ModelError) -> Outcome:
        if isinstance(reply, ModelError) and reply.kind == "cancelled":
            return Outcome("cancelled")
        rows = _rows(call, config, judge, reply)
        judgments.save_all(rows)
        if isinstance(reply, ModelError):
            return Outcome("failed", reply.kind, str(reply))
        if any(r["score"] is None for r in rows):
            return Outcome("unscored", str(rows[0]["unscored_reason"] or "no score"))
        return Outcome("ok")

    return run_pass(
        list(calls),
        done=lambda call: call.key in done,
        work=ask,
        save=save,
        workers=workers_for(client, concurrency),
        hooks=hooks,
    )


def judge_whole_episodes(
    store: Store,
    client: ChatClient,
    judge: ModelSpec,
    request: JudgeRequest,
    dialogues: Mapping[str, Dialogue],
    *,
    hooks: PassHooks = NO_HOOKS,
) -> PassReport:
    """Score every episode of the request's run whole: the five dimensions and UND, one
    call each, stored under :func:`whole_config` (its replicate the request's)."""
    run_id = request.run_id
    config = whole_config(judge.name, request.replicate)
    shown = _as_played(store, run_id, dialogues)
    calls = [
        Call(
            episode.key,
            whole_messages(episode, dimension, shown[(episode.conv_id, episode.lang)]),
            {dimension: "score"},
        )
        for episode in episodes_of(store, run_id)
        if (episode.conv_id, episode.lang) in shown
        for dimension in whole_dimensions()
    ]
    return _judge(store, client, judge, config, calls, request.concurrency, hooks)


def check_speakers(
    store: Store,
    client: ChatClient,
    judge: ModelSpec,
    request: JudgeRequest,
    dialogues: Mapping[str, Dialogue],
    *,
    hooks: PassHooks = NO_HOOKS,
) -> PassReport:
    """Check every Speaker turn the request's run's episodes kept (SIT, HID, NAT in one
    call), stored under :func:`speaker_config`."""
    run_id = request.run_id
    config = speaker_config(judge.name)
    shown = _as_played(store, run_id, dialogues)
    calls = [
        Call(
            turn.key,
            speaker_messages(turn, shown[(turn.conv_id, turn.lang)]),
            {name: name for name in SPEAKER_CHECKS},
        )
        for turn in speaker_turns_of(store, run_id)
        if (turn.conv_id, turn.lang) in shown
    ]
    return _judge(store, client, judge, config, calls, request.concurrency, hooks)


def _as_played(
    store: Store, run_id: str, dialogues: Mapping[str, Dialogue]
) -> dict[tuple[str, str], Dialogue]:
    """(conv_id, language or variant) -> the dialogue an episode of the run was played
    on: the file's in ko and en, and in a translated variant the version the run
    recorded (its situation is what the judge is told)."""
    found = Runs(store).run_config(run_id)
    recorded = found[0].get("variants") if found else None
    shown = {(c, lang): d for c, d in dialogues.items() for lang in ("ko", "en")}
    for variant, translated in recorded_dialogues(store, dialogues, recorded).items():
        shown |= {(c, variant): d for c, d in translated.items()}
    return shown
