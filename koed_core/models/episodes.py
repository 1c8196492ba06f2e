"""Multi-turn episodes: the model under test listens, a simulated Speaker carries the KoED
situation on, turn by turn; stored as it goes, resumable at the turn where it stopped.

An episode starts from the context the single-turn protocol gives (the dataset's own
turns, ending on a Speaker turn). Then, up to ``turns`` times: the Listener answers the
episode so far (the run's prompt set, protocol, decoding and pipeline steps, exactly as
a single reply), and the Speaker (another model, or the same) answers it, told the
situation and the emotion it felt. The Listener is never told either.

Episodes run concurrently; the turns of one episode run in order in one worker thread,
each stored the moment it arrives (the store serialises writes), so a killed run loses
at most the turn in flight of each episode, and running it again rebuilds every episode
from what is stored and asks only what is missing. A Speaker turn that breaks character
is stored flagged and asked once more; when the second attempt breaks too, the episode
ends there, its flagged turns kept for people to see and no Listener turn after them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Literal

from koed_core.db import ResponseRecord, RunConfig, Store
from koed_core.db.episodes import Episodes, SpeakerRecord
from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.variants import text_lang
from koed_core.errors import KoedError
from koed_core.models.client import (
    ChatClient,
    GenerationSettings,
    ModelError,
    capped,
)
from koed_core.models.oracle import OracleListener, oracle_version
from koed_core.models.passes import (
    NO_HOOKS,
    Outcome,
    PassHooks,
    PassReport,
    patiently,
    run_pass,
    workers_for,
)
from koed_core.models.pipeline import Steps
from koed_core.models.prompts import PromptSet
from koed_core.models.protocol import ContextTurn, ListenerTask, Protocol, build_task
from koed_core.models.registry import ModelSpec
from koed_core.models.request import MAX_TURNS, EpisodeRequest
from koed_core.models.runs import Answer, Item, answer, open_run, request_config, save
from koed_core.models.speaker import SpeakerPrompt, check_turn, load_speaker_prompt
from koed_core.models.variant_texts import cells_asked, is_variant

SPEAKER_ATTEMPTS = 2
"""A Speaker turn that breaks character is asked once more, then the episode ends."""
Status = Literal["complete", "ended", "broke", "failed", "open"]


class EpisodeError(KoedError, ValueError):
    """Episodes that cannot be run as asked (turns out of range, a direct run...)."""


@dataclass(frozen=True)
class Episode:
    """One dialogue in one language, to be carried on for up to ``turns`` Listener turns.
    In a translated variant ``dialogue`` is the variant's (its turns and situation in the
    language it is written in) and the episode is stored under the variant's name."""

    dialogue: Dialogue
    base: ListenerTask
    """The dataset's context the episode starts from (ends on a Speaker turn)."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.dialogue.conv_id, self.base.cell)


@dataclass
class EpisodeState:
    """An episode as stored: the turns so far, and what comes next."""

    history: list[ContextTurn] = field(default_factory=list)
    """The simulated exchange after the dataset's context (Listener, Speaker, ...)."""
    listener_turns: int = 0
    speaker_attempts: dict[int, int] = field(default_factory=dict)
    """Turn -> Speaker attempts that broke character (or failed) so far."""
    status: Status = "open"


def read_states(store: Store, run_id: str, turns: int) -> dict[tuple[str, str], EpisodeState]:
    """Every stored episode of a run, rebuilt turn by turn from its rows."""
    episodes = Episodes(store)
    listeners: dict[tuple[str, str], dict[int, dict[str, object]]] = {}
    for row in episodes.listener_rows(run_id):
        listeners.setdefault((row["conv_id"], row["lang"]), {})[int(row["turn"])] = row
    speakers: dict[tuple[str, str], dict[int, list[dict[str, object]]]] = {}
    for row in episodes.speaker_rows(run_id):
        speakers.setdefault((row["conv_id"], row["lang"]), {}).setdefault(
            int(row["turn"]), []
        ).append(row)
    states = {}
    for key in set(listeners) | set(speakers):
        states[key] = _rebuild(listeners.get(key, {}), speakers.get(key, {}), turns)
    return states


def _rebuild(
    listeners: dict[int, dict[str, object]],
    speakers: dict[int, list[dict[str, object]]],
    turns: int,
) -> EpisodeState:
    state = EpisodeState()
    for turn in range(1, turns + 1):
        row = listeners.get(turn)
        if row is None or row["error"] is not None:
            state.status = "failed" if row is not None else "open"
            return state
        state.history.append(ContextTurn("listener", str(row["text"] or "")))
        state.listener_turns = turn
        if turn == turns:
            state.status = "complete"
            return state
        attempts = speakers.get(turn, [])
        kept = [a for a in attempts if a["kept"]]
        if not kept:
            broken = [a for a in attempts if a["error"] is None]
            state.speaker_attempts[turn] = len(broken)
            if len(broken) >= SPEAKER_ATTEMPTS:
                state.status = "broke"
            elif attempts and attempts[-1]["error"] is not None:
                state.status = "failed"
            return state
        if kept[0]["text"]:
            state.history.append(ContextTurn("speaker", str(kept[0]["text"])))
        if kept[0]["ends"]:
            state.status = "ended"
            return state
    return state


FINISHED: tuple[Status, ...] = ("complete", "ended", "broke")


@dataclass(frozen=True)
class EpisodeSetup:
    """Everything the turns of every episode of one run share."""

    store: Store
    run_id: str
    listener: ChatClient
    speaker: ChatClient
    protocol: Protocol
    prompts: PromptSet
    steps: Steps
    settings: GenerationSettings
    speaker_settings: GenerationSettings
    speaker_prompt: SpeakerPrompt
    turns: int
    stop: Callable[[], bool] | None = None


def play(setup: EpisodeSetup, episode: Episode, state: EpisodeState) -> Outcome:
    """Carry one episode on from its stored state to its end (or a failure, or a stop),
    storing every turn as it comes."""
    conv_id, lang, variant = episode.dialogue.conv_id, episode.base.lang, episode.base.variant
    history = list(state.history)
    turn = state.listener_turns
    # where the stored episode stopped: after a Listener turn the Speaker is next
    next_is_speaker = bool(history) and history[-1].role == "listener"
    while True:
        if setup.stop is not None and setup.stop():
            return Outcome("cancelled")
        if not next_is_speaker:
            if turn >= setup.turns:
                return Outcome("ok")
            turn += 1
            task = ListenerTask(conv_id, lang, episode.base.turns, None, tuple(history), variant)
            item = Item(episode.dialogue, task, setup.protocol, setup.prompts, setup.steps)
            result = answer(setup.listener, item, setup.settings)
            if isinstance(result[0], ModelError) and result[0].kind == "cancelled":
                return Outcome("cancelled")
            record = patiently(partial(_save_listener, setup, item, turn, result))
            if record is None:
                return Outcome("ok")  # another job playing this run got here first
            if record.error:
                return Outcome("failed", record.error_kind, record.error)
            history.append(ContextTurn("listener", record.text or ""))
            if turn >= setup.turns:
                return Outcome("ok")
            next_is_speaker = True
            continue
        said = _speak(setup, episode, history, turn, state.speaker_attempts.get(turn, 0))
        if isinstance(said, Outcome):
            return said
        if said.text:
            history.append(ContextTurn("speaker", said.text))
        if said.ends:
            return Outcome("ok")
        next_is_speaker = False


def _save_listener(
    setup: EpisodeSetup, item: Item, turn: int, result: Answer
) -> ResponseRecord | None:
    """Store a Listener turn in one transaction, unless another job playing the same run
    stored this turn first (then None: the first one stored is the episode's)."""
    conv_id, lang = item.dialogue.conv_id, item.task.cell
    with setup.store.write():
        if Episodes(setup.store).turn_taken(setup.run_id, conv_id, lang, turn, "listener"):
            return None
        told = getattr(setup.listener, "told", None)  # the oracle's note is stored as sent
        sent = told(item.messages, item.task) if callable(told) else None
        return save(setup.store, setup.run_id, item, result, True, turn, sent)


def _speak(
    setup: EpisodeSetup,
    episode: Episode,
    history: Sequence[ContextTurn],
    turn: int,
    broken_before: int,
) -> SpeakerRecord | Outcome:
    """The Speaker's turn after Listener turn ``turn``: asked until an attempt keeps in
    character (at most SPEAKER_ATTEMPTS broken ones), each attempt stored."""
    conv_id, lang = episode.dialogue.conv_id, episode.base.lang
    messages = setup.speaker_prompt.messages(
        episode.dialogue, lang, (*episode.base.turns, *history)
    )
    attempt = broken_before
    while attempt < SPEAKER_ATTEMPTS:
        attempt += 1
        base = SpeakerRecord(
            setup.run_id,
            conv_id,
            episode.base.cell,  # stored under the variant's name, asked in its language
            turn,
            attempt,
            raw=None,
            text=None,
            prompt=tuple({"role": m["role"], "content": m["content"]} for m in messages),
        )
        try:
            done = capped(setup.speaker.complete(messages, setup.speaker_settings, episode.base))
        except ModelError as err:
            if err.kind == "cancelled":
                return Outcome("cancelled")
            failed = replace(base, error=str(err), error_kind=err.kind)
            if patiently(partial(Episodes(setup.store).save_speaker, failed)) is None:
                return Outcome("ok")  # another job's Speaker turn is the episode's
            return Outcome("failed", f"speaker {err.kind}", str(err))
        read = check_turn(done.text, lang, episode.dialogue.labels, setup.speaker_prompt)
        record = replace(
            base,
            raw=done.text,
            text=read.text,
            breaks=read.breaks,
            kept=not read.breaks,
            ends=read.ends,
            latency_s=done.latency_s,
        )
        stored = patiently(partial(Episodes(setup.store).save_speaker, record))
        if stored is None:
            return Outcome("ok")  # another job's Speaker turn is the episode's
        if stored.kept:
            return stored
    return Outcome("ok")  # broke character twice: the episode ends here, flagged


def plan_episodes(
    dialogues: Sequence[Dialogue],
    langs: Sequence[str],
    limit: int | None,
    commas: str,
    variants: Mapping[str, Mapping[str, Dialogue]] | None = None,
) -> list[Episode]:
    """Episodes in dataset order, each language; a dialogue with no Speaker turn in a
    language has no episode in it. A translated variant in ``langs`` plays each
    dialogue's translation from ``variants`` (variant -> conv_id -> the variant
    dialogue); a dialogue not translated has no episode in it."""
    episodes = []
    for lang, source in cells_asked(dialogues, langs, limit, variants):
        written = text_lang(lang)
        base = build_task(source, written, commas)
        variant = lang if is_variant(lang) else None
        if base.turns:
            task = ListenerTask(base.conv_id, written, base.turns, variant=variant)
            episodes.append(Episode(source, task))
    return episodes


def episode_config(
    spec: ModelSpec, speaker: ModelSpec, request: EpisodeRequest, dataset_sha256: str
) -> RunConfig:
    """An episode run's identity: the Listener's run configuration, plus the Speaker's
    model, wording and temperature, the number of turns and whether the Listener was
    told the situation (an oracle run)."""
    speaker_settings = request.speaker_settings(speaker)
    base = request_config(request, spec, dataset_sha256, "episodes")
    return replace(
        base,
        turns=request.turns,
        speaker=speaker.name,
        speaker_model_id=speaker.model,
        speaker_prompt_version=load_speaker_prompt(request.speaker_prompts or "speaker").version,
        speaker_temperature=speaker_settings.temperature,
        speaker_max_tokens=speaker_settings.max_tokens,
        oracle=oracle_version() if request.oracle else None,
    )


def run_episodes(
    store: Store,
    listener: tuple[ModelSpec, ChatClient],
    speaker: tuple[ModelSpec, ChatClient],
    dialogues: Sequence[Dialogue],
    dataset_sha256: str,
    request: EpisodeRequest,
    *,
    hooks: PassHooks = NO_HOOKS,
) -> PassReport:
    """Play every planned episode not finished yet; the report counts episodes.

    ``dialogues`` are the ones chosen (``request.dialogues``); the request resolves the
    Listener's prompt set, steps and decoding and the Speaker's. ``request.oracle``: the
    Listener is told each dialogue's situation and emotion (the upper reference per
    dialogue), a run of its own.

    Raises:
        EpisodeError: turns out of range, or a model that only replays (human).
    """
    (spec, listening), (speaker_spec, speaking) = listener, speaker
    if not 1 <= request.turns <= MAX_TURNS:
        raise EpisodeError(f"turns must be between 1 and {MAX_TURNS}, not {request.turns}")
    for role, who in (("listener", spec), ("speaker", speaker_spec)):
        if who.backend == "human":
            raise EpisodeError(
                f"the {role} {who.name!r} only replays the dataset's own turns; an episode "
                "needs a model that answers"
            )
    steps = request.steps(spec)
    config = episode_config(spec, speaker_spec, request, dataset_sha256)
    run_id, translated = open_run(store, config, spec, dialogues, request.langs)
    if request.oracle:
        by_id = {d.conv_id: d for d in dialogues}
        listening = OracleListener(listening, by_id, translated.dialogues)
    langs = list(request.langs)
    stop = hooks.stop
    episodes = plan_episodes(dialogues, langs, request.limit, steps.commas, translated.dialogues)
    states = read_states(store, run_id, request.turns)
    done = {key for key, state in states.items() if state.status in FINISHED}
    setup = EpisodeSetup(
        store,
        run_id,
        listening,
        speaking,
        request.protocol,  # type: ignore[arg-type]
        request.prompt_set(),
        steps,
        replace(request.settings(spec), stop=stop),  # requests in flight given up on cancel
        replace(request.speaker_settings(speaker_spec), stop=stop),
        load_speaker_prompt(request.speaker_prompts or "speaker"),
        request.turns,
        stop,
    )
    workers = min(
        workers_for(listening, request.concurrency), workers_for(speaking, request.concurrency)
    )
    return run_pass(
        episodes,
        done=lambda episode: episode.key in done,
        work=lambda episode: play(setup, episode, states.get(episode.key, EpisodeState())),
        save=lambda _episode, outcome: outcome,
        workers=workers,
        hooks=hooks,
        run_id=run_id,
    )
