"""Log in to rate or to run studies; says what to set up when accounts are not ready."""

import streamlit as st

from components.account import login_form
from components.core import auth
from components.core.literal import md, without_paths
from koed_core.i18n import N_, _

WHERE = {
    "rater": N_("The rating pages are in the menu along the top (Rating)."),
    "annotator": N_("The annotation page is in the menu along the top (Annotation → Annotate)."),
    "admin": N_("Every page is in the menu along the top."),
}
state = auth.start_state()
st.title(_("Account") if state.account is not None else _("Log in"))
if state.account is not None:
    role = state.account.role
    st.success(_("Logged in as {name} ({role}).", name=md(state.account.name), role=md(_(role))))
    st.caption(_(WHERE[role if role in WHERE else "admin"]))
    login_form.logout_button("main")
    st.stop()
if state.accounts_problem:
    st.error(
        _(
            "The accounts file cannot be used, so rating and admin pages are closed:\n\n"
            "{problem}\n\nFix the file or KOED_USERS and reload.",
            problem=md(without_paths(state.accounts_problem)),  # no admin can log in
        )
    )
    st.stop()
if not state.accounts_exist:
    st.info(
        _(
            "No accounts yet. Create the first admin on the machine that runs the app:\n\n"
            "`koed users add NAME --role admin`\n\n"
            "Accounts are kept in the file `KOED_USERS` names (default `data/users.yaml`), "
            "outside git."
        )
    )
if state.key_problem:
    st.warning(md(state.key_problem) + "\n\n" + _(auth.SET_KEY_HELP))
if state.accounts_exist and not state.key_problem:
    login_form.login_form()
