"""User- and data-supplied text shown as it is, inside elements that render Markdown.

Display names, usernames, conv_ids, model names and file paths come from people and
files we do not control: rendered as Markdown, ``![x](http://...)`` would load an external
image on every page and ``**`` would restyle the page. Every Markdown-active character
is escaped, and HTML-like brackets too.
"""

from __future__ import annotations

import re

SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md(text: object) -> str:
    """``text`` escaped so that Streamlit's Markdown shows it character for character."""
    return SPECIAL.sub(r"\\\1", str(text))
