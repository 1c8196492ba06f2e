"""Which language a person reads the app in, and the switch to change it.

Chosen, in order: ``?lang=`` in the URL (a shared link or a talk slide opens in its
language), then the switch's choice earlier in this session, then what a crowd study's
items are in (a worker rating Korean items reads Korean), then the browser's language
(``st.context.locale``), else English. The choice is written back to the URL on every
run, so moving between pages, reloading or copying the address keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import streamlit as st

from components.core import link_notice
from koed_core import i18n
from koed_core.i18n import N_, _

KEEP_WORDS_WHOLE = """<style>
.stMainBlockContainer :is(p, li, label, td, th, h1, h2, h3, [data-testid="stText"],
[data-testid="stCaptionContainer"]) { word-break: keep-all; overflow-wrap: anywhere; }
</style>"""
"""Korean wraps between words (eojeol), never inside one; a run too long for its line still
breaks rather than overflow. Latin text is unaffected."""
CHOSEN = "language.chosen"
UNKNOWN = "language.unknown"  # a ?lang= value that is no language, until the page says so
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
    elif asked is not None:  # ?lang=xx: said on the page (switch), not dropped silently
        st.session_state[UNKNOWN] = asked
        del st.query_params["lang"]
    explicit = st.session_state.get(CHOSEN)
    lang = i18n.set_language(explicit or default or browser_language() or "en")
    if explicit and st.query_params.get("lang") != lang:  # a page switch drops the query
        st.query_params["lang"] = lang
    return lang


CHOICE_WIDGETS = frozenset(
    {
        "RadioSerde",
        "SelectboxSerde",
        "MultiSelectSerde",
        "SelectSliderSerde",
        "_SingleSelectButtonGroupSerde",
        "_MultiSelectButtonGroupSerde",
    }
)
"""Streamlit's widgets that keep a choice as its option's words (``format_func``)."""


def _choice_keys() -> list[str]:
    """The keys of this session's choice widgets (radio, select box, multiselect, pills,
    segmented control, select slider), read from Streamlit's widget registry: its public
    API does not say what kind of widget a key belongs to. Nothing (and a log line) if a
    Streamlit release changed that registry."""
    import logging

    from streamlit.runtime.state import get_session_state

    try:
        inner = get_session_state()._state  # noqa: SLF001 - no public way to ask
        found = []
        for key, widget_id in inner._key_id_mapper._key_id_mapping.items():  # noqa: SLF001
            meta = inner._new_widget_state.widget_metadata.get(widget_id)  # noqa: SLF001
            serde = getattr(getattr(meta, "deserializer", None), "__self__", None)
            if type(serde).__name__ in CHOICE_WIDGETS:
                found.append(key)
        return found
    except AttributeError:
        logging.getLogger(__name__).warning("choices are not kept across a language switch")
        return []


def _switched() -> None:
    """The reader's new language, with every choice made so far kept: Streamlit holds a
    choice as its option's words, and in the other language those words match no option,
    so each choice would be read as none (a reviewer's category and spans to keep were
    lost on the next Record). Each is set again by its value, before the page draws its
    widgets in the new words."""
    picked = st.session_state.get(SWITCH)
    if picked not in i18n.LANGUAGES:
        return
    for key in _choice_keys():
        if key != SWITCH and key in st.session_state:
            st.session_state[key] = st.session_state[key]
    st.session_state[CHOSEN] = picked
    st.query_params["lang"] = picked


def switch() -> None:
    """Korean / English, at the top right of the page (not in talk mode: a slide's link
    carries its ?lang, and the projector's height is the chart's)."""
    st.html(KEEP_WORDS_WHOLE)
    unknown = st.session_state.pop(UNKNOWN, None)
    found = link_notice.choice_dropped("lang", [unknown], i18n.LANGUAGES) if unknown else []
    if st.query_params.get("talk") == "true":
        link_notice.page_note("lang", found)
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
    link_notice.page_note("lang", found)


VARIANT_WORDS = {
    "en-from-ko": N_("English, translated from the Korean (en-from-ko)"),
    "ko-from-en": N_("Korean, translated from the English (ko-from-en)"),
}
"""The translated variants as a picker names them."""


def language_words(code: str) -> str:
    """A language by its own name, or a translated variant in the reader's words."""
    return _(VARIANT_WORDS[code]) if code in VARIANT_WORDS else i18n.NAMES[code]


def languages_picker(
    where: Any, label: str, default: list[str] | None = None, variants: Sequence[str] = ()
) -> list[str]:
    """Korean and English to choose from, each by its own name, in ``where`` (the page or
    a column), and the translated ``variants`` that exist; Korean and English chosen
    unless ``default`` says otherwise."""
    return cast(
        list[str],
        where.multiselect(
            label,
            [*i18n.LANGUAGES, *variants],
            default=list(i18n.LANGUAGES) if default is None else default,
            format_func=language_words,
            placeholder=_("Choose a language"),
        ),
    )
