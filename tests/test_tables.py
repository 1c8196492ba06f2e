"""An empty cell reads "—", never "None": numbers keep their format, exports their gaps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st
from streamlit.testing.v1 import AppTest

from components.core.tables import MISSING, readable
from tests.test_run_labels import four_runs  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[1]


def test_missing_cells_become_dashes_and_numbers_keep_their_format() -> None:
    frame = pd.DataFrame(
        {
            "run": ["a", "b"],
            "hit": [0.5, np.nan],
            "count": [3, None],
            "note": ["x", None],
            "whole": [1.0, 2.0],
        }
    )
    config = {"hit": st.column_config.NumberColumn("Hit rate", format="%.2f", help="single")}
    shown, adjusted = readable(frame, config)
    assert shown["hit"].tolist() == ["0.50", MISSING]
    assert shown["count"].tolist() == ["3", MISSING]  # not "3.0": it was a count
    assert shown["note"].tolist() == ["x", MISSING]
    assert shown["whole"].tolist() == [1.0, 2.0]  # nothing missing: left a number column
    assert adjusted["hit"]["label"] == "Hit rate" and adjusted["hit"]["help"] == "single"
    assert adjusted["hit"]["type_config"]["type"] == "text"
    assert adjusted["count"]["alignment"] == "right"
    assert frame["hit"].isna().sum() == 1  # the caller's frame (and so its exports) untouched


def test_the_runs_table_has_no_empty_cell(four_runs: object) -> None:  # noqa: F811
    """Single and direct runs side by side: direct runs have no hit rate, none has F1."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/models/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    runs = at.dataframe[0].value
    assert len(runs) == 8 and not runs.isna().any().any()  # a row per run and language
    assert (runs == MISSING).any().any()
    for table in at.dataframe:
        assert not table.value.isna().any().any()


def test_consent_text_keeps_a_safe_markdown_subset_only() -> None:
    from components.core.literal import consent_markdown

    text = (
        "**Voluntary.** See [the IRB page](https://irb.example.org/koed_1).\n"
        "- you may stop\n2. data kept 5 years\n\n"
        "<img src=x onerror=alert(1)> [pay](javascript:alert(1)) ![t](http://t.example/p.png)"
        " :red[warning] # not a heading"
    )
    shown = consent_markdown(text)
    assert "**Voluntary\\.**" in shown and "[the IRB page](https://irb.example.org/koed_1)" in shown
    assert "\n- you may stop\n2. data kept 5 years\n\n" in shown
    assert "\\<img" in shown and "\\[pay\\]\\(javascript" in shown
    assert "\\!\\[t\\]\\(http" in shown  # an image stays characters, not a fetch
    assert ":red[" not in shown and "\n#" not in shown
