"""The oracle Listener of an episode: told the situation and the emotion it is never told
in a run under test, it gives the upper reference per dialogue (how well could this model
do, knowing what it was meant to find out?)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from koed_core.dialogues.dialogue import Dialogue
from koed_core.models.client import ChatClient, Completion, GenerationSettings
from koed_core.models.protocol import Message
from koed_core.models.speaker import emotion_words
from koed_core.paths import DATA_DIR
from koed_core.tomlfile import content_version, read_toml

ORACLE_FILE = DATA_DIR / "prompts" / "oracle.toml"


@cache
def _note() -> Mapping[str, Any]:
    return read_toml(ORACLE_FILE, "oracle note", (), ValueError)


def oracle_version() -> str:
    """A hash of the note's wording: stored with an oracle run (part of its id)."""
    return content_version(_note())


def oracle_note(dialogue: Dialogue, lang: str) -> str:
    """What the oracle Listener is told about one dialogue, in its language."""
    return str(_note()["note"]["ko" if lang == "ko" else "en"]).format(
        situation=dialogue.situation(lang),  # type: ignore[arg-type]
        emotions=emotion_words(dialogue.labels, lang),
    )


class OracleListener:
    """A Listener client told the situation and the emotion of each dialogue: every
    request gets the note as its first message (a system message). Wraps any client.
    ``variants`` (variant -> conv_id -> dialogue): a task in a translated variant is told
    the variant's own situation, in the language it is written in."""

    def __init__(
        self,
        inner: ChatClient,
        dialogues: Mapping[str, Dialogue],
        variants: Mapping[str, Mapping[str, Dialogue]] | None = None,
    ) -> None:
        self.inner = inner
        self.dialogues = dialogues
        self.variants = variants or {}
        self.name = getattr(inner, "name", "oracle")
        self.max_concurrency = getattr(inner, "max_concurrency", 1)

    def told(self, messages: Sequence[Message], task: object) -> list[Message]:
        """The request as sent: the note first (unchanged for a dialogue it does not know)."""
        variant = getattr(task, "variant", None)
        known = self.variants.get(variant, {}) if variant else self.dialogues
        dialogue = known.get(str(getattr(task, "conv_id", "")))
        if dialogue is None:
            return list(messages)
        note = oracle_note(dialogue, str(getattr(task, "lang", "en")))
        return [{"role": "system", "content": note}, *messages]

    def complete(
        self, messages: Sequence[Message], settings: GenerationSettings, task: Any
    ) -> Completion:
        """The inner client's answer to the request with the note first."""
        return self.inner.complete(self.told(messages, task), settings, task)

    def stream(self, messages: Sequence[Message], settings: GenerationSettings, task: Any) -> Any:
        """Streaming, with the note first."""
        return self.inner.stream(self.told(messages, task), settings, task)

    def close(self) -> None:
        """Close the inner client, if it holds anything."""
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer()
