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


UNREAD_VALUES = [  # (address, the notice in the page's language)
    ("/overview?lang=xx", "The link's lang=xx was left out: not one of ko, en."),
    (
        "/gap?lang=ko&talk=maybe",
        "링크의 talk=maybe은(는) 제외했습니다: true, false 중 하나가 아님.",
    ),
    ("/demo?talk=Maybe", "The link's talk=Maybe was left out: not one of true, false."),
]


@pytest.mark.parametrize("address, notice", UNREAD_VALUES, ids=["lang-en", "talk-ko", "talk-demo"])
def test_a_link_value_no_page_reads_is_named_not_dropped(
    site: Visit, browser: Any, address: str, notice: str
) -> None:
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(site.url + "/")  # the server and this tab drew a page before
    steps.settled(page)
    page.goto(site.url + address)
    expect(page.get_by_text(notice)).to_be_visible()

    def check() -> None:  # still said after the reruns that rewrite the address
        assert page.get_by_text(notice).count() == 1
        assert page.get_by_test_id("stException").count() == 0

    steps.settled_and_later(page, 3, check)
    korean = "lang=ko" in address
    steps.navigate(page, *(("대화", "탐색") if korean else ("Dialogues", "Explorer")))
    heading = "대화 탐색" if korean else "Dialogue explorer"
    expect(page.get_by_role("heading", name=heading)).to_be_visible()
    steps.settled(page)
    assert page.get_by_text(notice).count() == 0  # said on the page the link opened
