"""The paper's listener protocol: context, prompts and the human reference turn.

The model plays the Listener. It sees the dialogue's turns in the target language,
labelled Speaker and Listener alternately (turns with no text in that language are
skipped), cut so the context ends on a Speaker turn. It never sees the gold labels or
the situation. Three protocols: ``single`` (name one of the 34 labels, then answer),
``multi`` (name every label that applies, at most four, then answer) and ``direct``
(answer only). The prompt text is ours; its hash is stored with every response.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from koed_core.dialogues.dialogue import Dialogue, Lang
from koed_core.dialogues.labels import all_labels

Protocol = Literal["single", "multi", "direct"]
PROTOCOLS: tuple[Protocol, ...] = ("single", "multi", "direct")
ROLE_NAMES = {"en": ("Speaker", "Listener"), "ko": ("화자", "청자")}
MAX_MULTI_LABELS = 4


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


def _label_list(lang: Lang) -> str:
    if lang == "ko":
        return ", ".join(f"{label.name}({label.ko})" for label in all_labels())
    return ", ".join(label.name for label in all_labels())


INSTRUCTIONS: dict[tuple[Protocol, Lang], str] = {
    ("single", "en"): (
        "You are the Listener in a conversation and you care about the Speaker. Read the "
        "conversation, decide which one emotion the Speaker feels most, and choose it from "
        "this list: {labels}.\nThen write the Listener's next turn: one short, natural, "
        "empathetic reply in English.\nAnswer in exactly this form:\n"
        "Emotion: <one label from the list>\nResponse: <your reply>"
    ),
    ("multi", "en"): (
        "You are the Listener in a conversation and you care about the Speaker. Read the "
        "conversation and name every emotion the Speaker feels, up to four, from this "
        "list: {labels}.\nThen write the Listener's next turn: one short, natural, "
        "empathetic reply in English.\nAnswer in exactly this form:\n"
        "Emotion: <label>, <label>, ...\nResponse: <your reply>"
    ),
    ("direct", "en"): (
        "You are the Listener in a conversation and you care about the Speaker. Write the "
        "Listener's next turn: one short, natural, empathetic reply in English. Write only "
        "the reply."
    ),
    ("single", "ko"): (
        "당신은 대화 속 청자이며 화자를 진심으로 아낍니다. 대화를 읽고 화자가 가장 크게 "
        "느끼는 감정 하나를 다음 목록에서 고르세요: {labels}.\n그다음 청자의 다음 말을 "
        "자연스럽고 공감 어린 한국어로 짧게 쓰세요.\n반드시 이 형식으로 답하세요:\n"
        "Emotion: <목록의 감정 하나>\nResponse: <청자의 말>"
    ),
    ("multi", "ko"): (
        "당신은 대화 속 청자이며 화자를 진심으로 아낍니다. 대화를 읽고 화자가 느끼는 감정을 "
        "최대 네 개까지 다음 목록에서 모두 고르세요: {labels}.\n그다음 청자의 다음 말을 "
        "자연스럽고 공감 어린 한국어로 짧게 쓰세요.\n반드시 이 형식으로 답하세요:\n"
        "Emotion: <감정>, <감정>, ...\nResponse: <청자의 말>"
    ),
    ("direct", "ko"): (
        "당신은 대화 속 청자이며 화자를 진심으로 아낍니다. 청자의 다음 말을 자연스럽고 공감 "
        "어린 한국어로 짧게 쓰세요. 청자의 말만 쓰세요."
    ),
}
USER_HEADER = {"en": "Conversation:", "ko": "대화:"}
USER_FOOTER = {"en": "Listener:", "ko": "청자:"}


def prompt_version() -> str:
    """A short hash of every prompt template; stored with each response."""
    blob = json.dumps(
        {
            "instructions": {f"{p}/{lang}": t for (p, lang), t in INSTRUCTIONS.items()},
            "roles": ROLE_NAMES,
            "header": USER_HEADER,
            "footer": USER_FOOTER,
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build_messages(task: ListenerTask, protocol: Protocol) -> list[Message]:
    """System instructions plus one user message holding the labelled transcript."""
    speaker, listener = ROLE_NAMES[task.lang]
    lines = [USER_HEADER[task.lang]]
    for turn in task.transcript:
        lines.append(f"{speaker if turn.role == 'speaker' else listener}: {turn.text}")
    lines.append(USER_FOOTER[task.lang])
    system = INSTRUCTIONS[(protocol, task.lang)].format(labels=_label_list(task.lang))
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


def with_live_turns(task: ListenerTask, turns: Sequence[ContextTurn]) -> ListenerTask:
    """The task with turns typed in the chat page appended (no reference any more)."""
    return ListenerTask(task.conv_id, task.lang, task.turns, None, tuple(turns))
