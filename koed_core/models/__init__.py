"""Models answering KoED: the registry, the one chat-client interface and its backends,
the listener protocol and prompt sets, reading the emotion out of a reply, runs over
the benchmark and the resumable pass engine they share with judging.
"""

from __future__ import annotations

from koed_core.models.client import ChatClient, Completion, GenerationSettings, ModelError
from koed_core.models.protocol import PROTOCOLS, ListenerTask, build_task
from koed_core.models.registry import ModelSpec, load_registry, resolve_model
from koed_core.models.request import EpisodeRequest, RunRequest
from koed_core.models.runs import run_benchmark

__all__ = [
    "ChatClient",
    "EpisodeRequest",
    "Completion",
    "GenerationSettings",
    "ListenerTask",
    "ModelError",
    "ModelSpec",
    "PROTOCOLS",
    "RunRequest",
    "build_task",
    "load_registry",
    "resolve_model",
    "run_benchmark",
]
