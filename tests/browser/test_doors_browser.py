"""Who may open what: lockouts, blindness, logout everywhere, a forged cookie."""

from __future__ import annotations

import time
from typing import Any

from koed_core.rating import accounts as users
from tests.browser import steps
from tests.browser.conftest import (
    ADMIN_PASSWORD,
    RATER_PASSWORD,
    Visit,
)


def test_doors_hold_in_a_real_browser(site: Visit, browser: Any) -> None:
    import jwt
    from playwright.sync_api import expect

    server = site.url

    accounts = site.site.accounts
    first = browser.new_context().new_page()
    first.goto(server + "/")  # a visitor opens the app at its root
    expect(first.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
    first.goto(server + "/runs")  # an admin's page, by a visitor: said, not silently away
    expect(first.get_by_text("Runs is an admin's page: log in")).to_be_visible()

    # Six sessions post wrong passwords for the admin at the same moment: every one counts,
    # so the fifth locks the account (tests/test_users.py does ten threads at once too).
    pages = [browser.new_context().new_page() for _ in range(users.MAX_FAILED_LOGINS + 1)]
    for page in pages:
        page.goto(server + "/login")
        expect(page.get_by_label("Username")).to_be_visible()
    for n, page in enumerate(pages):
        page.get_by_label("Username").fill(site.admin)
        page.get_by_role("textbox", name="Password").fill(f"wrong-{n}")
    for page in pages:
        page.get_by_role("button", name="Log in").click(no_wait_after=True)
    for page in pages:
        expect(page.get_by_text("Wrong username or password.")).to_be_visible()
    assert users.load(accounts)["usernames"][site.admin]["locked_until"] > time.time()
    steps.log_in(pages[0], site.admin, ADMIN_PASSWORD)  # right, but waiting: the same answer
    expect(pages[0].get_by_text("Wrong username or password.")).to_be_visible()
    steps.log_in(pages[1], "nobody", "whatever-password")  # unknown: the same answer
    expect(pages[1].get_by_text("Wrong username or password.")).to_be_visible()
    assert "Logged in" not in pages[0].content()

    # A rater stays blind to results while the study is open.
    rater = browser.new_context()
    page = rater.new_page()
    page.goto(server + "/login")
    expect(page).to_have_title("Log in · KoED Studio")
    steps.log_in(page, site.rater, RATER_PASSWORD)
    expect(page.get_by_text("Logged in as Mina (rater).")).to_be_visible()
    steps.settled(page)
    expect(page).to_have_title("Account · KoED Studio")  # the tab follows the login
    page.wait_for_function(  # the run after the login has written the cookie
        "() => document.cookie.split('; ').some(c => c.startsWith('koed_studio_auth='))"
    )
    page.goto(server + "/agreement")
    expect(page.get_by_text("No published human ratings yet")).to_be_visible()
    assert page.get_by_test_id("stDataFrame").count() == 0
    cookies = rater.cookies()
    assert any(c["name"] == "koed_studio_auth" for c in cookies)

    # Logout ends the session everywhere: a copy of the cookie made before is dead.
    page.goto(server + "/login")
    for attempt in (1, 2):  # a click that lands while the page's first run redraws
        steps.settled(page)
        if page.get_by_label("Username").count():
            break  # the first click did log out, only late
        page.get_by_role("button", name="Log out").first.click()
        try:
            expect(page.get_by_label("Username")).to_be_visible(
                timeout=15_000 if attempt == 1 else 30_000
            )
            break
        except AssertionError:
            if attempt == 2:
                raise
    copied = browser.new_context()
    copied.add_cookies(cookies)
    stolen = copied.new_page()
    stolen.goto(server + "/")
    expect(stolen.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
    steps.expect_in_menu(stolen, "Account", "Log in")
    assert stolen.get_by_text("Logged in: Mina").count() == 0

    # A forged token (alg "none") is just "logged out": no traceback, no server paths.
    forged = jwt.encode(
        {"username": site.admin, "exp_date": time.time() + 3600}, key=None, algorithm="none"
    )
    attacker = browser.new_context()
    host = server.split("//", 1)[1].split(":")[0]
    attacker.add_cookies(
        [{"name": "koed_studio_auth", "value": forged, "domain": host, "path": "/"}]
    )
    evil = attacker.new_page()
    evil.goto(server + "/")
    expect(evil.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
    steps.expect_in_menu(evil, "Account", "Log in")
    assert evil.get_by_test_id("stException").count() == 0
    assert "Traceback" not in evil.content()
    assert "site-packages" not in evil.content()  # no server paths from a stack


GUARDED_LINKS = {
    "/runs": "Runs is an admin's page",
    "/judge": "Judge is an admin's page",
    "/studies": "Studies is an admin's page",
    "/dashboard": "Study dashboard is an admin's page",
    "/projects": "Annotation projects is an admin's page",
    "/rate": "Rate responses is a rater's page",
    "/annotate": "Annotate is an annotator's page",
}


def test_a_link_to_a_guarded_page_says_whose_page_it_is_and_stays(
    site: Visit, browser: Any
) -> None:
    """A visitor opens each guarded page by its address (a link from an e-mail): the hint
    naming whose page it is and the login form are there once the page has settled and
    still there three seconds later, and Streamlit's "Page not found" never is. An old
    /explorer?... link opens the Explorer with its filters."""
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    for path, hint in GUARDED_LINKS.items():
        page.goto(site.url + path)

        def hint_and_form(hint: str = hint) -> None:  # this turn's hint
            expect(page.get_by_text(hint)).to_be_visible()
            expect(page.get_by_label("Username")).to_be_visible()

        steps.settled_and_later(page, 3, hint_and_form)
        assert page.url.split("?")[0].endswith(path), page.url
        body = page.inner_text("body")
        assert "Page not found" not in body and "does not seem to exist" not in body, path
    page.goto(site.url + "/explorer?q=rain")
    steps.settled(page)
    expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
    steps.later(page, 3)
    steps.settled(page)
    assert "Page not found" not in page.inner_text("body")
    assert page.get_by_role("textbox", name="Text contains").input_value() == "rain"
