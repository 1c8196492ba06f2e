"""CSV that a spreadsheet opens safely and correctly.

A cell that starts with ``=``, ``+``, ``-``, ``@`` (or a tab or carriage return) is run as a
formula by Excel, LibreOffice and Google Sheets: a model reply, a rater's comment or a
dataset turn could then fetch a URL with the sheet's contents. Following the OWASP rule,
such text cells get a leading apostrophe, which spreadsheets show as plain text and which
a reader can strip. Numbers stay numbers (a negative gap is not text). A UTF-8 byte-order
mark makes Excel read Korean as Korean.

A cell carries no control character: a name (a model id, a plan, a label) is written on
one line, its line breaks as spaces (``plain_text.one_line``); only free-text columns the
caller names (a note, a comment) keep their line breaks, as ``\n`` inside a quoted cell,
which every CSV reader (and our own import) reads back as one cell.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pandas as pd

from koed_core.text.plain_text import lines_kept, one_line

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
BOM = "\ufeff"


def neutralise(value: Any, multiline: bool = False) -> Any:
    """The value, with no control character (line breaks kept only if ``multiline``) and
    a leading apostrophe if it is text a spreadsheet would evaluate."""
    if not isinstance(value, str):
        return value
    text = lines_kept(value) if multiline else one_line(value)
    return "'" + text if text.startswith(TRIGGERS) else text


def safe_frame(frame: pd.DataFrame, multiline: Collection[str] = ()) -> pd.DataFrame:
    """A copy whose text cells cannot start a formula or carry a control character; the
    columns named in ``multiline`` (free text) keep their line breaks."""
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]) and not pd.api.types.is_bool_dtype(
            out[column]
        ):
            keep = column in multiline
            out[column] = out[column].map(lambda value, keep=keep: neutralise(value, keep))
    out.columns = [neutralise(str(c)) for c in out.columns]
    return out


def to_csv(frame: pd.DataFrame, bom: bool = True, multiline: Collection[str] = ()) -> str:
    """CSV text with formula cells neutralised and control characters removed (line
    breaks kept in the ``multiline`` columns only), and a BOM for Excel unless ``bom``
    is off."""
    text = str(safe_frame(frame, multiline).to_csv(index=False))
    return BOM + text if bom else text
