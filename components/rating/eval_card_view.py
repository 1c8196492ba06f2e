"""The Study dashboard's human-evaluation card: what a reviewer's checklist asks of the
study, each item with where it came from (koed_core.results.eval_card)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.core import resources
from koed_core.i18n import _
from koed_core.results import eval_card


def render_card(study_id: int) -> None:
    """The card as a table in an expander; "not recorded" where the database has nothing."""
    items = eval_card.card(resources.store(), study_id)
    with st.expander(_("Human-evaluation card (for the paper)")):
        st.caption(
            _(
                "What ARR's checklist (D1-D5) and HEDS ask of a human evaluation, read from "
                "this database; the same card is in the paper export."
            )
        )
        rows = [
            {
                _("Item"): _(item.label),
                _("Value"): eval_card.show_value(item.value)
                if item.recorded
                else _(eval_card.NOT_RECORDED),
                _("From"): item.source,
                _("Checklist"): item.checklist,
            }
            for item in items
        ]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
