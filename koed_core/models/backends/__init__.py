"""Chat-client adapters: OpenAI-compatible servers, local transformers models, the
embedded offline default and the human reference. ``make_client`` picks one by spec."""

from __future__ import annotations

from koed_core.models.client import ChatClient, ModelError
from koed_core.models.registry import ModelSpec


def make_client(spec: ModelSpec, api_key: str | None = None) -> ChatClient:
    """The client for a registry entry; heavy libraries load only when first used."""
    if spec.backend == "openai":
        from koed_core.models.backends.openai_compat import OpenAIClient

        return OpenAIClient(spec, api_key)
    if spec.backend in ("transformers", "embedded"):
        from koed_core.models.backends.local import TransformersClient

        return TransformersClient(spec)
    if spec.backend == "human":
        from koed_core.models.backends.human import HumanClient

        return HumanClient(spec)
    raise ModelError("config", f"model {spec.name!r}: unknown backend {spec.backend!r}")
