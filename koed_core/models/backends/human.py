"""The human reference: the dataset's own next Listener turn, replayed as a response."""

from __future__ import annotations

import time
from collections.abc import Iterator

from koed_core.models.client import Completion, GenerationSettings, ModelError
from koed_core.models.protocol import ListenerTask, Message
from koed_core.models.registry import ModelSpec


class HumanClient:
    """Answers with ``task.reference``; a row in every comparison."""

    max_concurrency: int | None = None

    def __init__(self, spec: ModelSpec) -> None:
        self.name = spec.name

    def _reference(self, task: ListenerTask | None) -> str:
        if task is None or task.extra:
            raise ModelError("no_reference", "the human reference exists only for dataset turns")
        if not task.reference:
            raise ModelError(
                "no_reference",
                f"{task.conv_id} ({task.lang}) has no Listener turn after its context, "
                "so there is no human reference to replay",
            )
        return task.reference

    def stream(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Iterator[str]:
        """Yield the reference word by word, like a model would."""
        words = self._reference(task).split(" ")
        for i, word in enumerate(words):
            yield word if i == len(words) - 1 else word + " "

    def complete(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Completion:
        """The reference turn as a completion."""
        start = time.perf_counter()
        return Completion(self._reference(task), time.perf_counter() - start)
