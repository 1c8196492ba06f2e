"""An address no page has, answered by a page of ours in the reader's language.

Streamlit answers an unknown address (``/nope``, a mistyped or outdated link) with its own
"Page not found" dialog, in English, over the default page. Here the address asked for
becomes, for this run only, a hidden page of its own: it says in the reader's language
that there is no such page and offers the Explorer and the menu, and Streamlit has no
page to miss.
"""

from __future__ import annotations

from collections.abc import Collection

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.util import calc_hash  # how Streamlit names a page by its address

from components.core.literal import md
from koed_core.i18n import _

ASKED = "not_found.address"
"""The address this session was last opened at by URL (kept by this module alone)."""


def requested_address() -> str | None:
    """The address (the path after the app's root) this run was opened at by URL, or None
    when a page was picked in the menu or a link inside the app (named by its id).

    A URL names its page by address only on the session's first run; every rerun after
    it (a widget, the login cookie's component answering) names the page by the hash of
    its address. The not-found page at ``/nope`` is made again on each run, so that rerun
    asks for a page no longer registered, and Streamlit drew the Explorer without a word
    (on every request but a fresh server's first, whose cookie came late). The address
    is kept for the session and recognised again by its hash.
    """
    ctx = get_script_run_ctx()
    if ctx is None:
        return None
    manager = ctx.pages_manager
    asked = manager.intended_page_script_hash
    if not asked:
        address = (manager.intended_page_name or "").strip("/") or None
        st.session_state[ASKED] = address
        return address
    kept = st.session_state.get(ASKED)
    return kept if kept and asked == calc_hash(kept) else None


def not_found_page(known: Collection[str], explorer: st.Page) -> st.Page | None:
    """A hidden page at the requested address when no page of ``known`` (their
    ``url_path``) has it; None otherwise. An address Streamlit cannot name a page with
    (one holding a ``/``) is left to Streamlit."""
    address = requested_address()
    if address is None or address in known or "/" in address:
        return None

    def render() -> None:
        st.title(_("Page not found"))
        st.warning(
            _(
                "There is no page at {address} in KoED Studio. The link may be mistyped or "
                "from an older version; pick a page in the menu above, or open the Explorer.",
                address=md("/" + address),
            ),
            icon=":material/link_off:",
        )
        st.page_link(explorer, label=_("Open the Explorer"), icon=":material/forum:")

    return st.Page(render, title=_("Page not found"), url_path=address, visibility="hidden")
