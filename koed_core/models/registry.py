"""Named models from ``models.toml``: backend, model id, server and provenance tag.

The provenance tag (western / korean-centric / other) is what the gap charts group by,
so it lives with the model, not in each run.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from koed_core.errors import KoedError
from koed_core.i18n import N_, _, stored_word
from koed_core.paths import DEFAULT_REGISTRY

BACKENDS = ("openai", "transformers", "embedded", "human")
OFFLINE_BACKENDS = ("embedded", "human")
"""Models anyone may call: no key spent, no remote server, no large local model."""
PROVENANCES = ("western", "korean-centric", "other")
FAMILIES = ("open", "claude")
DEFAULT_MODEL = "smollm2"
ADHOC_PREFIX = "openai:"


class RegistryError(KoedError):
    """models.toml is unreadable or an entry in it is wrong; names file and entry."""


@dataclass(frozen=True)
class ModelSpec:
    """One model a user can pick."""

    name: str
    backend: str
    model: str = ""
    """Model id on the server, hub id or local folder (unused by embedded and human)."""
    base_url: str | None = None
    """OpenAI-compatible server; None means OpenAI itself."""
    provenance: str = "other"
    api_key_env: str = "OPENAI_API_KEY"
    """Where the key is looked up (environment or secrets); never stored elsewhere."""
    gguf_file: str | None = None
    temperature: float | str | None = None
    """Decoding for runs of this model: a number, "default" (the server's or the model's
    own, as the paper ran its open models), or unset (KoED Studio's 0.7)."""
    max_tokens: int | None = None
    """New tokens per answer (unset: 256, the paper's limit)."""
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    """The rest of a model's generation config, written out (unset: not sent)."""
    family: str = "open"
    """Which of the KoED authors' reply post-processing rules applies: open or claude."""
    substitutes: tuple[str, ...] = ()
    """Model ids to use instead when the provider has retired ``model``."""
    notes: str = ""

    @property
    def offline(self) -> bool:
        """The offline default or the human reference: free for every visitor."""
        return self.backend in OFFLINE_BACKENDS

    @property
    def label(self) -> str:
        """Name with backend and provenance (in the page's language), for pickers."""
        made = _(PROVENANCE.get(self.provenance, self.provenance))
        return f"{self.name} ({stored_word(self.backend, BACKEND_WORDS)}, {made})"


BACKEND_WORDS = {
    "openai": N_("OpenAI-compatible server"),
    "transformers": N_("local model folder"),
    "embedded": N_("offline, on this machine"),
    "human": N_("the dataset's own reply"),
}
"""Each backend in words a Korean picker shows (an English one keeps the backend's name,
as models.toml spells it)."""
PROVENANCE = {
    "western": N_("western"),
    "korean-centric": N_("korean-centric"),
    "other": N_("other"),
}
"""Where a model was made, as pickers and charts say it."""


def load_registry(path: Path = DEFAULT_REGISTRY) -> dict[str, ModelSpec]:
    """Every model in the file, by name.

    Raises:
        RegistryError: not TOML, or an entry with an unknown key, backend or provenance.
    """
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegistryError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as err:
        raise RegistryError(f"{path}: not valid TOML ({err})") from None
    allowed = {f.name for f in fields(ModelSpec)} - {"name"}
    specs: dict[str, ModelSpec] = {}
    for name, entry in raw.get("models", {}).items():
        where = f"{path}: model {name!r}"
        unknown = set(entry) - allowed
        if unknown:
            raise RegistryError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        if "substitutes" in entry:
            subs = entry["substitutes"]
            if not isinstance(subs, list) or not all(isinstance(x, str) and x for x in subs):
                raise RegistryError(f"{where}: substitutes must be a list of model ids")
            entry = {**entry, "substitutes": tuple(subs)}
        spec = ModelSpec(name=name, **entry)
        if spec.backend not in BACKENDS:
            raise RegistryError(f"{where}: backend must be one of {', '.join(BACKENDS)}")
        if spec.provenance not in PROVENANCES:
            raise RegistryError(f"{where}: provenance must be one of {', '.join(PROVENANCES)}")
        if isinstance(spec.temperature, str) and spec.temperature != "default":
            raise RegistryError(f'{where}: temperature is a number or "default"')
        if spec.max_tokens is not None and (
            not isinstance(spec.max_tokens, int) or spec.max_tokens < 1
        ):
            raise RegistryError(f"{where}: max_tokens must be a whole number of at least 1")
        if spec.family not in FAMILIES:
            raise RegistryError(f"{where}: family must be one of {', '.join(FAMILIES)}")
        for key in ("top_p", "repetition_penalty"):
            value = getattr(spec, key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise RegistryError(f"{where}: {key} must be a number")
        if spec.top_k is not None and (not isinstance(spec.top_k, int) or spec.top_k < 1):
            raise RegistryError(f"{where}: top_k must be a whole number of at least 1")
        if spec.backend in ("openai", "transformers") and not spec.model:
            raise RegistryError(f"{where}: the {spec.backend} backend needs a model id")
        specs[name] = spec
    return specs


def decoding(
    spec: ModelSpec, temperature: float | None = None, max_tokens: int | None = None
) -> tuple[float | None, int]:
    """Temperature and token limit for a run: what the caller asks, else the model's own
    settings in models.toml, else 0.7 and 256. A temperature of None means "default"."""
    chosen: float | str | None = temperature if temperature is not None else spec.temperature
    if chosen is None:
        chosen = 0.7
    return (None if chosen == "default" else float(chosen)), max_tokens or spec.max_tokens or 256


def sampling(spec: ModelSpec, temperature: float | None) -> dict[str, Any]:
    """The generation-config values sent beside the temperature: the model's top_p, top_k
    and repetition penalty; none of them when the run leaves decoding to the server
    (temperature None), or decodes greedily (temperature 0)."""
    if not temperature:
        return {}
    return {
        key: getattr(spec, key)
        for key in ("top_p", "top_k", "repetition_penalty")
        if getattr(spec, key) is not None
    }


def resolve_model(
    name: str, registry: Mapping[str, ModelSpec], env: Mapping[str, Any], family: str = "open"
) -> ModelSpec:
    """A registry name, or ``openai:MODEL_ID`` on ``OPENAI_BASE_URL`` (any compatible server),
    whose post-processing ``family`` the caller says (open unless told).

    Raises:
        RegistryError: an unknown name (the message lists the known ones), or family.
    """
    if name.startswith(ADHOC_PREFIX):
        model = name[len(ADHOC_PREFIX) :]
        if not model:
            raise RegistryError("openai: needs a model id, e.g. openai:gpt-4o-mini")
        if family not in FAMILIES:
            raise RegistryError(f"family must be one of {', '.join(FAMILIES)}, not {family!r}")
        return ModelSpec(
            name=name,
            backend="openai",
            model=model,
            base_url=env.get("OPENAI_BASE_URL") or None,
            family=family,
        )
    if name not in registry:
        known = ", ".join(sorted(registry))
        raise RegistryError(f"unknown model {name!r}; known: {known}; or use openai:MODEL_ID")
    return registry[name]
