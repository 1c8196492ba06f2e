"""Annotation projects: create them, follow them, adjudicate, read the agreement."""

import streamlit as st

from components.annotation import annotation_admin, search
from components.core import auth, resources, state, tables
from components.core.literal import md
from components.shared.source_banner import load_or_stop, render_source_banner
from koed_core.i18n import _

st.title(_("Annotation projects"))
auth.require_admin_once_accounts_exist()
source, dataset = load_or_stop()
render_source_banner(source, dataset)
annotations = resources.annotations()
st.caption(
    _(
        "Linguists annotate what the Korean reconstruction changed: each dialogue's category "
        "(simply transferred, context modified; jeong/han dialogues were handcrafted) and its "
        "cultural signals, spans of Korean turns linked to the English they replace. Each "
        "dialogue is annotated blind by the project's number of annotators; a reviewer then "
        "records the final answer. The gap by adaptation is on the Empathy gap and the "
        "Adaptation pages."
    )
)
overview = annotation_admin.progress(annotations)
said = st.container()  # what a press on Create said, shown whether the form is open or not
with st.expander(_("New project"), expanded=overview.empty):
    annotation_admin.create_form(annotations, dataset, said)
overview = annotation_admin.progress(annotations)
if overview.empty:
    st.stop()
tables.show(overview, hide_index=True)
projects = [p for p in annotations.projects() if p["dataset_sha256"] == dataset.sha256]
if not projects:
    st.info(
        _("No project on the loaded dataset (projects belong to the dataset they were made on).")
    )
    st.stop()
names = {p["id"]: f"{p['id']}: {p['name']}" for p in projects}
project_id = st.selectbox(
    _("Project"), list(names), format_func=names.__getitem__, key=state.REVIEW_PROJECT
)
project = next(p for p in projects if p["id"] == project_id)
review, agreed, finding = st.tabs([_("Adjudicate"), _("Agreement and export"), _("Search")])
with finding:
    search.search_section(annotations, project)
with review:
    annotation_admin.adjudicate(
        annotations, project, dataset, annotation_admin.reviewer_name(auth.username())
    )
with agreed:
    annotation_admin.agreement_section(annotations, project, dataset)
    annotation_admin.revise_form(annotations, project)
    if project["closed"] is None and st.button(_("Close the project (no more annotation)")):
        annotations.close(project_id)
        st.rerun()
    elif project["closed"]:
        closed = str(project["closed"])[:16].replace("T", " ") + " UTC"
        st.caption(_("Closed {when}.", when=md(closed)))
