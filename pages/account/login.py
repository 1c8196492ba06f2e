"""Log in to rate or to run studies; says what to set up when accounts are not ready."""

import streamlit as st

from components.account import login_form
from components.shared import auth
from components.shared.literal import md

st.title("Log in")
state = auth.start_state()
if state.account is not None:
    st.success(f"Logged in as {md(state.account.name)} ({md(state.account.role)}).")
    where = {
        "rater": "The rating pages are in the menu along the top (Rating).",
        "annotator": "The annotation page is in the menu along the top (Annotation → Annotate).",
    }.get(state.account.role, "Every page is in the menu along the top.")
    st.caption(md(where))
    login_form.logout_button("main")
    st.stop()
if state.accounts_problem:
    st.error(
        "The accounts file cannot be used, so rating and admin pages are closed:\n\n"
        f"{md(state.accounts_problem)}\n\nFix the file or KOED_USERS and reload."
    )
    st.stop()
if not state.accounts_exist:
    st.info(
        "No accounts yet. Create the first admin on the machine that runs the app:\n\n"
        "`koed users add NAME --role admin`\n\n"
        "Accounts are kept in the file `KOED_USERS` names (default `data/users.yaml`), "
        "outside git."
    )
if state.key_problem:
    st.warning(f"{md(state.key_problem)}\n\n{auth.SET_KEY_HELP}")
if state.accounts_exist and not state.key_problem:
    login_form.login_form()
