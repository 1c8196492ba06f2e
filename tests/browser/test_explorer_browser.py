"""The Explorer, Chat, Rate and Gap pages as a visitor and a rater use them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fixtures.fake_openai import FakeOpenAI
from tests.browser import steps
from tests.browser.conftest import (
    ARTIFACTS,
    HUMAN_EN,
    RATER_PASSWORD,
)


def test_explorer_in_a_real_browser(fresh_site: str, fake_openai: FakeOpenAI, browser: Any) -> None:
    """On a site of its own: the Gap page it ends on charts what the seed holds, and no
    other test's runs, projects or ratings."""
    from playwright.sync_api import expect

    server = fresh_site
    requests_at_start = len(fake_openai.requests)
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    page.set_default_timeout(30_000)
    page.goto(server + "/")
    expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
    expect(page.get_by_text("34 of 34 dialogues match")).to_be_visible()

    # Typing a label and Enter picks that label, not every label it matches.
    labels = page.get_by_test_id("stMultiSelect").locator("input")
    labels.fill("sad")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    expect(page.get_by_text("Filter: emotion has all of sad")).to_be_visible()
    page.get_by_test_id("stMultiSelect").get_by_role("button", name="Clear all").click()
    expect(page.get_by_text("34 of 34 dialogues match")).to_be_visible()

    # Filter by a combination: exactly {afraid, anxious}.
    labels = page.get_by_test_id("stMultiSelect").locator("input")
    for name in ("afraid", "anxious"):
        labels.fill(name)
        page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.get_by_test_id("stSidebar").get_by_text("exact", exact=True).click()
    expect(page.get_by_text("1 of 34 dialogues match")).to_be_visible()
    expect(page.get_by_text("Filter: emotion is exactly afraid, anxious")).to_be_visible()

    # The filtered CSV opens in Excel as Korean: UTF-8 with a byte-order mark.
    csv_button = page.get_by_role("button", name="CSV (one row per turn)")
    expect(csv_button).to_be_enabled()
    body = steps.download(page, csv_button)
    assert body.startswith(b"\xef\xbb\xbf") and "어젯밤".encode() in body

    # Open one dialogue; both languages show, Korean-only turns marked.
    picker = page.get_by_test_id("stSelectbox").locator("input")
    picker.fill("sample:1_conv:1")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Dialogue sample:1_conv:1")).to_be_visible()
    expect(page.get_by_text("어젯밤에 야근하고 집에 가는데", exact=False)).to_be_visible()
    expect(page.get_by_text("I was walking home after working late")).to_be_visible()
    expect(page.get_by_text("Korean-only turn: added in the reconstruction")).to_have_count(2)
    assert page.get_by_test_id("stException").count() == 0
    steps.settled(page)
    page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)

    # The URL holds the view: a new tab on the same link shows the same dialogue.
    # The address is written by the browser after the run that drew the dialogue: wait
    # for it, as a person copying the link would.
    expect(page).to_have_url(re.compile(r"[?&]d=sample(%3A|:)1_conv(%3A|:)1(&|$)"))
    link = page.url
    assert "labels=afraid" in link and "labels=anxious" in link and "mode=exact" in link
    second = browser.new_page(viewport={"width": 1400, "height": 1400})
    second.goto(link)
    expect(second.get_by_text("1 of 34 dialogues match")).to_be_visible(timeout=30_000)
    expect(second.get_by_text("Dialogue sample:1_conv:1")).to_be_visible()
    second.close()

    # Chat: from the dialogue to the Chat page. A visitor may use the offline models
    # only (here the human reference), never one that spends the server's key.
    page.get_by_text("Chat with models about this dialogue").click()
    expect(page.get_by_role("heading", name="Chat with models on KoED")).to_be_visible()
    models = page.get_by_test_id("stMultiSelect").locator("input")
    models.fill("fake-listener")
    expect(page.get_by_text("No results")).to_be_visible()
    models.fill("human")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Answer as the Listener").click()
    expect(page.get_by_text("human · ko")).to_be_visible()
    expect(page.get_by_text(HUMAN_EN)).to_be_visible()
    assert len(fake_openai.requests) == requests_at_start  # the paid model was never asked
    assert page.get_by_test_id("stException").count() == 0
    steps.settled(page)
    page.screenshot(path=str(ARTIFACTS / "chat.png"), full_page=True)

    # Rating: log in as a rater, rate one item, see the progress move.
    steps.navigate(page, "Account", "Log in")
    page.get_by_label("Username").fill("mina")
    page.get_by_role("textbox", name="Password").fill(RATER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text("Logged in as Mina (rater).")).to_be_visible()
    steps.navigate(page, "Rating", "Rate responses")
    expect(page.get_by_text("0 of 13 rated")).to_be_visible()
    radios = page.get_by_test_id("stRadio")
    expect(radios).to_have_count(5)
    for i in range(5):
        radios.nth(i).get_by_text("4", exact=True).click()
    page.get_by_role("button", name="Submit rating").click()
    expect(page.get_by_text("1 of 13 rated")).to_be_visible()
    assert page.get_by_test_id("stException").count() == 0
    page.screenshot(path=str(ARTIFACTS / "rating.png"), full_page=True)

    # The gap: the fake run's emotion recognition, ko minus en, charted.
    steps.navigate(page, "Results", "Empathy gap")
    expect(page.get_by_role("heading", name="The cultural empathy gap")).to_be_visible()
    # a rater sees no figure from the study still being rated: emotion recognition only
    sources = page.get_by_test_id("stSelectbox").filter(has_text="Scores from")
    sources.click()
    expect(page.get_by_role("option", name="emotion")).to_be_visible()
    expect(page.get_by_role("option", name="raters")).to_have_count(0)
    page.keyboard.press("Escape")
    chart = page.get_by_test_id("stPlotlyChart")
    expect(chart).to_be_visible()
    expect(chart.locator(".main-svg").first).to_be_visible()
    expect(chart.get_by_text("fake-listener (korean-centric)")).to_be_visible()
    assert page.get_by_test_id("stException").count() == 0
    page.screenshot(path=str(ARTIFACTS / "gap.png"), full_page=True)

    page.reload()  # the login cookie logs the rater back in
    expect(page.get_by_text("Logged in: Mina (rater)")).to_be_visible()


def test_the_whole_official_file_downloads_from_a_fresh_server(
    tmp_path: Path, official_file: Path, browser: Any
) -> None:
    """More than 200 dialogues take the on-demand path (the file is made when the button
    is pressed): on a server that has served nothing yet, the whole official file comes
    down as CSV (a row per turn) and as JSONL (a line per dialogue), complete."""
    import csv
    import io
    import json

    from koed_core.dialogues.dataset import load_dataset
    from tests.browser.conftest import serve

    dataset = load_dataset(official_file)
    turns = sum(len(d.turns) for d in dataset.dialogues)
    server = serve(tmp_path, {"KOED_DATA": str(official_file)})
    url = next(server)
    try:
        page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
        page.goto(url + "/")
        steps.settled(page)
        page.get_by_text("1,360 of 1,360 dialogues match").wait_for()
        raw = steps.download(page, page.get_by_role("button", name="CSV (one row per turn)"))
        rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
        assert len({r["conv_id"] for r in rows}) == 1360 and len(rows) == turns
        raw = steps.download(page, page.get_by_role("button", name="JSONL (one dialogue per line)"))
        lines = raw.decode("utf-8").splitlines()
        assert len(lines) == 1360
        assert {json.loads(line)["conv_id"] for line in lines} == {
            d.conv_id for d in dataset.dialogues
        }
    finally:
        server.close()


def test_the_dialogue_picker_names_the_dialogue_shown(site: Any, browser: Any) -> None:
    """The picker once named another dialogue than the one drawn. Through
    reloads of shared links, row clicks and a filter that drops the open dialogue, the
    picker and the dialogue's heading agree once the page has settled, and still 2 s later
    (the picker's value and the dialogue drawn come from one variable in one run; what a
    run in progress shows faded is not a settled state)."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.set_default_timeout(30_000)
    picker = page.get_by_role("combobox", name="Open a dialogue")

    def agree(conv_id: str | None) -> None:
        def check() -> None:
            shown = page.get_by_role("heading", name=re.compile(r"^Dialogue sample:"))
            if conv_id is None:
                expect(shown).to_have_count(0)
                expect(picker).to_have_value("")
            else:
                expect(shown).to_have_text(f"Dialogue {conv_id}")
                expect(picker).to_have_value(conv_id)

        steps.settled_and_later(page, 2, check)

    for n in (1, 5, 9, 2, 7):  # a shared link, opened afresh each time
        page.goto(f"{site.url}/?lang=en&d=sample:1_conv:{n}")
        agree(f"sample:1_conv:{n}")
    grid = page.get_by_test_id("stDataFrame")
    for row in (3, 1):  # a click on a row's checkbox opens that row's dialogue
        before = picker.input_value()
        grid.scroll_into_view_if_needed()  # under the dialogue opened before
        box = grid.bounding_box()
        assert box is not None
        page.mouse.click(box["x"] + 20, box["y"] + 38 + 66 * row - 33)
        # the click's run has begun once the picker moves; then it must settle in step
        page.wait_for_function(
            """before => document.querySelector('input[aria-label="Open a dialogue"]')
                ?.value !== before""",
            arg=before,
        )
        conv_id = picker.input_value()
        assert conv_id == f"sample:1_conv:{row}", conv_id
        agree(conv_id)
    page.goto(f"{site.url}/?lang=en&d=sample:1_conv:1&q=hospital")  # filtered out
    steps.settled(page)
    expect(page.get_by_text("of 34 dialogues match")).to_be_visible()
    agree(None)
    page.close()
