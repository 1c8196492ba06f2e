"""Picking models and building their clients, with the API key kept in the session.

A key typed here lives in this browser session only; it is handed to the client and
never shown, logged or stored.
"""

from __future__ import annotations

import os
import time

import streamlit as st

from components.core import auth, resources, state
from components.core.literal import md
from koed_core.config import api_key, merged_env
from koed_core.db import ModelCalls
from koed_core.errors import KoedError
from koed_core.i18n import N_, _
from koed_core.models.backends import make_client
from koed_core.models.client import ChatClient, ModelError
from koed_core.models.registry import ADHOC_PREFIX, DEFAULT_MODEL, ModelSpec, resolve_model
from koed_core.text.redact import redact_url

SESSION_KEY_NAME = "OPENAI_API_KEY"


def session_api_key_input() -> None:
    """A password field in the sidebar for an OpenAI key used by this session only."""
    st.sidebar.text_input(
        _("{name} (this session only)", name=SESSION_KEY_NAME),
        type="password",
        key=state.API_KEY,
        help=_(
            "Used for models whose key is OPENAI_API_KEY, before the environment and "
            "secrets. Never stored or shown; other providers' models never receive it."
        ),
    )


def registry_or_stop() -> dict[str, ModelSpec]:
    """The model registry (with an admin's ``openai:`` additions), or its error on screen
    and a stopped page."""
    try:
        return with_adhoc(resources.registry())
    except KoedError as err:
        st.error(md(str(err)))
        st.stop()


def key_for(spec: ModelSpec) -> str | None:
    """The spec's own key: typed in this session (OpenAI keys only), environment, secrets."""
    typed = state.session_api_key() if spec.api_key_env == SESSION_KEY_NAME else None
    return api_key(spec.api_key_env, os.environ, resources.secrets(), typed)


def client_for(spec: ModelSpec) -> ChatClient:
    """A client for one model, if this session may call it (checked here, on the server).

    The offline default and the human reference are for everyone. Any other model spends
    a key or a server's time: it needs an admin (or no accounts at all), and each account
    has an hourly allowance.

    Raises:
        ModelError: not allowed, over the allowance, or no key; for the page to show.
    """
    if not spec.offline:
        if not auth.is_admin():
            raise ModelError(
                "forbidden",
                _(
                    "{model} calls a remote or paid model: log in as an admin to use it. "
                    "Everyone can use the offline model (smollm2) and the human reference.",
                    model=spec.name,
                ),
            )
        count_call(spec)
    return make_client(spec, key_for(spec))


def count_call(spec: ModelSpec) -> None:
    """Count one use of a paid or remote model against the account's hourly allowance.

    Raises:
        ModelError: the allowance (KOED_CALLS_PER_HOUR) is used up.
    """
    account = auth.username() or _("(no accounts)")
    limit = resources.settings().calls_per_hour
    now = time.time()
    store = resources.store()
    if ModelCalls(store).calls_since(account, now - 3600) >= limit:
        raise ModelError(
            "rate_limit",
            _(
                "{account} has made {limit} model calls in the last hour "
                "(KOED_CALLS_PER_HOUR); try again later",
                account=account,
                limit=limit,
            ),
        )
    ModelCalls(store).record_call(account, spec.name, now)


def allowed_models(registry: dict[str, ModelSpec]) -> dict[str, ModelSpec]:
    """The models this session may pick: all for an admin (with the ``openai:MODEL_ID``
    models they added this session), the offline ones otherwise."""
    if auth.is_admin():
        return with_adhoc(registry)
    return {name: spec for name, spec in registry.items() if spec.offline}


def with_adhoc(registry: dict[str, ModelSpec]) -> dict[str, ModelSpec]:
    """The registry plus an admin's ``openai:MODEL_ID`` models (on ``OPENAI_BASE_URL``)."""
    if not auth.is_admin():
        return registry
    env = merged_env(os.environ, resources.secrets())
    added = st.session_state.get(state.ADHOC_MODELS, [])
    return {**registry, **{name: resolve_model(name, registry, env) for name in added}}


def adhoc_model_input() -> None:
    """Admins: any model an OpenAI-compatible server serves, typed as ``openai:MODEL_ID``
    or picked from the server's own list, joins this session's pickers (the same as
    ``koed run --model openai:MODEL_ID``)."""
    if not auth.is_admin():
        return
    env = merged_env(os.environ, resources.secrets())
    server = redact_url(env.get("OPENAI_BASE_URL")) or _("api.openai.com (OPENAI_BASE_URL unset)")
    typed = st.text_input(
        _("Add a model by id: openai:MODEL_ID"),
        key=state.ADHOC_INPUT,
        placeholder="openai:llama3.1:8b",
        help=_("Served by {server}; its key is OPENAI_API_KEY. Admins only.", server=server),
    ).strip()
    _served_model_list(env)
    if not typed:
        return
    if not typed.startswith(ADHOC_PREFIX) or len(typed) > 200 or typed == ADHOC_PREFIX:
        st.warning(_("Type the model as openai:MODEL_ID, e.g. openai:gpt-4o-mini."))
        return
    _add_adhoc(typed)


def _add_adhoc(model: str) -> None:
    added = st.session_state.setdefault(state.ADHOC_MODELS, [])
    if model not in added:
        added.append(model)
        st.caption(_("{model} added to the model lists of this session.", model=md(model)))


def _served_model_list(env: dict[str, str]) -> None:
    """Ask the server which models it serves, then offer them in a picker."""
    if st.button(_("List the server's models"), key="models.list_served"):
        listed: list[str] | None = None
        try:
            # imported on use: the openai SDK alone took 1.4 s of a cold Runs page
            from koed_core.models.backends.openai_compat import served_models

            listed = served_models(env.get("OPENAI_BASE_URL") or None, env.get("OPENAI_API_KEY"))
        except ModelError as err:
            st.warning(md(str(err)), icon=":material/cloud_off:")
        st.session_state[state.SERVED_MODELS] = listed
    listed = st.session_state.get(state.SERVED_MODELS)
    if not listed:
        if listed == []:
            st.caption(_("The server lists no models."))
        return
    picked = st.selectbox(
        _("Served models ({n})", n=len(listed)),
        listed,
        index=None,
        key=state.SERVED_PICK,
        placeholder=_("Pick one to add it"),
    )
    if picked:
        _add_adhoc(f"{ADHOC_PREFIX}{picked}")


def model_label(name: str) -> str:
    """How a registry name shows in pickers (module-level, so widget state can pickle it)."""
    spec = resources.registry().get(name)
    return spec.label if spec else _("{model} (on OPENAI_BASE_URL)", model=name)


def model_picker(label: str, key: str, max_selections: int = 2) -> list[ModelSpec]:
    """Choose up to ``max_selections`` models from the registry (default: the offline one)."""
    registry = allowed_models(resources.registry())
    chosen = st.multiselect(
        label,
        list(registry),
        default=[DEFAULT_MODEL] if DEFAULT_MODEL in registry else None,
        max_selections=max_selections,
        key=key,
        # named now, in this run's language: Streamlit formats the options again outside
        # the run (a rerun reads the widget's state), where a lazy label spoke English and
        # a Korean page lost the chosen model on its next run
        format_func={name: model_label(name) for name in registry}.__getitem__,
        wrap=True,  # long model names wrap inside the box instead of running out of it
        placeholder=_("Choose a model"),
    )
    return [registry[name] for name in chosen]


def render_model_note(spec: ModelSpec) -> None:
    """The registry's note, so the small offline model says it is small: in the reader's
    language when the shipped registry has it (its notes are in the catalog through
    koed_core/text/toml_messages.py), a note of one's own as written."""
    if spec.notes:
        st.caption(md(_(spec.notes)))


EMBEDDED_NOTE = N_(
    "**The offline model (SmolLM2-135M) is here to try the app, not to get results.** It "
    "runs on this machine's processor: the first answer also loads it (about 30 s on two "
    "cores), then each pane takes about 30 s (as measured on a 2-core machine). "
    "At 135M parameters it often repeats its instructions, names no emotion and writes weak "
    "Korean; for real answers pick a served model (an admin can add OpenAI, vLLM or Ollama "
    "in models.toml)."
)


def render_embedded_note(specs: list[ModelSpec]) -> None:
    """Said before the first click: how long the offline model takes, and what it is for."""
    if any(spec.backend == "embedded" for spec in specs):
        st.info(_(EMBEDDED_NOTE), icon=":material/hourglass_top:")
