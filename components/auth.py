"""Login through streamlit-authenticator, rebuilt on every run as the library requires.

app.py calls :func:`start` once per run (it checks the login cookie); the Login page and
the sidebar reuse that run's authenticator through a thread-local, because each session's
script runs in its own thread and the cookie component may be created only once per run.
Failed-login counters go back to the accounts file, so a lock-out holds across sessions.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from dataclasses import dataclass
from typing import Any, Literal

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from components import resources, state
from koed_core import users
from koed_core.users import Account

COOKIE_NAME = "koed_studio_auth"
EXAMPLE_KEYS = {"replace-with-a-long-random-string", "change-me", "secret", "some_key"}
MIN_KEY_LENGTH = 32
SET_KEY_HELP = (
    "Set a cookie key of at least 32 random characters: in `.streamlit/secrets.toml` as\n\n"
    '`[auth]`  \n`cookie_key = "..."`\n\nor as the environment variable `KOED_COOKIE_KEY`. '
    'Make one with `python -c "import secrets; print(secrets.token_urlsafe(32))"`.'
)
_run = threading.local()


@dataclass(frozen=True)
class AuthState:
    """What this run knows: whether accounts exist, the key problem, who is logged in."""

    accounts_exist: bool
    key_problem: str | None
    account: Account | None


def _login_error() -> type[Exception]:
    from streamlit_authenticator.utilities.exceptions import LoginError

    return LoginError


def key_problem(key: str | None) -> str | None:
    """Why the configured cookie key cannot be used, or None when it can."""
    if not key:
        return "No cookie key is set, so the rating pages stay closed."
    if key in EXAMPLE_KEYS:
        return "The cookie key is still the example value, so the rating pages stay closed."
    if len(key) < MIN_KEY_LENGTH:
        return f"The cookie key is shorter than {MIN_KEY_LENGTH} characters."
    return None


def _this_run() -> object:
    """An object that lives exactly as long as the current script run."""
    ctx = get_script_run_ctx()
    return ctx.cursors if ctx is not None else None


def start() -> AuthState:
    """Build this run's authenticator and re-login from the cookie; call once per run."""
    _run.state = _start()
    _run.marker = _this_run()
    return _run.state


def start_state() -> AuthState:
    """This run's login state: what app.py computed, or computed here.

    With a folder named ``pages/`` Streamlit runs a page script on its own (MPA v1) in
    AppTest and in a first deep-linked session, without app.py; every protected page
    therefore checks the login itself through this function.
    """
    state = getattr(_run, "state", None)
    if state is not None and getattr(_run, "marker", None) is _this_run():
        return state
    return start()


def require(role: str | None = None) -> Account:
    """The logged-in account, or a message and a stopped page (admin pages pass "admin")."""
    account = start_state().account
    if account is None:
        st.info("Log in first (Log in, in the sidebar).")
        st.stop()
    if role is not None and account.role != role:
        st.error("This page is for admins only.")
        st.stop()
    return account


def _start() -> AuthState:
    config = resources.settings()
    credentials = users.load(config.users_path)
    _run.auth = None
    problem = key_problem(config.cookie_key)
    if not credentials["usernames"] or problem:
        return AuthState(bool(credentials["usernames"]), problem, None)
    # Imported here: visitors of the public pages never pay for the login library.
    import streamlit_authenticator as stauth

    _run.credentials = credentials
    _run.before = copy.deepcopy(credentials)
    _run.auth = stauth.Authenticate(
        credentials,
        cookie_name=COOKIE_NAME,
        cookie_key=config.cookie_key,
        cookie_expiry_days=1,
        auto_hash=False,
        login_sleep_time=0,
    )
    with contextlib.suppress(_login_error()):  # a locked account just stays logged out here
        _run.auth.login(location="unrendered")
    account = None
    if state.auth_status():
        account = users.account_of(credentials, state.auth_username())
    return AuthState(True, None, account)


def login_form() -> None:
    """The login form with lock-out; wrong and locked logins get a message, never a hint."""
    auth: Any = getattr(_run, "auth", None)
    if auth is None:
        return
    locked = False
    login_error = _login_error()
    try:
        auth.login(
            location="main",
            max_login_attempts=users.MAX_FAILED_LOGINS,
            key="login",
            fields={"Form name": "Log in", "Login": "Log in"},
        )
    except login_error:
        locked = True
        st.error(
            f"This account is locked after {users.MAX_FAILED_LOGINS} failed logins. "
            "Ask an admin to unlock it (`koed users unlock NAME`)."
        )
    users.save_login_state(resources.settings().users_path, _run.before, _run.credentials)
    status = state.auth_status()
    if status is False and not locked:
        st.error("Wrong username or password.")
    elif status:
        # No st.rerun() here: it would abort this run before the cookie component reaches
        # the browser. The component's answer triggers the next run, which shows the
        # rating pages in the navigation.
        st.success("Logged in.")


def logout_button(location: Literal["main", "sidebar"] = "sidebar") -> None:
    """Log out (clears the session and the cookie); in the sidebar and on the Login page."""
    auth: Any = getattr(_run, "auth", None)
    if auth is not None and state.auth_status():
        auth.logout(button_name="Log out", location=location, key=f"{location}.logout")


def require_admin_once_accounts_exist() -> None:
    """Pages that spend API keys and write the database (Runs, Judge) are for admins as
    soon as accounts exist; before that the app is one person's and open."""
    if start_state().accounts_exist:
        require("admin")
