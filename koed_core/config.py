"""Settings, read once from the environment and Streamlit secrets by the caller.

Core functions take a :class:`Settings` or plain arguments and never read the
environment themselves, so tests can build any configuration directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from koed_core.paths import DATA_DIR
from koed_core.registry import DEFAULT_REGISTRY
from koed_core.sources import OFFICIAL


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "koed-studio"


@dataclass(frozen=True)
class Settings:
    """Where KoED Studio reads its data and keeps its caches."""

    data_path: str | None = None
    """A KoED file chosen by the user (``KOED_DATA``); wins over every other source."""
    cache_dir: Path = _default_cache_dir()
    """Downloaded official file and computed caches (``KOED_CACHE_DIR``)."""
    data_url: str = OFFICIAL.url
    """Where ``koed data download`` fetches the official file (``KOED_DATA_URL``)."""
    db_path: Path = DATA_DIR / "koed.db"
    """The SQLite file of runs, responses and ratings (``KOED_DB``)."""
    models_path: Path = DEFAULT_REGISTRY
    """The model registry (``KOED_MODELS``)."""
    users_path: Path = DATA_DIR / "users.yaml"
    """Accounts with bcrypt hashes, kept out of git (``KOED_USERS``)."""
    cookie_key: str | None = None
    """Signs the login cookie (``KOED_COOKIE_KEY``; secrets: ``[auth] cookie_key``)."""

    @classmethod
    def from_sources(
        cls, env: Mapping[str, str], secrets: Mapping[str, Any] | None = None
    ) -> Settings:
        """Secrets override the environment, which overrides the defaults."""
        merged: dict[str, Any] = {}
        auth = (secrets or {}).get("auth") or {}
        if hasattr(auth, "get") and auth.get("cookie_key"):
            merged["cookie_key"] = str(auth["cookie_key"])
        for key, attr in ENV_NAMES.items():
            value = (secrets or {}).get(key) or env.get(key)
            if value:
                merged[attr] = Path(value).expanduser() if attr in PATHS else str(value)
        return cls(**merged)


ENV_NAMES = {
    "KOED_DATA": "data_path",
    "KOED_CACHE_DIR": "cache_dir",
    "KOED_DATA_URL": "data_url",
    "KOED_DB": "db_path",
    "KOED_MODELS": "models_path",
    "KOED_USERS": "users_path",
    "KOED_COOKIE_KEY": "cookie_key",
}
PATHS = {"cache_dir", "db_path", "models_path", "users_path"}


def api_key(
    env_name: str, env: Mapping[str, str], secrets: Mapping[str, Any] | None = None
) -> str | None:
    """A model's API key from secrets or the environment; callers hand it to the client only."""
    value = (secrets or {}).get(env_name) or env.get(env_name)
    return str(value) if value else None
