"""Tables as people read them: an empty cell says "—", never "None".

Streamlit draws a missing value as the word "None" whatever a Styler asks for, and a
hit rate of "None" for a run that could have none (a multi-label run has F1 instead) reads
as a bug. Columns that hold a missing value are shown as text: numbers formatted as the
column's configuration says, gaps as an em dash. Exports keep the empty cells.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from koed_core.i18n import N_, _

MISSING = "—"
HEADERS = (
    N_("model"), N_("provenance"), N_("protocol"), N_("reference"), N_("source"),
    N_("metric"), N_("pairs"), N_("gap"), N_("lang"), N_("dimension"), N_("run"),
    N_("response"), N_("ratings"), N_("raters"), N_("judge"), N_("items"), N_("group"),
    N_("dialogue"), N_("alpha"), N_("ED emotion"), N_("KoED emotion"),
    N_("ED emotion (answered)"), N_("KoED emotion (answered)"), N_("label"), N_("n"),
    N_("ko"), N_("en"), N_("mean"), N_("low"), N_("high"), N_("turn"), N_("status"),
    N_("kind"), N_("record"), N_("message"),
    # the agreement table (koed_core/results/reliability.py)
    N_("alpha_ci_low"), N_("alpha_ci_high"), N_("alpha_reading"), N_("ceiling_spearman"),
    N_("ceiling_kappa"), N_("ceiling_reading"), N_("judge_loo_spearman"),
    N_("judge_loo_kappa"), N_("judge_loo_reading"), N_("judged_items"), N_("judge_kappa"),
    N_("judge_kappa_reading"), N_("judge_spearman"), N_("judge_spearman_reading"),
    N_("judge_bias"), N_("judge_bias_reading"), N_("length_spearman"), N_("length_reading"),
    # what moves the gap (koed_core/results/sensitivity.py)
    # the planner (koed_core/results/ppi_plan.py), perception or response (perception.py)
    N_("judged"), N_("emotion"), N_("part"), N_("note"),
    # gain and its ceiling beside PPI++ (koed_core/results/ppi.py, ppi_plan.py)
    N_("gain"), N_("gain_ceiling"), N_("gain_limit"), N_("judge_people_corr"),
    # the alternative annotator test (koed_core/results/alt_test.py)
    N_("raters_tested"), N_("epsilon"), N_("winning_rate"), N_("passes"),
    N_("advantage_probability"), N_("alt_test_reading"),
    N_("gain_planned"), N_("people_needed_90"), N_("ppi_needed_90"),
    N_("people_needed_low"), N_("people_needed_high"), N_("width_reachable"),
    N_("change"), N_("change_ci_low"), N_("change_ci_high"), N_("change_p"), N_("change_p_holm"),
)  # fmt: skip
"""Column names the results' tables carry (the same names as in their CSV exports, which
stay English for scripts): a table on a page shows them in the reader's language."""


def _printf(fmt: str | None) -> str | None:
    """A NumberColumn format such as ``%.2f`` (or None) as a Python format spec."""
    if fmt and re.fullmatch(r"%[.0-9]*[dfe]", fmt):
        return fmt[1:]
    return None


def _as_text(values: pd.Series, spec: str | None) -> pd.Series:
    def one(value: Any) -> str:
        if value is None or (not isinstance(value, (list, tuple, dict)) and pd.isna(value)):
            return MISSING
        if spec and isinstance(value, (int, float)) and not isinstance(value, bool):
            return format(value, spec)
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)

    return values.map(one)


def readable(
    data: pd.DataFrame | list[dict[str, Any]], column_config: Mapping[str, Any] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``data`` with every column that has a missing value turned to text, and the
    column configuration adjusted to match (a number column's label and help kept)."""
    config = dict(column_config or {})
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    _translate_headers(frame, config)
    if frame.empty:
        return frame, config
    out = frame.copy()
    for column in frame.columns:
        values = frame[column]
        if values.dtype == bool or not values.isna().any():
            continue
        setting = config.get(column)
        if setting is None and column in config:
            continue  # hidden
        spec = None
        numeric = pd.api.types.is_numeric_dtype(values)
        if isinstance(setting, Mapping):
            kind = (setting.get("type_config") or {}).get("type")
            spec = _printf((setting.get("type_config") or {}).get("format"))
            if kind in ("number", "progress"):
                config[column] = st.column_config.TextColumn(
                    setting.get("label"),
                    help=setting.get("help"),
                    width=setting.get("width"),
                    alignment="right",
                )
        elif numeric:  # a label (or nothing): keep it, and keep numbers right-aligned
            config[column] = st.column_config.TextColumn(setting, alignment="right")
        out[column] = _as_text(values, spec)
    return out, config


def _translate_headers(frame: pd.DataFrame, config: dict[str, Any]) -> None:
    """Give each column without a label of its own the reader's word for its name (a name
    the catalog does not know is shown as it is)."""
    for column in frame.columns:
        if not isinstance(column, str):
            continue
        setting = config.get(column, "unset")
        if setting is None:
            continue  # hidden
        if setting == "unset":
            word = _(column)
            if word != column:
                config[column] = word
        elif isinstance(setting, Mapping) and not setting.get("label"):
            word = _(column)
            if word != column:
                config[column] = {**setting, "label": word}


def show(
    frame: pd.DataFrame | list[dict[str, Any]],
    column_config: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """``st.dataframe`` with missing cells drawn as an em dash (same keyword arguments)."""
    where = kwargs.pop("where", st)
    shown, config = readable(frame, column_config)
    return where.dataframe(shown, column_config=config or None, **kwargs)


READINGS = {
    "alpha_reading": N_("alpha among raters"),
    "ceiling_reading": N_("Ceiling (each rating against the other raters)"),
    "judge_loo_reading": N_("Judge against the raters, as one more rater"),
    "judge_kappa_reading": N_("Judge kappa"),
    "judge_spearman_reading": N_("Judge Spearman"),
    "judge_bias_reading": N_("Judge bias"),
    "length_reading": N_("Length baseline"),
    "alt_test_reading": N_("Could the judge replace a rater?"),
}
"""The agreement table's reading columns, each named as a person would say it."""
GROUPS = {
    "all": N_("all raters"),
    "native ko": N_("native Korean speakers"),
    "not native ko": N_("not native Korean speakers"),
}
"""The rater groups an agreement row is computed over (koed_core.results.agreement)."""


def group_names(frame: pd.DataFrame) -> pd.DataFrame:
    """The table as shown: its rater groups named in the reader's words ("all" is a key)."""
    if "group" not in frame.columns:
        return frame
    return frame.assign(group=frame["group"].map(lambda v: _(GROUPS[v]) if v in GROUPS else v))


def readings_in_full(frame: pd.DataFrame, keys: list[str], *, key: str) -> None:
    """One row's readings as whole sentences under a table: a grid cuts a cell at its
    column's width (at 1366 px a reading is cut mid-sentence), and a reviewer quoting the
    table in a paper needs the full text, not a tooltip."""
    texts = [c for c in READINGS if c in frame.columns]
    if frame.empty or not texts:
        return
    keys = [k for k in keys if k in frame.columns]
    shown = [
        _as_text(frame[k], None).map(lambda v: _(GROUPS[v]) if v in GROUPS else v) for k in keys
    ]
    names = {i: " · ".join(column[i] for column in shown) for i in frame.index}
    row = st.selectbox(
        _("Read one row's readings in full"), list(names), format_func=names.get, key=key
    )
    names_of = {c: _(READINGS[c]) for c in texts}
    lines = [
        f"{names_of[c]}: {frame.at[row, c]}"
        for c in texts
        if isinstance(frame.at[row, c], str) and frame.at[row, c]
    ]
    st.text("\n".join(lines) or MISSING)
