"""One chat-client interface for every backend, and the one error type they raise.

A backend turns messages into text, streamed or whole. Whatever goes wrong on its far
side (rate limits, 5xx, time-outs, a missing model, an empty answer) reaches the caller
as a :class:`ModelError` with a message fit to show a user; it is never turned into a
fake response.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from koed_core.db.types import Decoding
from koed_core.errors import KoedError
from koed_core.models.protocol import ListenerTask, Message


@dataclass(frozen=True)
class GenerationSettings:
    """Decoding and transport settings, stored with every run."""

    temperature: float | None = 0.7
    """None: the server's or the model's own default decoding (the paper's open models)."""
    max_tokens: int = 256
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    """None for each: not sent, so the server's (or the model's) own value applies."""
    timeout_s: float = 60.0
    """The most one try of a request may take in all (waiting, then the whole body), not
    per read: a server that trickles its body a byte at a time is cut off here too."""
    max_retries: int = 4
    """Retries of rate limits, 5xx and time-outs, with exponential backoff and jitter."""
    stop: Callable[[], bool] | None = field(default=None, compare=False, repr=False)
    """The run's cancel signal (a cancelled job, a worker stopping), never stored: once it
    is true, a request still in flight gets ``ABANDON_GRACE_S`` to land, then is given up
    as a ``cancelled`` failure (nothing stored; a rerun asks it again)."""

    @property
    def decoding(self) -> Decoding:
        """What these settings ask the model to decode with, as a run stores it (the
        transport, time-out and retries, is how it is asked, not what)."""
        return Decoding(
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            top_p=self.top_p,
            top_k=self.top_k,
            repetition_penalty=self.repetition_penalty,
        )


ABANDON_GRACE_S = 3.0


@dataclass(frozen=True)
class Completion:
    """A whole answer and what it cost."""

    text: str
    latency_s: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    full_chars: int | None = None
    """The answer's length before it was cut at MAX_REPLY_CHARS (None: it came whole)."""


MAX_REPLY_CHARS = 20_000
"""The most of one answer that is kept, stored and shown to a judge or a rater. A reply
of the paper's 256 tokens is under 2,000 characters; a server that sends megabytes (a
loop, a hostile server) is cut here, and the response says where it was cut and how
long it was (``cut_at``, ``full_chars``)."""


def capped(done: Completion, limit: int = MAX_REPLY_CHARS) -> Completion:
    """``done`` with its text cut at ``limit`` characters, saying so; else unchanged."""
    if len(done.text) <= limit:
        return done
    return replace(done, text=done.text[:limit], full_chars=len(done.text))


class ModelError(KoedError):
    """A model call that failed for good (after retries); ``kind`` says how."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


class ChatClient(Protocol):
    """What the chat page, the runner and (later) the judge call."""

    name: str
    max_concurrency: int | None
    """How many calls may run at once (None: no limit of its own; local models: 1)."""

    def stream(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Iterator[str]:
        """Yield the answer in pieces as it is generated."""
        ...

    def complete(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Completion:
        """The whole answer at once, with token counts where the backend gives them."""
        ...


def require_text(text: str, name: str) -> str:
    """An empty answer is a failure, not a response to score."""
    if not text.strip():
        raise ModelError("empty", f"{name} returned an empty response")
    return text
