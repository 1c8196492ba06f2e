"""Admin: build rating studies from runs and saved chat answers, and invite raters."""

import streamlit as st

from components.core import auth, language, resources, tables
from components.core.literal import md
from components.rating import invite_form, study_design
from components.rating.crowd_admin import render_account_form
from components.shared.source_banner import load_or_stop
from koed_core.errors import KoedError
from koed_core.i18n import _
from koed_core.models.runs import run_labels
from koed_core.rating.studies import StudyConfig

st.title(_("Studies"))
auth.require("admin")
source, dataset = load_or_stop()
rules = resources.rules()
run_names = run_labels(resources.store())

with st.form("studies.create"):
    st.subheader(_("New study"), anchor=False)
    name = st.text_input(_("Name"), placeholder=_("e.g. pilot ko/en, Nov 2026"))
    picked = st.multiselect(
        _("Responses from runs (live chat saves are runs too)"),
        list(reversed(run_names)),  # newest first
        format_func=run_names.get,
        placeholder=_("Choose runs"),
    )
    left, right = st.columns(2)
    langs = language.languages_picker(left, _("Languages"))
    default = StudyConfig.default
    overlap = left.number_input(_("Raters per item (overlap k)"), 1, 20, default("overlap"))
    checks = left.number_input(
        _("Attention checks per language"), 0, 10, default("attention_checks")
    )
    quota = right.number_input(_("Quota per rater (0 = none)"), 0, 10_000, 0)
    timeout = right.number_input(
        _("Give abandoned items back after (minutes)"), 1, 1440, default("timeout_minutes")
    )
    seed = right.number_input(_("Order seed"), 0, 1_000_000, default("seed"))
    whole = st.checkbox(_("Episode runs: rate whole episodes (one item is one episode)"))
    with st.expander(_("Which dialogues (a random sample lets PPI++ use the judge)")):
        design = study_design.sampling_inputs(st, int(seed))
        both = study_design.bilingual_input(st)
    if st.form_submit_button(_("Create study"), type="primary"):
        config = StudyConfig(
            name=name.strip() or "study", run_ids=tuple(picked), langs=tuple(langs),
            overlap=int(overlap), attention_checks=int(checks), quota=int(quota) or None,
            timeout_minutes=int(timeout), seed=int(seed), whole_episodes=whole, sampling=design,
            bilingual=both if len(langs) > 1 else "free",
        )  # fmt: skip
        try:
            study_id = rules.create_study(config, dataset)
        except KoedError as err:
            st.error(md(str(err)))
        else:
            st.success(_("Study {id} created.", id=md(study_id)))

studies = rules.studies()
if studies:
    gone = _("a deleted run")
    shown = [
        {
            **s,
            "sampling": study_design.design_text(s),
            "run_ids": "; ".join(run_names.get(r, gone) for r in s["run_ids"]),
            "closed": s["closed"] or _("open"),
        }
        for s in studies
    ]
    tables.show(
        shown,
        hide_index=True,
        column_config={
            "id": _("id"),
            "name": _("name"),
            "run_ids": _("Runs rated"),
            "langs": _("Languages"),
            "overlap": _("overlap"),
            "attention_checks": _("attention_checks"),
            "quota": _("quota"),
            "timeout_minutes": _("timeout_minutes"),
            "seed": _("seed"),
            "sampling": _("Which dialogues"),
            "bilingual": None,  # said in the sampling column's words
            "created": _("created"),
            "closed": _("Closed"),
        },
    )
    still_open = {s["id"]: s["name"] for s in studies if not s["closed"]}
    if still_open:
        with st.form("studies.close"):
            st.subheader(_("Close a study"), anchor=False)
            st.caption(
                _(
                    "While a study is open, raters and visitors see none of its results (judge "
                    "scores, other raters' words, which model wrote a response). Closing ends "
                    "rating and publishes its agreement and gap figures."
                )
            )
            closing = st.selectbox(_("Study"), list(still_open), format_func=still_open.get)
            if st.form_submit_button(_("Close study")):
                rules.close(int(closing))
                st.success(_("Study {id} closed; its results are now published.", id=md(closing)))
                st.rerun()
else:
    st.info(
        _(
            "No study yet: build one above from stored runs (a run comes from the Runs page or "
            "`koed run`), or `koed study create --name NAME --runs RUN_ID`."
        )
    )

study_design.render_planner(resources.store(), {s["id"]: s["name"] for s in studies})
invite_form.render_invite_form({s["id"]: s["name"] for s in rules.studies() if not s["closed"]})
render_account_form(resources.settings().users_path)
