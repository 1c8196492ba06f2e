"""Score a run's responses with an LLM judge on the five rubric dimensions."""

import streamlit as st

from components.core import auth, resources
from components.models import jobs_panel, judge_form
from components.shared.model_choice import adhoc_model_input, registry_or_stop
from koed_core.i18n import _
from koed_core.models.runs import run_labels

st.title(_("LLM judge"))
auth.require_admin_once_accounts_exist()
adhoc_model_input()
registry = registry_or_stop()
names = run_labels(resources.store())
if not names:
    st.info(_("No runs to judge yet. Start one on the Runs page or with `koed run`."))
    st.stop()

judge_form.start_judge_form(registry, names)
st.caption(
    _(
        "Judging is a background job (progress in the sidebar's Jobs panel); judging the same "
        "run with the same judge, mode, template and parser skips what is done. Command line, "
        "in the foreground: `koed judge --run RUN_ID --judge NAME --mode paper --template "
        "authors`."
    )
)
jobs_panel.render_jobs_table("judge")
