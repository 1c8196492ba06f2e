"""Issue 57 in Chromium at 1366x768 on the official file (an extra check on real data,
as the other official-file tests): links and the Explorer's layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, serve

WIDTH, HEIGHT = 1366, 768


def test_links_on_the_official_file(tmp_path: Path, official_file: Path, browser: Any) -> None:
    """/dialogues is the Explorer; a link's values the page cannot use (a sample id on the
    official file, an unknown label, turns 9-1) are named in a notice that stays."""
    from playwright.sync_api import expect

    server = serve(tmp_path, {"KOED_DATA": str(official_file)})
    url = next(server)
    try:
        page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
        page.goto(url + "/")  # the server's first page (DESIGN's trap), then the link
        expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible(timeout=120_000)
        page.goto(url + "/dialogues?d=sample:1_conv:1&labels=notalabel&labels=sad&turns=9&turns=1")
        expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible(timeout=60_000)
        notice = page.get_by_test_id("stAlert").filter(has_text="was left out")
        for _read in (1, 2):  # settled, and 3 s later
            steps.settled(page)
            expect(notice).to_be_visible()
            text = notice.inner_text()
            for value in ("d=sample:1_conv:1", "labels=notalabel", "turns=9-1"):
                assert value in text, text
            assert page.get_by_text("Page not found").count() == 0
            assert page.get_by_test_id("stException").count() == 0
            page.wait_for_timeout(3000)
        # the values left out are not applied either: the good one is
        expect(page.get_by_text("Filter: emotion has all of sad", exact=True)).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "round4_link_notice.png"))
    finally:
        server.close()
