"""Annotate the adaptation: an annotator's projects, one dialogue at a time, blind."""

import streamlit as st

from components.annotation import annotation_view, variant_review, worklist
from components.core import resources, state
from components.core.literal import md
from components.shared.source_banner import load_or_stop, render_source_banner
from koed_core import i18n
from koed_core.dialogues.labels import display as label_display
from koed_core.i18n import _

st.title(_("Annotate the adaptation"))
who = annotation_view.annotator()
source, dataset = load_or_stop()
variant_review.review_variants(dataset, who)  # a translated variant, checked turn by turn
annotations = resources.annotations()
projects = [p for p in annotations.projects_for(who) if p["dataset_sha256"] == dataset.sha256]
if not projects:
    st.info(
        _(
            "No annotation project for you on this dataset yet. An admin creates one on the "
            "Annotation projects page (or `koed annotations project --name ...`)."
        )
    )
    st.stop()
render_source_banner(source, dataset)
names = {p["id"]: f"{p['id']}: {p['name']}" for p in projects}
project_id = st.selectbox(
    _("Project"), list(names), format_func=names.__getitem__, key=state.ANN_PROJECT
)
project = next(p for p in projects if p["id"] == project_id)
items = annotations.items(project_id, who)
done = int((items["yours"] == "submitted").sum())
st.caption(
    _(
        "{done} of {n} dialogues submitted by you; each dialogue gets {per} annotators, who "
        "do not see each other's work until all have submitted. Taxonomy {version}.",
        done=i18n.number(done),
        n=i18n.number(len(items)),
        per=i18n.number(project["per_item"]),
        version=md(project["taxonomy_version"]),
    )
)
conv_id = worklist.find_work(annotations, project, dataset, who)
if conv_id is None:
    st.stop()
dialogue = dataset.get(conv_id)
if dialogue is None:
    st.error(_("{conv_id} is not in the loaded dataset.", conv_id=md(conv_id)))
    st.stop()
st.subheader(_("Dialogue {conv_id}", conv_id=md(conv_id)))
gold = " + ".join(label_display(name) for name in dialogue.labels)
st.caption(_("Gold emotion: {labels}", labels=md(gold)))
annotation_view.annotate(annotations, project, dataset, dialogue)
