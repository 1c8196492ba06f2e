"""Every address answers in the reader's language, whatever the server served before:
a mistyped page, and a link value no page can use (``?lang=xx``, ``?talk=maybe``).

The first request after a server start is tests/browser/test_first_visit_browser.py's;
here the server has already drawn other pages, and the site has accounts, so the login
cookie's component answers after the first run and makes a second one (which named the
page by its hash and fell back to the Explorer without a word).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import steps
from tests.browser.conftest import Visit

BAD_ADDRESSES = [
    ("/nope", "Page not found", "There is no page at /nope in KoED Studio"),
    ("/nope?lang=ko", "페이지를 찾을 수 없습니다", "/nope"),
]


@pytest.mark.parametrize("address, heading, says", BAD_ADDRESSES, ids=["en", "ko"])
def test_a_mistyped_address_says_so_after_other_pages_were_served(
    site: Visit, browser: Any, address: str, heading: str, says: str
) -> None:
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    for served in ("/", "/overview"):  # this server, and this tab, drew pages before
        page.goto(site.url + served)
        steps.settled(page)
    for _ in range(2):  # typed again: the second time is a reload of the same address
        page.goto(site.url + address)
        expect(page.get_by_role("heading", name=heading)).to_be_visible()

        def check() -> None:
            assert page.get_by_role("heading", name=heading).count() == 1
            assert page.get_by_text(says).count() >= 1
            assert page.get_by_role("heading", name="Dialogue explorer").count() == 0
            assert page.get_by_role("heading", name="대화 탐색").count() == 0
            assert page.get_by_test_id("stException").count() == 0

        steps.settled_and_later(page, 3, check)  # the cookie's rerun came after the page
