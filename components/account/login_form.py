"""The Log in page's form and the Log out button (sidebar and Account page): the
session checks behind them live in components.shared.auth."""

from __future__ import annotations

import time
from typing import Literal

import streamlit as st

from components.shared import auth, resources, state
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
    auth.set_login_cookie()
    st.success(_("Logged in."))


def logout_button(location: Literal["main", "sidebar"] = "sidebar") -> None:
    """Log out here and everywhere: sessions and cookies issued before now stop working."""
    username = state.auth_username()
    target = st.sidebar if location == "sidebar" else st
    if username and target.button(_("Log out"), key=f"{location}.logout"):
        accounts.revoke(resources.settings().users_path, username, time.time())
        auth.end_session()
        st.rerun()
