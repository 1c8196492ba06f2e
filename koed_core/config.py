"""Settings and API keys, resolved the same way by the app and by the ``koed`` command.

Every name (``KOED_DB``, ``KOED_DATA``, ``OPENAI_API_KEY``...) is looked up in the
environment first, then in ``.streamlit/secrets.toml`` (the project's, then the user's
``~/.streamlit/secrets.toml``, as Streamlit reads them), then falls back to the default.
The app hands in ``st.secrets``; the CLI reads the same files with :func:`read_secrets`.
Core functions take a :class:`Settings` or plain arguments and never read the
environment themselves, so tests can build any configuration directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from koed_core.errors import KoedError
from koed_core.paths import DATA_DIR, DEFAULT_REGISTRY
from koed_core.tomlfile import parse_toml


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "koed-studio"


@dataclass(frozen=True)
class Settings:
    """Where KoED Studio reads its data and keeps its caches."""

    data_path: str | None = None
    """A KoED file chosen by the user (``KOED_DATA``); wins over every other source."""
    cache_dir: Path = _default_cache_dir()
    """Downloaded official file and computed caches (``KOED_CACHE_DIR``)."""
    model_cache_dir: Path | None = None
    """GGUF models converted once to safetensors, so a later start loads in about a second
    instead of half a minute (``KOED_MODEL_CACHE_DIR``; unset: ``cache_dir/models``)."""
    data_url: str | None = None
    """Where ``koed data download`` fetches the official file (``KOED_DATA_URL``; None:
    the pinned release's address)."""
    db_path: Path = DATA_DIR / "koed.db"
    """The SQLite file of runs, responses and ratings (``KOED_DB``)."""
    models_path: Path = DEFAULT_REGISTRY
    """The model registry (``KOED_MODELS``)."""
    users_path: Path = DATA_DIR / "users.yaml"
    """Accounts with bcrypt hashes, kept out of git (``KOED_USERS``)."""
    users_configured: bool = False
    """KOED_USERS was given: the file must then exist and be valid (fail closed)."""
    secret_key: str | None = None
    """Keys rater pseudonyms (``KOED_SECRET_KEY``); unset: a generated key file beside
    the database."""
    calls_per_hour: int = 200
    """Paid or remote model calls one account may make per hour (``KOED_CALLS_PER_HOUR``)."""
    cookie_key: str | None = None
    """Signs the login cookie (``KOED_COOKIE_KEY``; secrets: ``[auth] cookie_key``)."""
    public_url: str | None = None
    """The address people open the app at (``KOED_PUBLIC_URL``): crowd links are built on
    it. None: the one ``koed serve --domain`` recorded in the database, else none (see
    ``koed_core.rating.crowd.address``)."""
    batch_poll_s: float = 30.0
    """How often a job sent through a provider's Batch API asks whether it is done
    (``KOED_BATCH_POLL_S``)."""

    @property
    def converted_models_dir(self) -> Path:
        """Where converted GGUF models are kept."""
        return self.model_cache_dir or self.cache_dir / "models"

    @classmethod
    def from_sources(
        cls, env: Mapping[str, str], secrets: Mapping[str, Any] | None = None
    ) -> Settings:
        """The environment wins over secrets, which win over the defaults."""
        merged: dict[str, Any] = {}
        auth = (secrets or {}).get("auth") or {}
        if hasattr(auth, "get") and auth.get("cookie_key"):
            merged["cookie_key"] = str(auth["cookie_key"])
        problems = []
        for key, attr in ENV_NAMES.items():
            value = lookup(key, env, secrets)
            if value:
                merged[attr] = Path(value).expanduser() if attr in PATHS else value
                try:
                    if attr in INTEGERS:
                        merged[attr] = _integer(key, value, *INTEGERS[attr])
                    if attr in FLOATS:
                        merged[attr] = _seconds(key, value, *FLOATS[attr])
                except SettingsError as err:
                    problems.append(str(err))
        if problems:
            raise SettingsError(
                "; ".join(problems) + " (set in the environment or .streamlit/secrets.toml; "
                "`koed settings` lists every setting)"
            )
        merged["users_configured"] = "users_path" in merged
        return cls(**merged)


ENV_NAMES = {
    "KOED_DATA": "data_path",
    "KOED_CACHE_DIR": "cache_dir",
    "KOED_MODEL_CACHE_DIR": "model_cache_dir",
    "KOED_DATA_URL": "data_url",
    "KOED_DB": "db_path",
    "KOED_MODELS": "models_path",
    "KOED_USERS": "users_path",
    "KOED_COOKIE_KEY": "cookie_key",
    "KOED_SECRET_KEY": "secret_key",
    "KOED_CALLS_PER_HOUR": "calls_per_hour",
    "KOED_BATCH_POLL_S": "batch_poll_s",
    "KOED_PUBLIC_URL": "public_url",
}
PATHS = {"cache_dir", "model_cache_dir", "db_path", "models_path", "users_path"}
INTEGERS = {"calls_per_hour": (0, 1_000_000)}
FLOATS = {"batch_poll_s": (0.01, 86_400.0)}
"""Numeric settings and the range each accepts (checked once, when settings are read)."""


class SettingsError(KoedError):
    """A setting that has a value outside what it accepts: named, with the range."""


def _seconds(name: str, value: str, low: float, high: float) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not low <= number <= high:  # nan and inf fail here too
        raise SettingsError(
            f"{name} must be a number of seconds from {low:g} to {high:g}, not {value!r}"
        )
    return number


def _integer(name: str, value: str, low: int, high: int) -> int:
    try:
        number: int | None = int(value)
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        raise SettingsError(f"{name} must be a whole number from {low} to {high:,}, not {value!r}")
    return number


def describe(
    env: Mapping[str, str], secrets: Mapping[str, Any] | None
) -> list[tuple[str, str, str]]:
    """(name, value, where from) for every setting; secret values are never shown."""
    settings = Settings.from_sources(env, secrets)
    rows = []
    for name, attr in ENV_NAMES.items():
        where = (
            "environment"
            if env.get(name)
            else "secrets.toml"
            if lookup(name, {}, secrets)
            else "default"
        )
        value = getattr(settings, attr)
        if attr == "model_cache_dir":
            value = settings.converted_models_dir
        if attr in ("cookie_key", "secret_key"):
            where = where if value is None or where != "default" else "secrets.toml [auth]"
            value = "(set)" if value else "(not set)"
        rows.append((name, str(value), where))
    return rows


def lookup(name: str, env: Mapping[str, str], secrets: Mapping[str, Any] | None) -> str | None:
    """One name: environment, then secrets; None when neither has a non-empty value."""
    value = env.get(name) or (secrets or {}).get(name)
    return str(value) if value not in (None, "") and not isinstance(value, Mapping) else None


def merged_env(env: Mapping[str, str], secrets: Mapping[str, Any] | None) -> dict[str, str]:
    """Top-level secrets as names, overlaid by the environment (for ``OPENAI_BASE_URL``
    and the like, read by code that takes one mapping)."""
    out = {k: str(v) for k, v in (secrets or {}).items() if not isinstance(v, Mapping) and v != ""}
    out.update({k: v for k, v in env.items() if v})
    return out


def api_key(
    env_name: str,
    env: Mapping[str, str],
    secrets: Mapping[str, Any] | None = None,
    session: str | None = None,
) -> str | None:
    """A model's API key: typed in this browser session, else environment, else secrets.

    ``env_name`` is the spec's ``api_key_env``: each model asks for its own provider's key
    (chat, runs, judge and demo all call this). Callers hand the key to the client only.
    """
    if session:
        return session
    return lookup(env_name, env, secrets)


def read_secrets(cwd: Path | None = None, home: Path | None = None) -> dict[str, Any]:
    """What Streamlit would read as ``st.secrets``: the project's file over the user's.

    Raises:
        KoedError: a secrets file that is not valid TOML (named in the message).
    """

    merged: dict[str, Any] = {}
    for folder in (home or Path.home(), cwd or Path.cwd()):
        path = folder / ".streamlit" / "secrets.toml"
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise KoedError(f"{path}: not valid TOML ({err})") from None
        merged.update(parse_toml(text, str(path), KoedError))
    return merged
