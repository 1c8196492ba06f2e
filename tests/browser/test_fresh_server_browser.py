"""What a fresh server does first: a deep link as its first request, the offline default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from koed_core.paths import SAMPLE_FILE
from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, login_cookie, serve


@pytest.fixture
def plain_server(tmp_path: Path) -> Iterator[str]:
    """The app as the README starts it: shipped models.toml, no accounts, empty database."""
    yield from serve(tmp_path, {"KOED_DATA": str(SAMPLE_FILE)})


@pytest.mark.parametrize(
    "who, path, heading",
    [
        (None, "/gap?talk=true", "The cultural empathy gap"),
        ("mina", "/rate", "Rate responses"),
        ("boss", "/studies", "Studies"),
    ],
)
def test_a_deep_link_is_the_first_request_after_a_start(
    fresh_site: str, browser: Any, who: str | None, path: str, heading: str
) -> None:
    from playwright.sync_api import expect

    server = fresh_site

    context = browser.new_context(viewport={"width": 1280, "height": 720})
    if who:  # a login cookie from an earlier visit, as a returning rater or admin has
        context.add_cookies([login_cookie(server, who)])  # type: ignore[list-item]
    page = context.new_page()
    page.goto(server + path)  # nothing else has been served since the start
    expect(page.get_by_role("heading", name=heading)).to_be_visible()
    steps.settled(page)
    assert page.get_by_text("Page not found").count() == 0
    sidebar = page.get_by_test_id("stSidebar")
    if who:  # the app's own sections, not Streamlit's list of file names
        menu = page.get_by_test_id("stTopNav")
        expect(
            menu.get_by_text("Dialogues" if who == "boss" else "Rating", exact=True)
        ).to_be_visible()
        expect(sidebar.get_by_text(f"Logged in: {who.title()}", exact=False)).to_be_visible()
    else:  # talk mode: no sidebar at all
        expect(page.get_by_role("switch", name="Talk mode")).to_be_checked()
    assert page.get_by_test_id("stException").count() == 0
    page.screenshot(path=str(ARTIFACTS / f"first_link_{who or 'visitor'}.png"))


def test_the_offline_default_answers_on_a_fresh_server(
    embedded_copy: dict[str, bool], plain_server: str, browser: Any
) -> None:
    # The no-key default, both panes (ko and en), as the first thing a visitor does (the
    # server loads the copy of SmolLM2 this run converted once: tests/conftest.py).
    from playwright.sync_api import expect

    expect.set_options(timeout=180_000)  # SmolLM2 on two CPU cores: seconds per answer
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.goto(plain_server + "/chat")
    expect(page.get_by_role("heading", name="Chat with models on KoED")).to_be_visible()
    tokens = page.get_by_label("Max new tokens")
    tokens.fill("16")
    tokens.press("Enter")  # the widget's value goes with the button's click that follows
    expect(tokens).to_have_value("16")
    steps.settled(page)
    page.get_by_role("button", name="Answer as the Listener").click()
    answers = page.get_by_test_id("stChatMessage")
    expect(answers).to_have_count(2)
    expect(page.get_by_text("smollm2 · ko")).to_be_visible()
    expect(page.get_by_text("smollm2 · en")).to_be_visible()
    for n in range(2):
        assert answers.nth(n).inner_text().strip()
    assert page.get_by_test_id("stException").count() == 0
    assert "ImportError" not in page.content()
    page.screenshot(path=str(ARTIFACTS / "offline_chat.png"), full_page=True)
