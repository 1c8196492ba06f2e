"""Run a model over KoED in both languages and watch the stored runs."""

import streamlit as st

from components.core import auth
from components.models import jobs_panel, runs_view, translate_view
from components.shared.model_choice import adhoc_model_input, registry_or_stop
from components.shared.source_banner import load_or_stop, render_source_banner
from koed_core.i18n import _

st.title(_("Runs"))
auth.require_admin_once_accounts_exist()
source, dataset = load_or_stop()
render_source_banner(source, dataset)
adhoc_model_input()
registry = registry_or_stop()
runs_view.start_run_form(registry, dataset)
runs_view.episodes_panel(registry, dataset)
translate_view.translate_panel(registry, dataset)
jobs_panel.render_jobs_table("run", "episodes", "translate")
runs_view.reproduce_panel(registry, dataset)
runs_view.stored_runs(dataset)
