"""Talk mode on a projector: the gap chart, the demo and an episode replay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.fake_openai import FakeOpenAI
from koed_core.dialogues.dataset import load_dataset
from koed_core.models.backends import make_client
from koed_core.models.registry import ModelSpec
from koed_core.models.request import EpisodeRequest
from koed_core.paths import SAMPLE_FILE
from tests.browser import steps
from tests.browser.conftest import (
    ARTIFACTS,
    EN_REPLY,
    Visit,
    login_cookie,
    seed_site,
    serve,
)


@pytest.fixture(scope="module")
def talk_site(tmp_path_factory: pytest.TempPathFactory, session_fake: FakeOpenAI) -> Iterator[str]:
    """The seeded site on a server of its own, shared by the projector sizes: the chart's
    default source is the judge or the emotion reader, never a rating another test left in
    the shared site's open study (and these visits only read)."""
    folder: Path = tmp_path_factory.mktemp("talk")
    yield from serve(folder, seed_site(folder, session_fake))


@pytest.mark.parametrize("width, height", [(1280, 720), (1920, 1080)])
def test_talk_mode_fits_a_projector(talk_site: str, browser: Any, width: int, height: int) -> None:
    """On a site of its own (see talk_site), at two projectors' sizes."""
    from playwright.sync_api import expect

    server = talk_site
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_cookies([login_cookie(server, "boss")])  # type: ignore[list-item]
    page = context.new_page()
    page.goto(server + "/gap?talk=true")
    chart = page.get_by_test_id("stPlotlyChart").first
    expect(chart).to_be_visible()
    steps.settled(page)
    # the chart is redrawn to its box after the page has settled (talk mode's own script)
    page.wait_for_function(
        """(least) => {
             const svg = document.querySelector('.st-key-talk_chart .main-svg');
             return svg !== null && Number(svg.getAttribute('height')) >= least;
           }""",
        arg=0.66 * height,
    )
    # the whole chart (axis titles, ticks, legend) is on screen without scrolling, and
    # uses the screen: two thirds of its height or more, whatever the projector
    box = chart.bounding_box()
    assert steps.inside(box, width, height) and box["height"] >= 0.66 * height, box
    svg = chart.locator(".main-svg").first
    assert float(svg.get_attribute("height") or 0) >= 0.66 * height  # drawn, not padded
    shown = page.evaluate(  # no box around the chart cuts it short
        """() => [...document.querySelectorAll('.st-key-talk_chart *')].filter(e =>
             e.contains(document.querySelector('.st-key-talk_chart .main-svg')))
             .map(e => e.getBoundingClientRect().height)"""
    )
    assert min(shown) >= 0.66 * height, shown
    legend = chart.locator(".legend").first
    assert steps.inside(legend.bounding_box(), width, height)
    assert legend.bounding_box()["y"] >= 0.6 * height  # under bars that fill the screen
    page.screenshot(path=str(ARTIFACTS / f"talk_gap_{width}.png"))

    page.goto(server + "/demo?talk=true")
    play = page.get_by_role("button", name="Play")
    expect(play).to_be_visible()
    assert steps.inside(play.bounding_box(), width, height)
    assert page.get_by_text(EN_REPLY).count() == 0  # nothing shown before Play
    answer = page.get_by_text(EN_REPLY).first
    for attempt in (1, 2):  # a click that lands while the first run redraws is made again
        steps.settled(page)
        play.click()
        try:
            expect(answer).to_be_visible(timeout=20_000 if attempt == 1 else 30_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    steps.settled(page)
    page.screenshot(path=str(ARTIFACTS / f"talk_demo_{width}.png"))
    assert steps.inside(answer.bounding_box(), width, height), answer.bounding_box()

    def replay_said() -> None:  # the room reads that this is a replay
        notice = page.get_by_text("Replay of stored answers").first
        expect(notice).to_be_visible()
        assert steps.inside(notice.bounding_box(), width, height), notice.bounding_box()

    steps.settled_and_later(page, 3, replay_said)
    assert page.get_by_test_id("stException").count() == 0
    page.screenshot(path=str(ARTIFACTS / f"talk_demo_{width}.png"))


def test_an_episode_on_the_runs_page_and_replayed_in_talk_mode(site: Visit, browser: Any) -> None:
    from playwright.sync_api import expect

    from fixtures.fake_openai import SPEAKER_REPLY
    from koed_core.db import Store
    from koed_core.models.episodes import run_episodes

    server = site.url
    listener = ModelSpec(
        name="fake-listener", backend="openai", model="fake-model", base_url=site.site.fake.base_url
    )
    dataset = load_dataset(SAMPLE_FILE)
    run_episodes(  # stored by "another process" while the app runs, as koed episodes does
        Store(site.site.db),
        (listener, make_client(listener)),
        (listener, make_client(listener)),
        dataset.dialogues[:2],
        dataset.sha256,
        EpisodeRequest(listener.name, speaker=listener.name, turns=2, temperature=0.7),
    )
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_cookies([site.cookie()])  # type: ignore[list-item]
    page = context.new_page()
    page.goto(server + "/runs")
    episode = page.get_by_test_id("stExpander").filter(has_text="Episodes of this run")
    expect(episode).to_be_visible()  # the newest run, an episode run, is shown first
    expect(episode.get_by_text(SPEAKER_REPLY["en"]).first).to_be_visible()
    expect(episode.get_by_text(SPEAKER_REPLY["ko"]).first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "episode_runs_page.png"), full_page=True)

    page.goto(server + "/episodes?talk=true")
    next_turn = page.get_by_role("button", name="Next turn")
    expect(next_turn).to_be_visible()
    assert page.get_by_text(EN_REPLY).count() == 0  # a replay starts before turn 1
    steps.settled(page)
    next_turn.click()
    answer = page.get_by_text(EN_REPLY).first
    expect(answer).to_be_visible()
    speaker = page.get_by_text(SPEAKER_REPLY["ko"]).first
    expect(speaker).to_be_visible()
    steps.settled(page)
    for shown in (answer, speaker, next_turn):  # on the projector's screen, no scrolling
        assert steps.inside(shown.bounding_box(), 1280, 720), shown.bounding_box()
    expect(page.get_by_text("Turn 1 of 2")).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "episode_talk_1280.png"))
    steps.settled(page)
    next_turn.click()  # one exchange at a time: the second still fits the projector
    expect(page.get_by_text("Turn 2 of 2")).to_be_visible()
    expect(page.get_by_text(SPEAKER_REPLY["en"]).first).to_be_visible()  # answered now
    steps.settled(page)
    assert steps.inside(page.get_by_text(EN_REPLY).first.bounding_box(), 1280, 720)
    assert page.get_by_test_id("stException").count() == 0
