"""Text from people and files made inert where it leaves the app.

A model id, a plan's name, a run label or a variant's name is whatever someone typed, and
it ends up in files other programs interpret: a LaTeX table (``\\input{...}`` on a line
of its own, ``^^5c`` spelling a backslash), a Markdown table (``|`` splits a cell, ``<b>``
and ``[x](y)`` are markup), a CSV cell, a chart's title (Plotly reads a few HTML tags).
Each writer passes every title and cell through the function for its format here:

- :func:`one_line`: control characters go (C0, DEL, C1), line breaks of every kind
  (``\\r``, ``\\n``, U+0085, U+2028, U+2029, form and vertical feeds) and tabs become a
  space, so a name can never start a line of its own;
- :func:`latex`, :func:`markdown`, :func:`chart`: one line, then the characters the
  format treats specially written as text.
"""

from __future__ import annotations

import html
import re

LINE_BREAKS = re.compile(r"\r\n|[\t\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
"""Line breaks (and the tab): each becomes a space, so words stay apart."""
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Unicode's control characters (category Cc) and its line and paragraph separators."""
LATEX = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "{": r"\{",
        "}": r"\}",
        "#": r"\#",
        "$": r"\$",
        "%": r"\%",
        "&": r"\&",
        "_": r"\_",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
    }
)
"""Every character TeX's default category codes make special, written as text."""
MARKDOWN = re.compile(r"([`*_\[\]<>#|~$&\\])")
"""ASCII punctuation that starts Markdown markup inline (emphasis, code, links, images,
HTML, a table's cell break, GitHub's math and strikethrough, entities)."""


def has_control(text: str) -> bool:
    """Whether the text holds a control character or a line break of any kind."""
    return CONTROLS.search(text) is not None


def one_line(text: object) -> str:
    """The text on one line: line breaks and tabs as a space, other controls removed."""
    return CONTROLS.sub("", LINE_BREAKS.sub(" ", str(text)))


def lines_kept(text: object) -> str:
    """Free text whose line breaks are part of it (a note, a comment): every kind of line
    break as ``\\n``, tabs kept, other controls removed."""
    unified = re.sub(r"\r\n|[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", "\n", str(text))
    return re.sub(r"[\x00-\x08\x0e-\x1b\x1f\x7f-\x9f]", "", unified)


def latex(text: object) -> str:
    """Text for a LaTeX document: one line, ``# $ % & ~ _ ^ \\ { }`` as text."""
    return one_line(text).translate(LATEX)


def markdown(text: object) -> str:
    """Text for a Markdown title or table cell: one line, markup characters escaped
    with a backslash (a ``|`` no longer ends the cell; GitHub reads ``\\|`` as ``|``)."""
    return MARKDOWN.sub(r"\\\1", one_line(text))


def chart(text: object) -> str:
    """Text for a Plotly title, legend or axis label: one line, and ``< > &`` as
    entities, which Plotly shows as the characters instead of reading tags."""
    return html.escape(one_line(text), quote=False)
