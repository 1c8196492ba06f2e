"""A live conversation on a KoED situation: the user goes on as the Speaker.

Kept as plain data (lists of strings and dicts) so it fits in a Streamlit session and
survives reruns; the functions here turn it back into the task a model answers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from koed_core.db import Store
from koed_core.dialogues.dialogue import Dialogue, Lang
from koed_core.dialogues.variants import VARIANTS, text_lang
from koed_core.errors import KoedError
from koed_core.models.client import Completion
from koed_core.models.emotions import ParsedReply
from koed_core.models.protocol import ContextTurn, ListenerTask, build_task, with_live_turns
from koed_core.models.request import RunRequest
from koed_core.models.variant_texts import read_variant

HANGUL = re.compile(r"[\uac00-\ud7a3\u3131-\u318e]")


CHAT_PROMPTS = "native"
"""The chat asks in one call with the native wording, whatever the protocol."""


def live_request(
    model: str, lang: str, protocol: str, temperature: float, max_tokens: int
) -> RunRequest:
    """What one chat pane asks, as the run request a saved answer's run is made of: its
    decoding, prompt set and steps resolve as a ``koed run`` of the same model would (the
    model's own top_p and the like from models.toml; the native profile's steps)."""
    return RunRequest(
        model=model,
        langs=(lang,),
        protocol=protocol,
        prompts=CHAT_PROMPTS,
        temperature=temperature,
        max_tokens=max_tokens,
    )


def pane_key(model: str, lang: str) -> str:
    """One column of the chat page: a model answering in one language."""
    return f"{model}|{lang}"


def detect_lang(text: str) -> Lang:
    """Korean if the text has any Hangul, else English: where a typed Speaker turn goes."""
    return "ko" if HANGUL.search(text) else "en"


def live_task(
    dialogue: Dialogue, lang: str, speaker_turns: Sequence[str], answers: Sequence[dict[str, Any]]
) -> ListenerTask:
    """The dataset context plus the live exchange so far, ending on a Speaker turn.

    ``answers[i]`` is the model's reply before ``speaker_turns[i]``; failed answers
    (``error`` set) are not part of the conversation. ``lang`` may be a translated
    variant (``ko-from-en``): ``dialogue`` is then the variant's (see
    :func:`chat_variants`), read in the language it is written in.
    """
    task = build_task(dialogue, text_lang(lang))
    if lang in VARIANTS:
        task = replace(task, variant=lang)
    replies = [a["text"] for a in answers if not a.get("error")]
    turns: list[ContextTurn] = []
    for i, speaker in enumerate(speaker_turns):
        if i < len(replies):
            turns.append(ContextTurn("listener", replies[i]))
        turns.append(ContextTurn("speaker", speaker))
    return with_live_turns(task, turns) if turns else task


def needs_answer(speaker_turns: Sequence[str], answers: Sequence[dict[str, Any]]) -> bool:
    """Whether a pane owes a reply: one per Speaker turn, plus one to the dataset context."""
    good = [a for a in answers if not a.get("error")]
    return len(good) <= len(speaker_turns)


def timeline(
    speaker_turns: Sequence[str], answers: Sequence[dict[str, Any]]
) -> list[tuple[str, Any]]:
    """The order to show a pane in: ("answer", index) and ("speaker", text) entries.

    Each successful answer is followed by the Speaker turn typed after it; failed answers
    stay where they happened; Speaker turns typed while no answer stood come last.
    """
    shown: list[tuple[str, Any]] = []
    used = 0
    for index, answer in enumerate(answers):
        shown.append(("answer", index))
        if not answer.get("error") and used < len(speaker_turns):
            shown.append(("speaker", speaker_turns[used]))
            used += 1
    shown += [("speaker", text) for text in speaker_turns[used:]]
    return shown


def to_answer(completion: Completion, parsed: ParsedReply) -> dict[str, Any]:
    """A model answer as plain data for the session."""
    return {
        "raw": completion.text,
        "text": parsed.text,
        "labels": list(parsed.labels),
        "unknown": list(parsed.unknown),
        "notes": list(parsed.notes),
        "latency_s": completion.latency_s,
    }


def from_answer(answer: dict[str, Any]) -> tuple[Completion, ParsedReply]:
    """Back from session data to what the runner stores."""
    completion = Completion(answer["raw"], answer["latency_s"])
    parsed = ParsedReply(
        tuple(answer["labels"]), answer["text"], tuple(answer["unknown"]), tuple(answer["notes"])
    )
    return completion, parsed


@dataclass(frozen=True)
class ChatVariant:
    """A translated variant a chat can be held in: the dialogue in it, and the version
    to record with a saved answer (``ko-from-en v2 <id>``, as a run records it)."""

    dialogue: Dialogue
    recorded: str


def chat_variants(store: Store, dialogue: Dialogue) -> dict[str, ChatVariant]:
    """The variants whose newest version translates ``dialogue`` (from its current
    text), by name: the languages a chat on it may be held in besides ko and en."""
    found = {}
    for variant in VARIANTS:
        try:
            read = read_variant(store, [dialogue], variant)
        except KoedError:  # never translated
            continue
        if dialogue.conv_id in read.dialogues:
            recorded = f"{read.version.label} {read.version.id}"
            found[variant] = ChatVariant(read.dialogues[dialogue.conv_id], recorded)
    return found
