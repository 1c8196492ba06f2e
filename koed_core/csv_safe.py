"""CSV that a spreadsheet opens safely and correctly.

A cell that starts with ``=``, ``+``, ``-``, ``@`` (or a tab or carriage return) is run as a
formula by Excel, LibreOffice and Google Sheets: a model reply, a rater's comment or a
dataset turn could then fetch a URL with the sheet's contents. Following the OWASP rule,
such text cells get a leading apostrophe, which spreadsheets show as plain text and which
a reader can strip. Numbers stay numbers (a negative gap is not text). A UTF-8 byte-order
mark makes Excel read Korean as Korean.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
BOM = "\ufeff"


def neutralise(value: Any) -> Any:
    """The value, with a leading apostrophe if it is text a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(TRIGGERS):
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells cannot start a formula."""
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]) and not pd.api.types.is_bool_dtype(
            out[column]
        ):
            out[column] = out[column].map(neutralise)
    out.columns = [neutralise(str(c)) for c in out.columns]
    return out


def to_csv(frame: pd.DataFrame, bom: bool = True) -> str:
    """CSV text with formula cells neutralised (and a BOM for Excel unless ``bom`` is off)."""
    text = str(safe_frame(frame).to_csv(index=False))
    return BOM + text if bom else text
