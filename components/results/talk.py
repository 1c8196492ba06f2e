"""Talk mode: presentation styling for a projector (large type, no sidebar)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from components.core import link_notice, state
from koed_core.i18n import _

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
.st-key-talk_chart [data-testid="stPlotlyChart"], .st-key-talk_chart .js-plotly-plot,
.st-key-talk_chart .plot-container, .st-key-talk_chart .svg-container {
  height: max(420px, calc(100vh - 230px)) !important; }
.st-key-talk_chart [data-testid="stElementContainer"],
.st-key-talk_chart [data-testid="stFullScreenFrame"] {
  height: auto !important; overflow: visible !important; }
</style>
"""
SWITCH = ("true", "false")
"""What a bound switch reads in a link (in any case: Streamlit's own reading)."""
RESIZE_JS = """<script>
(() => {
  let tries = 0;
  const timer = setInterval(() => {
    const boxes = document.querySelectorAll(".st-key-talk_chart .js-plotly-plot");
    const off = [...boxes].some((box) => {
      const svg = box.querySelector(".main-svg");
      return svg && Math.abs(Number(svg.getAttribute("height")) - box.clientHeight) > 4;
    });
    if (off) window.dispatchEvent(new Event("resize"));
    if (++tries > 40) clearInterval(timer);
  }, 250);
})();
</script>"""
"""Plotly sizes a responsive chart to its box when the window resizes: ask it to, once
the box has its screen height. A constant of ours, never user or data text."""


def talk_toggle(key: str = state.TALK) -> bool:
    """A "Talk mode" switch bound to the URL (?talk=true), so a slide link opens in it;
    a value it cannot read (``?talk=maybe``) is named on the page, not dropped silently."""
    unread = [v for v in st.query_params.get_all(key) if v.lower() not in SWITCH]
    link_notice.page_note(key, link_notice.choice_dropped(key, unread, SWITCH))
    talk = st.toggle(
        _("Talk mode"),
        key=key,
        bind="query-params",
        help=_("Large type, no sidebar, one chart per screen."),
    )
    if talk:
        st.html(TALK_CSS)
    return bool(talk)


def screen_charts(figures: list[go.Figure]) -> None:
    """Charts side by side that fill the screen's height under the title, whatever the
    projector (1280x720 to 1920x1080 and beyond), instead of a fixed 500 px."""
    with st.container(key="talk_chart"):
        for column, fig in zip(st.columns(len(figures)), figures, strict=True):
            fig.update_layout(height=None, autosize=True)
            column.plotly_chart(fig, width="stretch", theme=None, config={"responsive": True})
    st.html(RESIZE_JS, unsafe_allow_javascript=True)
