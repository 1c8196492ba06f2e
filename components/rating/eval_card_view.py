"""The Study dashboard's human-evaluation card: what a reviewer's checklist asks of the
study, each item with where it came from (koed_core.results.eval_card)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components.core import resources
from koed_core.i18n import _
from koed_core.results import eval_card


def render_card(study_id: int) -> None:
    """The card as a table in an expander, every word in the page's language; "not
    recorded" where the database has nothing."""
    items = eval_card.card(resources.store(), study_id)
    with st.expander(_("Human-evaluation card (for the paper)")):
        st.caption(
            _(
                "What ARR's checklist (D1-D5) and HEDS ask of a human evaluation, read from "
                "this database; the same card is in the paper export."
            )
        )
        headers = {
            "item": _("Item"),
            "value": _("Value"),
            "from": _("From"),
            "checklist": _("Checklist"),
        }
        frame = pd.DataFrame(eval_card.card_rows(items), columns=list(headers))
        st.dataframe(frame.rename(columns=headers), hide_index=True, width="stretch")
