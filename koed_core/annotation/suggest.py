"""Candidate cultural signals from a model: suggestions a person accepts or ignores.

The model is asked for Korean words that carry culture and the English they replace;
each candidate is then found in the dialogue itself (code points, exactly as written).
A candidate the dialogue does not contain, or of a type the taxonomy lacks, is dropped
and counted, never guessed at. Nothing here writes to the database.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from koed_core.annotation.spans import SITUATION, Span, find, side_at, turn_text
from koed_core.annotation.taxonomy import AnnotationError, Taxonomy
from koed_core.dialogues.dialogue import Dialogue
from koed_core.models.client import ChatClient, GenerationSettings
from koed_core.models.protocol import Message
from koed_core.paths import DATA_DIR
from koed_core.tomlfile import read_toml

PROMPT_FILE = DATA_DIR / "prompts" / "signals.toml"
MAX_SUGGESTIONS = 8
SETTINGS = GenerationSettings(temperature=0.0, max_tokens=400)


@dataclass(frozen=True)
class Suggestions:
    """What a model proposed: the spans found in the dialogue, and how many were not."""

    spans: tuple[Span, ...]
    dropped: int
    raw: str


def messages(dialogue: Dialogue, taxonomy: Taxonomy) -> list[Message]:
    """The prompt for one dialogue (ours, data/prompts/signals.toml)."""
    prompt = read_toml(PROMPT_FILE, "prompt file", ["signals.toml"], AnnotationError)
    types = "\n".join(f"{t.code}: {t.en}" for t in taxonomy.types)
    lines = [f"{SITUATION}: {dialogue.situation_ko} || {dialogue.situation_en}"]
    lines += [f"{t.position}: {t.ko} || {t.en}" for t in dialogue.turns]
    return [
        {"role": "system", "content": str(prompt["system"])},
        {
            "role": "user",
            "content": str(prompt["user"]).format(types=types, dialogue="\n".join(lines)),
        },
    ]


def _items(reply: str) -> list[Any]:
    """The JSON list in a reply (fenced or not); [] when there is none."""
    match = re.search(r"\[.*\]", reply, re.DOTALL)
    if not match:
        return []
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError:
        return []
    return value if isinstance(value, list) else []


def parse(reply: str, dialogue: Dialogue, taxonomy: Taxonomy, model: str) -> Suggestions:
    """The candidates of a reply that the dialogue really contains, as spans."""
    found: list[Span] = []
    dropped = 0
    origin = f"suggestion:{model}"
    for item in _items(reply)[: MAX_SUGGESTIONS * 2]:
        try:
            position, ko, kind = int(item["turn"]), str(item["ko"]), str(item["type"])
            if taxonomy.get(kind) is None:
                raise AnnotationError(kind)
            start, end = find(turn_text(dialogue, "ko", position), ko)
            en_text = item.get("en")
            en = None
            if isinstance(en_text, str) and en_text.strip():
                es, ee = find(turn_text(dialogue, "en", position), en_text.strip())
                en = side_at(dialogue, "en", position, es, ee)
            span = Span(side_at(dialogue, "ko", position, start, end), kind, en, en is None, origin)
        except (AnnotationError, KeyError, TypeError, ValueError):
            dropped += 1
            continue
        if span.key not in {s.key for s in found} and len(found) < MAX_SUGGESTIONS:
            found.append(span)
    return Suggestions(tuple(found), dropped, reply)


def suggest(client: ChatClient, dialogue: Dialogue, taxonomy: Taxonomy, model: str) -> Suggestions:
    """Ask the model and keep what the dialogue contains.

    Raises:
        ModelError: the call failed (after the client's retries).
    """
    reply = client.complete(messages(dialogue, taxonomy), SETTINGS, None)
    return parse(reply.text, dialogue, taxonomy, model)
