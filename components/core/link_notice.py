"""Say which values of a link a page left out, on the page (not a toast) and for good."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from components.core import state
from components.core.literal import md
from koed_core import i18n
from koed_core.dialogues.links import ALIASES, Dropped, canonical, dropped_values
from koed_core.i18n import N_


def link_params() -> dict[str, list[str]]:
    """The link's parameters under their one name each; an alias in the address
    (``?dialogue=``) is rewritten to the name (``?d=``) before a bound widget reads it."""
    raw = {name: st.query_params.get_all(name) for name in st.query_params}
    params = canonical(raw)
    for alias, name in ALIASES.items():
        if alias in st.query_params:
            if name not in raw and params.get(name):
                set_param(name, params[name])
            set_param(alias, [])
    return params


def check_link(
    page: str,
    conv_ids: Collection[str],
    turn_range: tuple[int, int] | None = None,
    defaults: Mapping[str, Any] | None = None,
    choices: Mapping[str, Collection[str]] | None = None,
) -> dict[str, list[str]]:
    """Check the link's values before the widgets bound to it drop the unknown ones,
    remember what was dropped and show it; returns the link's parameters.

    ``defaults``: a bound widget's key (its parameter's name) and the value it takes
    when its link value is left out (a slider keeps a range it cannot show, 9-1);
    ``choices``: a page's own parameters and the values each may take."""
    params = link_params()
    found = dropped_values(params, conv_ids, turn_range, choices)
    again = False
    for name in {d.name for d in found}:  # out of the address before a widget reads it
        gone = {d.value for d in found if d.name == name}
        kept = [v for v in params[name] if v not in gone and "-".join(params[name]) not in gone]
        params[name] = kept
        set_param(name, kept)
        if not kept:
            new = [d for d in found if d.name == name and d not in state.dropped_links(page)]
            if name in (defaults or {}) and new:
                st.session_state[name] = (defaults or {})[name]
                again = True
    note(page, found)
    if again:  # a bound widget seeds from the address the run began with: begin again
        st.rerun()
    return params


def note(page: str, found: list[Dropped]) -> None:
    """Add values left out to the page's notice and draw it (every run: it stays)."""
    kept = state.dropped_links(page)
    kept += [d for d in found if d not in kept]
    if kept:
        for dropped in kept:  # each value shown literally, one notice line each
            st.warning(md(dropped.sentence()), icon=":material/link_off:")


def page_note(name: str, found: list[Dropped]) -> None:
    """:func:`note` of parameter ``name`` for the page this run draws (named by
    Streamlit's hash of its address): for a value more than one page reads (``lang``,
    ``talk``), said on the page the link opened and kept there, not on the next one."""
    ctx = get_script_run_ctx()
    note(f"{name}.{ctx.page_script_hash if ctx else ''}", found)


def choice_dropped(name: str, values: Sequence[str], options: Sequence[str]) -> list[Dropped]:
    """The values of ``name`` that are none of ``options``, as :func:`note` names them."""
    listed = (("options", ", ".join(options)),)
    return [
        Dropped(name, v, N_("not one of {options}"), listed) for v in values if v not in options
    ]


def set_param(name: str, value: str | list[str]) -> None:
    """Write (or, empty, remove) a link parameter, unless a widget is bound to it: then
    the widget writes it (the Explorer's ``d`` stays bound for the first run of the page
    switched to)."""
    try:
        if value:
            st.query_params[name] = value
        elif name in st.query_params:
            del st.query_params[name]
    except StreamlitAPIException:
        pass


def linked_choice(
    where: Any, label: str, options: Sequence[str], key: str, words: Mapping[str, str], **more: Any
) -> str:
    """A radio whose choice is in the link by its code (``?origin=ed``) while the page
    shows it in the reader's words. Streamlit's own binding writes a choice's words, so
    a link made on a Korean page held Korean words that an English page dropped, and the
    codes a link is written in matched nothing once the words were translated. The link
    seeds the radio when the page opens (``check_link`` has already named any value it
    left out); the radio's choice is written back, the first option's as no parameter."""
    asked = st.query_params.get(key)
    if key not in st.session_state and asked in options:
        st.session_state[key] = asked
    chosen = where.radio(
        label, list(options), key=key, format_func=i18n.choices(words).__getitem__, **more
    )
    set_param(key, [] if chosen == options[0] else chosen)
    return chosen
