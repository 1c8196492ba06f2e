"""Talk mode: presentation styling for a projector (large type, no sidebar)."""

from __future__ import annotations

import streamlit as st

from components import state

TALK_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
.stMainBlockContainer { max-width: 96vw; padding-top: 1rem; padding-bottom: 0; }
[data-testid="stHeader"] { display: none; }
.stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer pre,
.stMainBlockContainer [data-testid="stText"] { font-size: 1.4rem; line-height: 1.35; }
.stMainBlockContainer [data-testid="stVerticalBlock"] { gap: 0.6rem; }
.stMainBlockContainer h1 { font-size: 2.4rem; padding-top: 0; }
.stMainBlockContainer h2, .stMainBlockContainer h3 { font-size: 1.7rem; padding: 0.2rem 0; }
</style>
"""


def talk_toggle(key: str = state.TALK) -> bool:
    """A "Talk mode" switch bound to the URL (?talk=true), so a slide link opens in it."""
    talk = st.toggle(
        "Talk mode",
        key=key,
        bind="query-params",
        help="Large type, no sidebar, one chart per screen.",
    )
    if talk:
        st.html(TALK_CSS)
    return bool(talk)
