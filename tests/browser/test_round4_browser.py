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


def test_the_explorer_on_the_official_file_fits_a_laptop(
    tmp_path: Path, official_file: Path, browser: Any
) -> None:
    """1,360 dialogues at 1366x768, English and Korean: the table inside the screen, its
    situations previews that fit their cells, an opened dialogue starting above the fold."""
    from playwright.sync_api import expect

    from koed_core.dialogues.dataset import load_dataset

    dataset = load_dataset(official_file)
    conv = max(dataset.dialogues, key=lambda d: len(d.situation_en)).conv_id  # the longest
    server = serve(tmp_path, {"KOED_DATA": str(official_file)})
    url = next(server)
    try:
        page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
        for lang, heading, opened in (
            ("en", "Dialogue explorer", f"Dialogue {conv}"),
            ("ko", "대화 탐색", f"대화 {conv}"),
        ):
            page.goto(f"{url}/?lang={lang}")
            expect(page.get_by_role("heading", name=heading)).to_be_visible(timeout=120_000)
            grid = page.locator("[data-testid=stDataFrame]:visible").first
            expect(grid).to_be_visible()
            page.wait_for_timeout(2000)
            grid.screenshot(path=str(ARTIFACTS / f"round4_explorer_table_{lang}.png"))
            page.goto(f"{url}/?lang={lang}&d={conv}")  # a link to the longest situation
            title = page.get_by_role("heading", name=opened).first
            for _read in (1, 2):  # settled, and 3 s later
                steps.settled(page)
                expect(title).to_be_visible()
                box = title.bounding_box()
                # on screen, below the menu along the top (about 60 px)
                assert box is not None and 56 <= box["y"] <= HEIGHT - box["height"], box
                table = grid.bounding_box()
                assert table is not None and table["x"] + table["width"] <= WIDTH, table
                assert page.get_by_test_id("stException").count() == 0
                page.wait_for_timeout(3000)
            page.screenshot(path=str(ARTIFACTS / f"round4_explorer_official_{lang}.png"))
            grid.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"round4_explorer_official_{lang}_table.png"))
    finally:
        server.close()
