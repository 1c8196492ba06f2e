"""Which language a person reads the app in, and the switch to change it.

Chosen, in order: ``?lang=`` in the URL (a shared link or a talk slide opens in its
language), then the switch's choice earlier in this session, then what a crowd study's
items are in (a worker rating Korean items reads Korean), then the browser's language
(``st.context.locale``), else English. The choice is written back to the URL on every
run, so moving between pages, reloading or copying the address keeps it.
"""

from __future__ import annotations

import streamlit as st

from koed_core import i18n
from koed_core.i18n import _

KEEP_WORDS_WHOLE = """<style>
.stMainBlockContainer :is(p, li, label, td, th, h1, h2, h3, [data-testid="stText"],
[data-testid="stCaptionContainer"]) { word-break: keep-all; overflow-wrap: anywhere; }
</style>"""
"""Korean wraps between words (eojeol), never inside one; a run too long for its line still
breaks rather than overflow. Latin text is unaffected."""
CHOSEN = "language.chosen"
SWITCH = "language.switch"


def browser_language() -> str | None:
    """The browser's language, when it is one we have (ko-KR -> ko)."""
    try:
        found = st.context.locale
    except (AttributeError, RuntimeError):  # no browser (a script run in tests)
        return None
    code = str(found or "").split("-")[0].lower()
    return code if code in i18n.LANGUAGES else None


def start(default: str | None = None) -> i18n.Language:
    """Settle this run's language before anything is drawn; ``default`` is a page's own
    suggestion (a crowd study's item language), weaker than the URL and the switch."""
    asked = st.query_params.get("lang")
    if asked in i18n.LANGUAGES:
        st.session_state[CHOSEN] = asked
    explicit = st.session_state.get(CHOSEN)
    lang = i18n.set_language(explicit or default or browser_language() or "en")
    if explicit and st.query_params.get("lang") != lang:  # a page switch drops the query
        st.query_params["lang"] = lang
    return lang


def _switched() -> None:
    picked = st.session_state.get(SWITCH)
    if picked in i18n.LANGUAGES:
        st.session_state[CHOSEN] = picked
        st.query_params["lang"] = picked


def switch() -> None:
    """Korean / English, at the top right of the page (not in talk mode: a slide's link
    carries its ?lang, and the projector's height is the chart's)."""
    st.html(KEEP_WORDS_WHOLE)
    if st.query_params.get("talk") == "true":
        return
    st.session_state[SWITCH] = i18n.language()  # what this run settled on, shown
    _left, right = st.columns([5, 1])
    right.segmented_control(
        _("Language"),
        i18n.LANGUAGES,
        format_func=i18n.NAMES.__getitem__,
        key=SWITCH,
        on_change=_switched,
        label_visibility="collapsed",
    )
