"""Prompt sets, chosen per run and stored with it: ``paper`` and ``native``.

``paper`` follows the KoED authors' setup (their evaluation scripts, read and restated
in our own words): one English task definition for both languages (naming the
dialogue's language), English ``Speaker:``/``Listener:`` labels also for Korean turns,
the 34 labels each glossed (jeong and han defined), no length instruction, and two calls:
first the emotion (exactly one label for ``single``, every label that applies for
``multi``), then the reply, given the emotion the model named. ``native`` is the
one-call prompt in the dialogue's own language (instructions in Korean for Korean),
kept as a named variant: with it, instruction language is a factor a researcher can
study, never the paper's setup.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from koed_core.dialogues.labels import all_labels
from koed_core.models.protocol import (
    ListenerTask,
    Message,
    Protocol,
    build_messages,
    prompt_version,
)

PromptSetName = Literal["paper", "native"]
PROMPT_SETS: tuple[PromptSetName, ...] = ("paper", "native")
LANGUAGE = {"ko": "Korean", "en": "English"}
PAPER_MAX_TOKENS = 256

TASK = (
    "The task: an empathetic conversation in {language}. One person, the Speaker, was "
    "given an emotion, wrote down a situation in which they had felt it, and then talked "
    "about it with a second person, the Listener. The Listener knows neither the emotion "
    "nor the situation and should notice and acknowledge the Speaker's feelings as well "
    "as they can. You are the Listener. Given the conversation so far, write the "
    "Listener's next turn, and only that turn."
)
KOREAN_DEFINITIONS = {
    "jeong": "a warm, lasting attachment and affection that grows between people",
    "han": "a deep, lingering sorrow mixed with resentment at loss or injustice",
}
EMOTION_RULES = {
    "single": (
        "Rules for the emotion: use only the 34 labels above; choose exactly one, the "
        "closest, even when the feeling is mixed or subtle."
    ),
    "multi": (
        "Rules for the emotion: use only the 34 labels above; mixed feelings are fine: "
        "choose every label that fits (at most four)."
    ),
}
EMOTION_STEP = {
    "single": (
        "First, only the emotion. 1. Read the conversation and work out how the Speaker "
        "feels. 2. Name that feeling with one label from the list. Stop there: do not "
        "write the response yet."
    ),
    "multi": (
        "First, only the emotions. 1. Read the conversation and work out how the Speaker "
        "feels, mixed feelings included. 2. Name them with every label from the list that "
        "applies. Stop there: do not write the response yet."
    ),
}
REPLY_STEP = (
    "Identified emotion: {emotion}\n\n"
    "3. Now write the Listener's next response in {language}, empathetic, taking the "
    "identified emotion into account."
)
DIRECT_STEP = "Write the Listener's next empathetic response in {language}."


def glossed_labels() -> str:
    """The 34 labels as the paper set lists them: name (Korean gloss), jeong and han defined."""
    parts = []
    for label in all_labels():
        if label.name in KOREAN_DEFINITIONS:
            parts.append(f"{label.ko} ({label.name}: {KOREAN_DEFINITIONS[label.name]})")
        else:
            parts.append(f"{label.name.capitalize()} ({label.ko})")
    return ", ".join(parts)


def _transcript(task: ListenerTask) -> str:
    return "\n".join(
        f"{'Speaker' if t.role == 'speaker' else 'Listener'}: {t.text}" for t in task.transcript
    )


def _system(task: ListenerTask, protocol: Protocol) -> str:
    text = TASK.format(language=LANGUAGE[task.lang])
    if protocol == "direct":
        return text
    return f"{text}\n\nThe 34 emotion labels: {glossed_labels()}\n\n{EMOTION_RULES[protocol]}"


def _user(task: ListenerTask, step: str) -> str:
    return f"Conversation:\n{_transcript(task)}\n\n{step}"


@dataclass(frozen=True)
class PromptPlan:
    """The first call's messages, and for two-call sets the builder of the second."""

    first: list[Message]
    two_calls: bool

    def second(self, task: ListenerTask, emotion: str) -> list[Message]:
        """The reply call: the first call's request with the model's emotion added."""
        step = REPLY_STEP.format(emotion=emotion.strip(), language=LANGUAGE[task.lang])
        user = f"{self.first[-1]['content']}\n\n{step}"
        return [self.first[0], {"role": "user", "content": user}]


def plan_messages(task: ListenerTask, protocol: Protocol, prompt_set: str) -> PromptPlan:
    """What to send for one item under one prompt set."""
    if prompt_set == "native":
        return PromptPlan(build_messages(task, protocol), two_calls=False)
    if prompt_set != "paper":
        raise ValueError(f"unknown prompt set {prompt_set!r}; use {', '.join(PROMPT_SETS)}")
    if protocol == "direct":
        step = DIRECT_STEP.format(language=LANGUAGE[task.lang])
        return PromptPlan(
            [
                {"role": "system", "content": _system(task, protocol)},
                {"role": "user", "content": _user(task, step)},
            ],
            two_calls=False,
        )
    first: list[Message] = [
        {"role": "system", "content": _system(task, protocol)},
        {"role": "user", "content": _user(task, EMOTION_STEP[protocol])},
    ]
    return PromptPlan(first, two_calls=True)


def prompt_set_version(prompt_set: str) -> str:
    """A short hash of a set's templates (``native`` keeps its 0.1.0 version hash)."""
    if prompt_set == "native":
        return prompt_version()
    blob = json.dumps(
        [
            TASK,
            KOREAN_DEFINITIONS,
            EMOTION_RULES,
            EMOTION_STEP,
            REPLY_STEP,
            DIRECT_STEP,
            glossed_labels(),
            PAPER_MAX_TOKENS,
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def default_prompt_set(protocol: Protocol) -> PromptSetName:
    """``paper`` for the paper's protocols (single, multi); ``native`` for direct."""
    return "paper" if protocol in ("single", "multi") else "native"
