"""Picking models and building their clients, with the API key kept in the session.

A key typed here lives in this browser session only; it is handed to the client and
never shown, logged or stored.
"""

from __future__ import annotations

import os

import streamlit as st

from components import resources, state
from koed_core.backends import make_client
from koed_core.config import api_key
from koed_core.errors import KoedError
from koed_core.llm import ChatClient
from koed_core.registry import DEFAULT_MODEL, ModelSpec

SESSION_KEY_NAME = "OPENAI_API_KEY"


def session_api_key_input() -> None:
    """A password field in the sidebar for an OpenAI key used by this session only."""
    st.sidebar.text_input(
        f"{SESSION_KEY_NAME} (this session only)",
        type="password",
        key=state.API_KEY,
        help="Used for models whose key is OPENAI_API_KEY, before the environment and "
        "secrets. Never stored or shown; other providers' models never receive it.",
    )


def registry_or_stop() -> dict[str, ModelSpec]:
    """The model registry, or its error on screen and a stopped page."""
    try:
        return resources.registry()
    except KoedError as err:
        st.error(str(err))
        st.stop()


def key_for(spec: ModelSpec) -> str | None:
    """The spec's own key: typed in this session (OpenAI keys only), environment, secrets."""
    typed = state.session_api_key() if spec.api_key_env == SESSION_KEY_NAME else None
    return api_key(spec.api_key_env, os.environ, resources.secrets(), typed)


def client_for(spec: ModelSpec) -> ChatClient:
    """A client for one model. Raises ModelError (e.g. no key) for the page to show."""
    return make_client(spec, key_for(spec))


def model_label(name: str) -> str:
    """How a registry name shows in pickers (module-level, so widget state can pickle it)."""
    spec = resources.registry().get(name)
    return spec.label if spec else name


def model_picker(label: str, key: str, max_selections: int = 2) -> list[ModelSpec]:
    """Choose up to ``max_selections`` models from the registry (default: the offline one)."""
    registry = resources.registry()
    chosen = st.multiselect(
        label,
        list(registry),
        default=[DEFAULT_MODEL] if DEFAULT_MODEL in registry else None,
        max_selections=max_selections,
        key=key,
        format_func=model_label,
    )
    return [registry[name] for name in chosen]


def render_model_note(spec: ModelSpec) -> None:
    """The registry's note, so the small offline model says it is small."""
    if spec.notes:
        st.caption(spec.notes)
