"""The Log in page's form and the Log out button (sidebar and Account page): the
session checks behind them live in components.core.auth."""

from __future__ import annotations

import time
from typing import Literal

import streamlit as st

from components.core import auth, resources, state
from components.core.literal import md
from koed_core.i18n import N_, _
from koed_core.rating import accounts

FAILED = N_(
    "Wrong username or password. After five failed attempts an account waits {minutes} "
    "minutes before it can log in again."
)


def failed_message() -> str:
    """The one answer to every failed login (whether the name exists or not)."""
    return _(FAILED, minutes=accounts.BACKOFF_S // 60)


def login_form() -> None:
    """Username and password; every failure gets the same answer."""
    with st.form("login"):
        st.subheader(_("Log in"), anchor=False)
        username = st.text_input(_("Username"))
        password = st.text_input(_("Password"), type="password")
        submitted = st.form_submit_button(_("Log in"), type="primary")
    if not submitted:
        return
    path = resources.settings().users_path
    account = accounts.attempt_login(path, username.strip(), password, time.time())
    if account is None:
        st.error(_(FAILED, minutes=accounts.BACKOFF_S // 60))
        return
    state.set_login(account.username, account.name, time.time())
    auth.set_login_cookie(account.username)
    st.rerun()  # the menu and this page as the account sees them; the cookie written


def logout_button(location: Literal["main", "sidebar"] = "sidebar") -> None:
    """Log out here and everywhere: sessions and cookies issued before now stop working."""
    username = state.auth_username()
    target = st.sidebar if location == "sidebar" else st
    if username and target.button(_("Log out"), key=f"{location}.logout"):
        accounts.revoke(resources.settings().users_path, username, time.time())
        auth.end_session()
        st.rerun()


CLOSED_WORDS = {
    "rater": N_("{page} is a rater's page: log in (Account → Log in) to open it."),
    "annotator": N_("{page} is an annotator's page: log in (Account → Log in) to open it."),
    "admin": N_("{page} is an admin's page: log in (Account → Log in) to open it."),
}
OTHER_ROLE = N_(
    "{page} needs an account with the role {role}; you are logged in as {name} ({yours}). "
    "Log out and log in with such an account to open it."
)


def closed_page(title: str, role: str) -> None:
    """What a link to a page this session may not open shows, at the page's own address:
    whose page it is and, for a visitor, the login form; once logged in with that role
    the same address opens the page itself (the navigation is computed again)."""
    st.title(title)
    current = auth.start_state()
    account = current.account
    if account is not None:
        st.info(
            _(
                OTHER_ROLE,
                page=md(title),
                role=md(_(role)),
                name=md(account.name),
                yours=md(_(account.role)),
            ),
            icon=":material/lock:",
        )
        return
    st.info(_(CLOSED_WORDS[role], page=md(title)), icon=":material/lock:")
    if current.accounts_exist and not current.key_problem and not current.accounts_problem:
        login_form()
    else:
        st.page_link("app_pages/account/login.py", label=_("Log in"), icon=":material/login:")
