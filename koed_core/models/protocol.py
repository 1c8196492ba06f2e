"""The paper's listener protocol: context, prompts and the human reference turn.

The model plays the Listener. It sees the dialogue's turns in the target language,
labelled Speaker and Listener alternately (turns with no text in that language are
skipped), cut so the context ends on a Speaker turn. It never sees the gold labels or
the situation. Three protocols: ``single`` (name one of the 34 labels, then answer),
``multi`` (name every label that applies, at most four, then answer) and ``direct``
(answer only). The prompt text is ours; its hash is stored with every response.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from koed_core.dialogues.dialogue import Dialogue, Lang
from koed_core.i18n import N_, stored_word

Protocol = Literal["single", "multi", "direct"]
PROTOCOLS: tuple[Protocol, ...] = ("single", "multi", "direct")
PROTOCOL_WORDS = {
    "single": N_("single label"),
    "multi": N_("several labels"),
    "direct": N_("reply only"),
}
"""What each protocol asks, in words a Korean page shows instead of the stored name."""
ROLE_NAMES = {"en": ("Speaker", "Listener"), "ko": ("화자", "청자")}
MAX_MULTI_LABELS = 4


def protocol_name(protocol: str) -> str:
    """A protocol as a chart, a label or a picker shows it: ``single`` on an English page
    (the name ``koed run --protocol`` takes), its words on a Korean one."""
    return stored_word(protocol, PROTOCOL_WORDS)


class Message(TypedDict):
    """One chat message in the OpenAI shape every backend accepts."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ContextTurn:
    """A turn of the transcript the Listener sees."""

    role: Literal["speaker", "listener"]
    text: str


@dataclass(frozen=True)
class ListenerTask:
    """Everything one request needs: the transcript, and the human's own next turn."""

    conv_id: str
    lang: Lang
    turns: tuple[ContextTurn, ...]
    reference: str | None = None
    """The dataset's Listener turn that followed the context (the human reference)."""
    extra: tuple[ContextTurn, ...] = field(default=())
    """Turns added live in the chat page after the dataset's context."""
    variant: str | None = None
    """A translated variant (``en-from-ko``, ``ko-from-en``) whose text this is; ``lang``
    is then the language it is written in, and prompts follow ``lang``."""

    @property
    def cell(self) -> str:
        """The language as a response stores it: the variant's name, else ``lang``."""
        return self.variant or self.lang

    @property
    def transcript(self) -> tuple[ContextTurn, ...]:
        """Dataset context followed by any live turns."""
        return self.turns + self.extra


def build_task(dialogue: Dialogue, lang: Lang, commas: str = "decoded") -> ListenerTask:
    """The context the paper's protocol gives the Listener, and the reference reply.

    Turns with no text in ``lang`` are skipped and the rest alternate Speaker/Listener;
    the context is cut after the last Speaker turn that has a Listener turn after it, or
    after the final Speaker turn when the dialogue ends on one. ``commas="raw"`` keeps the
    file's ``_comma_`` in English text, as the authors sent it.
    """
    texts = [t.text(lang, commas) for t in dialogue.turns if t.text(lang)]
    roles: list[Literal["speaker", "listener"]] = [
        "speaker" if i % 2 == 0 else "listener" for i in range(len(texts))
    ]
    turns = [ContextTurn(role, text) for role, text in zip(roles, texts, strict=True)]
    if not turns:
        return ListenerTask(dialogue.conv_id, lang, ())
    if turns[-1].role == "speaker":
        return ListenerTask(dialogue.conv_id, lang, tuple(turns))
    # Drop the final Listener turn: it is what the model must write, and the reference.
    return ListenerTask(dialogue.conv_id, lang, tuple(turns[:-1]), reference=turns[-1].text)


def with_live_turns(task: ListenerTask, turns: Sequence[ContextTurn]) -> ListenerTask:
    """The task with turns typed in the chat page appended (no reference any more)."""
    return ListenerTask(task.conv_id, task.lang, task.turns, None, tuple(turns), task.variant)
