"""Admin: build rating studies from runs and saved chat answers, and invite raters."""

import streamlit as st

from components.rating.crowd_admin import render_invite_form
from components.shared import auth, resources, tables
from components.shared.literal import md
from components.shared.source_banner import load_or_stop
from koed_core.errors import KoedError
from koed_core.models.runs import run_labels
from koed_core.rating import accounts
from koed_core.rating.studies import StudyConfig

st.title("Studies")
auth.require("admin")
source, dataset = load_or_stop()
ratings = resources.ratings()
run_names = run_labels(resources.store())

with st.form("studies.create"):
    st.subheader("New study", anchor=False)
    name = st.text_input("Name", placeholder="e.g. pilot ko/en, Nov 2026")
    picked = st.multiselect(
        "Responses from runs (live chat saves are runs too)",
        list(reversed(run_names)),  # newest first
        format_func=run_names.get,
    )
    left, right = st.columns(2)
    langs = left.multiselect("Languages", ["ko", "en"], default=["ko", "en"])
    overlap = left.number_input("Raters per item (overlap k)", 1, 20, 3)
    checks = left.number_input("Attention checks per language", 0, 10, 2)
    quota = right.number_input("Quota per rater (0 = none)", 0, 10_000, 0)
    timeout = right.number_input("Give abandoned items back after (minutes)", 1, 1440, 30)
    seed = right.number_input("Order seed", 0, 1_000_000, 0)
    if st.form_submit_button("Create study", type="primary"):
        config = StudyConfig(
            name.strip() or "study",
            tuple(picked),
            tuple(langs),
            int(overlap),
            int(checks),
            int(quota) or None,
            int(timeout),
            int(seed),
        )
        try:
            study_id = ratings.create_study(config, dataset)
        except KoedError as err:
            st.error(md(str(err)))
        else:
            st.success(f"Study {md(study_id)} created.")

studies = ratings.studies()
if studies:
    shown = [
        {
            **s,
            "run_ids": "; ".join(run_names.get(r, "a deleted run") for r in s["run_ids"]),
            "closed": s["closed"] or "open",
        }
        for s in studies
    ]
    tables.show(
        shown,
        hide_index=True,
        column_config={"run_ids": "Runs rated", "closed": "Closed", "langs": "Languages"},
    )
    still_open = {s["id"]: s["name"] for s in studies if not s["closed"]}
    if still_open:
        with st.form("studies.close"):
            st.subheader("Close a study", anchor=False)
            st.caption(
                "While a study is open, raters and visitors see none of its results (judge "
                "scores, other raters' words, which model wrote a response). Closing ends "
                "rating and publishes its agreement and gap figures."
            )
            closing = st.selectbox("Study", list(still_open), format_func=still_open.get)
            if st.form_submit_button("Close study"):
                ratings.close(int(closing))
                st.success(f"Study {md(closing)} closed; its results are now published.")
                st.rerun()
else:
    st.info(
        "No study yet: build one above from stored runs (a run comes from the Runs page or "
        "`koed run`), or `koed study create --name NAME --runs RUN_ID`."
    )

render_invite_form({s["id"]: s["name"] for s in ratings.studies() if not s["closed"]})

with st.form("studies.invite", clear_on_submit=True):
    st.subheader("Invite a rater", anchor=False)
    left, right = st.columns(2)
    username = left.text_input("Username")
    display = left.text_input("Display name")
    role = left.radio("Role", accounts.ROLES, index=1, horizontal=True)
    password = right.text_input("Password (give it to the rater yourself)", type="password")
    again = right.text_input("Password again", type="password")
    if st.form_submit_button("Create account"):
        if password != again:
            st.error("The two passwords differ.")
        else:
            try:
                accounts.add_user(
                    resources.settings().users_path,
                    username.strip(),
                    role,
                    display.strip() or None,
                    password,
                )
            except KoedError as err:
                st.error(md(str(err)))
            else:
                st.success(f"Account {md(username.strip())} created.")
tables.show(accounts.list_users(resources.settings().users_path), hide_index=True)
