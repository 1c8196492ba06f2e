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


SERVER_PATH = re.compile(
    r"(?<![\w.:/~])(?:~|[A-Za-z]:)?[/\\]"  # the root (or home, or a drive)
    r"(?:[^\s/\\'\"`]+[/\\])+"  # folders
    r"([^\s/\\'\"`,;)]+)"  # the file's name, kept
)
"""An absolute path on the server (/srv/koed/data/users.yaml, ~/x/y, C:\\data\\x.json)."""


def without_paths(text: object) -> str:
    """``text`` with every absolute server path cut to its file name: where the app's
    files sit is the operator's business, a visitor or a worker gets the name."""
    return SERVER_PATH.sub(lambda m: m.group(1), str(text))


BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
LINK = re.compile(r"\[([^\[\]\n]{1,200})\]\((https?://[^\s()<>\"']{1,500})\)")
LIST_ITEM = re.compile(r"^(\s{0,6})([-*]|\d{1,3}[.)])\s+(.*)$")


def _inline(text: str) -> str:
    """One line: bold and http(s) links kept, everything else escaped."""
    out, at = [], 0
    tokens = sorted(
        [
            (m.start(), m.end(), "link", m)
            for m in LINK.finditer(text)
            if not text[: m.start()].endswith("!")  # an image: shown as characters
        ]
        + [(m.start(), m.end(), "bold", m) for m in BOLD.finditer(text)]
    )
    for start, end, kind, match in tokens:
        if start < at:
            continue  # overlaps one already taken
        out.append(md(text[at:start]))
        if kind == "link":
            label, url = match.group(1), match.group(2)
            out.append(f"[{md(label)}]({url.replace(')', '%29')})")
        else:
            out.append(f"**{md(match.group(1))}**")
        at = end
    out.append(md(text[at:]))
    return "".join(out)


def consent_markdown(text: str) -> str:
    """A consent text in the subset a review board's text needs: paragraphs, lists, bold
    and links to http/https only. Everything else is shown as written: raw HTML, images,
    headings, code, ``javascript:`` links and Streamlit's own directives (colours, icons)
    become plain characters."""
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        item = LIST_ITEM.match(line)
        if item:
            indent, marker, rest = item.groups()
            number = marker[:-1] + "." if marker[-1] in ".)" else "-"
            lines.append(f"{indent}{number} {_inline(rest)}")
        else:
            lines.append(_inline(line))
    return "\n".join(lines)
