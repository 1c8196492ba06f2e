"""The very first request after a server start: a deep link opens its page, and an
address that is no page says so in the reader's language, with no Streamlit dialog.

Until ``st.navigation`` has run once in a process, Streamlit 1.x treats a folder named
``pages/`` beside the entry script as its old multipage mode: a first deep link to a
page in a section folder met Streamlit's English "Page not found" modal (the trap
DESIGN.md's Layout names), and an unknown address met it on top of our own page. The
page scripts live in ``app_pages/`` for that reason (no stand-ins needed any more);
tests/test_page_roles.py keeps a ``pages/`` folder from coming back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from koed_core.paths import SAMPLE_FILE
from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, serve

FIRST_REQUESTS = [
    ("/overview", "Label overview"),
    ("/agreement", "Judge-human agreement"),
    ("/nope?lang=ko", "페이지를 찾을 수 없습니다"),  # our own page, in Korean
]


@pytest.mark.parametrize("link, heading", FIRST_REQUESTS, ids=["overview", "agreement", "nope"])
def test_the_first_request_after_a_start_opens_its_page_and_no_dialog(
    tmp_path: Path, browser: Any, link: str, heading: str
) -> None:
    from playwright.sync_api import expect

    for url in serve(tmp_path, {"KOED_DATA": str(SAMPLE_FILE)}):  # fresh: no accounts
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(url + link)
        expect(page.get_by_role("heading", name=heading)).to_be_visible()

        def check(page: Any = page) -> None:  # this turn's tab
            assert page.get_by_text("Page not found").count() == 0
            assert page.get_by_role("dialog").count() == 0
            assert page.get_by_test_id("stException").count() == 0
            assert page.get_by_test_id("stTopNav").count() == 1  # app.py's navigation

        steps.settled_and_later(page, 3, check)  # Streamlit's modal came after the page
        shot = link.strip("/").split("?")[0]
        page.screenshot(path=str(ARTIFACTS / f"first_visit_{shot}.png"))
        page.close()
