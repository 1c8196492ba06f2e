"""Could the judge replace one of the raters? The Alternative Annotator Test's table on
the Agreement page (``koed_core.results.alt_test``)."""

from __future__ import annotations

import streamlit as st

from components.core import computed, state, tables
from koed_core.db import JudgeConfig, Store
from koed_core.i18n import _
from koed_core.results.viewer import Viewer
from koed_core.text import csv_safe


def render_alt_test(store: Store, study: int, judge: JudgeConfig | None, viewer: Viewer) -> None:
    """The test per dimension, language and rater group, with a plain reading of each."""
    if judge is None:
        return
    table = computed.alt_test(store, study, judge, viewer=viewer)
    if table.empty:
        return
    st.subheader(_("Could the judge replace one of the raters?"), anchor=False)
    st.caption(
        _(
            "The Alternative Annotator Test (Calderon et al., ACL 2025): each rater is left "
            "out, one at a time, and on each item they scored the judge and the rater are compared "
            "with the other raters' scores. The judge holds its own against a rater when its "
            "share of wins is not lower than the rater's by more than epsilon (0.1, the "
            "paper's allowance for crowd workers): a one-sided t-test per rater, "
            "Benjamini-Yekutieli over the raters at 0.05. It passes when it holds its own "
            "against at least half of them (winning rate 0.5). Advantage probability: the "
            "judge's mean share of wins, to compare judges. Undefined rows say why."
        )
    )
    number = st.column_config.NumberColumn(format="%.3f")
    tables.show(
        tables.group_names(table),
        hide_index=True,
        column_config={"winning_rate": number, "advantage_probability": number},
    )
    tables.readings_in_full(table, ["dimension", "lang", "group"], key=state.AGREEMENT_ALT_ROW)
    st.download_button(
        _("Alternative Annotator Test (CSV)"),
        csv_safe.to_csv(
            computed.alt_test(store, study, judge, "en", viewer).assign(
                study_id=study, **judge.as_columns()
            )
        ),
        file_name="koed_alt_test.csv",
        mime="text/csv",
    )
