"""Login (our own form, server-side session checks and a signed login cookie) and the
results viewer built from it once per run.

app.py calls :func:`start` once per run. A session is logged in by the form (password
checked and failures counted atomically in the accounts file, the same answer for every
failure) or by the login cookie (an HS256 token signed with the cookie key, decoded here:
any other token is just "logged out"). Either way the server checks on every run that
the account still exists, is not locked or waiting out a back-off, and that no logout
since then revoked its sessions, so a copied cookie dies with the logout.

The cookie is written by a one-way script in the browser (``st.html``), in the run after
the login or logout that asked for it; nothing answers back. streamlit-authenticator's
cookie component, which did this before, answered once in every session it was drawn in,
and its answer started a new run of the page: drawn on every run, it ran each full reload
twice (bench/pages.py); drawn beside the login form only, its answer could stop the very
run that was checking the password, and the login was lost (a login click "did nothing"
in the browser tests under load). Writing a cookie needs no answer, so no component.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from components.core import resources, state
from koed_core.i18n import N_, _
from koed_core.rating import accounts
from koed_core.rating.accounts import Account
from koed_core.results.viewer import Viewer, viewer_for

COOKIE_NAME = "koed_studio_auth"
EXAMPLE_KEYS = {"replace-with-a-long-random-string", "change-me", "secret", "some_key"}
MIN_KEY_LENGTH = 32
COOKIE_DAYS = 1
SET_KEY_HELP = N_(
    "Set a cookie key of at least 32 random characters: in `.streamlit/secrets.toml` as\n\n"
    '`[auth]`  \n`cookie_key = "..."`\n\nor as the environment variable `KOED_COOKIE_KEY`. '
    'Make one with `python -c "import secrets; print(secrets.token_urlsafe(32))"`.'
)
_run = threading.local()
_COOKIE_WRITE = "_koed_cookie_write"
"""Session-state key of the cookie the next run writes in the browser."""


@dataclass(frozen=True)
class AuthState:
    """What this run knows: whether accounts exist, what blocks login, who is logged in."""

    accounts_exist: bool
    key_problem: str | None
    account: Account | None
    accounts_problem: str | None = None
    """A configured accounts file that cannot be used: protected pages stay closed."""


def key_problem(key: str | None) -> str | None:
    """Why the configured cookie key cannot be used, or None when it can."""
    if not key:
        return _("No cookie key is set, so the rating pages stay closed.")
    if key in EXAMPLE_KEYS:
        return _("The cookie key is still the example value, so the rating pages stay closed.")
    if len(key) < MIN_KEY_LENGTH:
        return _("The cookie key is shorter than {n} characters.", n=MIN_KEY_LENGTH)
    return None


def _this_run() -> object:
    """An object that lives exactly as long as the current script run."""
    ctx = get_script_run_ctx()
    return ctx.cursors if ctx is not None else None


def start() -> AuthState:
    """Check the login for this run; call once per run (app.py does)."""
    _run.state = _start()
    _run.marker = _this_run()
    return _run.state


def start_state() -> AuthState:
    """This run's login state: what app.py computed, or computed here (a page run alone)."""
    found = getattr(_run, "state", None)
    if found is not None and getattr(_run, "marker", None) is _this_run():
        return found
    return start()


def require(role: str | None = None) -> Account:
    """The logged-in account, or a message and a stopped page (admin pages pass "admin")."""
    current = start_state()
    if current.accounts_problem:
        st.error(_("Accounts are misconfigured, so this page is closed. Ask the operator."))
        st.stop()
    account = current.account
    if account is None:
        st.info(_("Log in first (Account → Log in, in the menu along the top)."))
        st.stop()
    if role is not None and account.role != role:
        st.error(_("This page is for admins only."))
        st.stop()
    return account


def require_admin_once_accounts_exist() -> None:
    """Pages that spend API keys and write the database (Runs, Judge) are for admins as
    soon as accounts exist (or are configured); before that the app is one person's."""
    if start_state().accounts_exist:
        require("admin")


def is_admin() -> bool:
    """May this session see everything and spend keys? Yes for an admin, and for anyone
    while no accounts exist (one person's app); never when the accounts file is broken."""
    current = start_state()
    if current.accounts_problem:
        return False
    if not current.accounts_exist:
        return True
    return current.account is not None and current.account.role == "admin"


def viewer() -> Viewer:
    """Who is looking at results in this run, built once per run from the login: an admin
    (or anyone while no accounts exist) sees everything, anyone else what a visitor sees
    (no run or rating of a study still being rated). Results pages pass it to every
    ``computed`` function and ask it before showing anything else."""
    marker = _this_run()
    if marker is not None and getattr(_run, "viewer_marker", None) is marker:
        found: Viewer = _run.viewer
        return found
    account = start_state().account
    role = "admin" if is_admin() else account.role if account is not None else "visitor"
    _run.viewer = viewer_for(role, resources.store())
    _run.viewer_marker = marker
    return _run.viewer


def username() -> str | None:
    """The logged-in account's name, or None."""
    account = start_state().account
    return account.username if account else None


def _start() -> AuthState:
    config = resources.settings()
    try:
        credentials = accounts.load(config.users_path, required=config.users_configured)
    except accounts.AccountsError as err:
        return AuthState(True, None, None, str(err))
    problem = key_problem(config.cookie_key)
    if not credentials["usernames"] or problem:
        return AuthState(bool(credentials["usernames"]), problem, None)
    return AuthState(True, None, _session_account(credentials, str(config.cookie_key)))


def _session_account(credentials: dict[str, Any], key: str) -> Account | None:
    """The account of this session, checked against the accounts file on every run."""
    username, since = state.auth_username(), state.auth_since()
    if not (state.auth_status() and username):
        token = _cookie_token(key)
        if token is None:
            return None
        username, since = token["username"], token["exp_date"] - COOKIE_DAYS * 86400
        account = accounts.account_of(credentials, username)
        state.set_login(username, account.name if account else username, since)
    if accounts.session_valid(credentials, username, since or 0.0, time.time()):
        return accounts.account_of(credentials, username)
    end_session()
    return None


def _cookie_token(key: str) -> dict[str, Any] | None:
    """The login cookie's claims if it is an unexpired HS256 token signed with our key."""
    import jwt

    raw = st.context.cookies.get(COOKIE_NAME)
    if not raw:
        return None
    try:
        token = jwt.decode(raw, key, algorithms=["HS256"])
    except jwt.PyJWTError:
        return None
    expiry = token.get("exp_date") if isinstance(token, dict) else None
    if not isinstance(token.get("username"), str) or not isinstance(expiry, int | float):
        return None
    return token if expiry > time.time() else None


def end_session() -> None:
    """Forget the login in this session and ask the browser to drop the cookie (always:
    ``st.context.cookies`` holds the cookies the session started with, not one a login in
    this same session wrote since)."""
    state.clear_login()
    st.session_state[_COOKIE_WRITE] = f"{COOKIE_NAME}=; Max-Age=0"


def set_login_cookie(username: str) -> None:
    """Ask the browser to keep the login cookie: an HS256 token (PyJWT) with the username
    and its expiry, signed with the cookie key, written by the next run (st.rerun() after
    this, so the menu follows the login too)."""
    import jwt

    key = resources.settings().cookie_key
    if not key or key_problem(key):
        return
    seconds = COOKIE_DAYS * 86400
    token = jwt.encode(
        {"username": username, "exp_date": time.time() + seconds}, str(key), algorithm="HS256"
    )
    st.session_state[_COOKIE_WRITE] = f"{COOKIE_NAME}={token}; Max-Age={seconds}"


def write_pending_cookie() -> None:
    """Write (or drop) the cookie a login or logout asked for, once: app.py calls this
    after :func:`start` on every run. A one-way script in the sidebar; the token holds
    only base64url characters and dots, and the line is JSON-quoted as a whole."""
    cookie = st.session_state.pop(_COOKIE_WRITE, None)
    if not cookie:
        return
    line = json.dumps(f"{cookie}; Path=/; SameSite=Strict")
    st.sidebar.html(
        f"<script>document.cookie = {line} + "
        "(location.protocol === 'https:' ? '; Secure' : '');</script>",
        unsafe_allow_javascript=True,
    )
