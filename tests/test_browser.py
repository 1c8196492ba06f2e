"""One real-browser smoke test: streamlit run + Debian's chromium through Playwright."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI
from fixtures.rating import rater, seeded_store, study
from fixtures.serve import free_port, wait_healthy
from koed_core.dialogues.dataset import load_dataset
from koed_core.models.backends import make_client
from koed_core.models.client import GenerationSettings
from koed_core.models.registry import ModelSpec
from koed_core.models.runs import run_benchmark
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts as users

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

RATER_PASSWORD = "mina-password-1"
ADMIN_PASSWORD = "boss-password-1"
KO_REPLY = "정말 속상했겠다. 괜찮으면 무슨 일이 있었는지 더 얘기해 줄래?"
EN_REPLY = "That sounds really hard. Do you want to tell me more about it?"
HUMAN_EN = "Smart move. Call me next time and we can talk while you walk."

pytestmark = [pytest.mark.browser]


@pytest.fixture
def server(tmp_path: Path, fake_registry: Path, fake_openai: FakeOpenAI) -> Iterator[str]:
    assert CHROMIUM.exists(), "Debian's chromium is needed: apt-get install chromium"
    # A rater with a study waiting (human-reference answers), as an admin would set it up.
    users.add_user(tmp_path / "accounts.yaml", "mina", "rater", "Mina", RATER_PASSWORD)
    users.add_user(tmp_path / "accounts.yaml", "boss", "admin", "Boss", ADMIN_PASSWORD)
    store, run_id = seeded_store(tmp_path / "koed.db")
    ratings, _ = study(store, run_id, attention_checks=1)
    rater(ratings, "mina")
    # A run of the fake model in both languages, so the Gap page has something to chart.
    listener = ModelSpec(
        name="fake-listener",
        backend="openai",
        model="fake-model",
        base_url=fake_openai.base_url,
        provenance="korean-centric",
    )
    dataset = load_dataset(SAMPLE_FILE)
    run_benchmark(
        store,
        make_client(listener),
        listener,
        dataset.dialogues[:6],
        dataset.sha256,
        langs=["ko", "en"],
        protocol="single",
        settings=GenerationSettings(),
    )
    yield from _serve(
        tmp_path,
        {
            "KOED_DATA": str(SAMPLE_FILE),  # dialogues we wrote: no ../shared needed
            "KOED_MODELS": str(fake_registry),
            "KOED_USERS": str(tmp_path / "accounts.yaml"),
            "KOED_COOKIE_KEY": "c" * 40,
        },
    )


@pytest.fixture
def plain_server(tmp_path: Path) -> Iterator[str]:
    """The app as the README starts it: shipped models.toml, no accounts, empty database."""
    yield from _serve(tmp_path, {"KOED_DATA": str(SAMPLE_FILE)})


def _serve(tmp_path: Path, extra: dict[str, str]) -> Iterator[str]:
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("KOED_MODELS", "KOED_USERS")},
        "KOED_CACHE_DIR": str(tmp_path),
        "KOED_DB": str(tmp_path / "koed.db"),
        **extra,
    }
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless=true",
            f"--server.port={port}",
            "--browser.gatherUsageStats=false",
            "--server.fileWatcherType=none",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_healthy(url, proc):
            raise RuntimeError((tmp_path / "streamlit.log").read_text())
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def test_explorer_in_a_real_browser(server: str, fake_openai: FakeOpenAI) -> None:
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    requests_at_start = len(fake_openai.requests)
    expect.set_options(timeout=30_000)  # a busy CI machine renders slower than 5 s at times
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
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
        body = _download(page, csv_button)
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
        page.wait_for_timeout(500)
        page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)

        # The URL holds the view: a new tab on the same link shows the same dialogue.
        link = page.url
        assert "labels=afraid" in link and "labels=anxious" in link and "mode=exact" in link
        assert "d=sample%3A1_conv%3A1" in link or "d=sample:1_conv:1" in link
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
        page.wait_for_timeout(500)
        page.screenshot(path=str(ARTIFACTS / "chat.png"), full_page=True)

        # Rating: log in as a rater, rate one item, see the progress move.
        _navigate(page, "Account", "Log in")
        page.get_by_label("Username").fill("mina")
        page.get_by_role("textbox", name="Password").fill(RATER_PASSWORD)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_text("Logged in as Mina (rater).")).to_be_visible()
        _navigate(page, "Rating", "Rate responses")
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
        _navigate(page, "Results", "Empathy gap")
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
        browser.close()


def _navigate(page, section: str, title: str) -> None:  # type: ignore[no-untyped-def]
    """Open a page from the top navigation: its section's menu, then its link."""
    page.get_by_test_id("stTopNavSection").filter(has_text=section).click()
    page.get_by_role("menuitem", name=title, exact=True).click()


def _settled(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until the app's script is not running (the page drawn, widgets live)."""
    page.wait_for_function(
        "document.querySelector('[data-testid=\"stApp\"]')"
        ".getAttribute('data-test-script-state') === 'notRunning'"
    )


def _download(page, button) -> bytes:  # type: ignore[no-untyped-def]
    """A lazy download's bytes: clicked once the page has settled; a click that landed
    while a rerun replaced the button is made again (once)."""
    for attempt in (1, 2):
        _settled(page)
        try:
            with page.expect_download(timeout=45_000) as download:
                button.click()
            return Path(download.value.path()).read_bytes()
        except Exception:  # noqa: BLE001 - playwright's timeout; the second try decides
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _expect_in_menu(page, section: str, title: str) -> None:  # type: ignore[no-untyped-def]
    """The top navigation's ``section`` menu holds ``title`` (then closes it again)."""
    from playwright.sync_api import expect

    page.get_by_test_id("stTopNavSection").filter(has_text=section).click()
    expect(page.get_by_role("menuitem", name=title, exact=True)).to_be_visible()
    page.keyboard.press("Escape")


def _log_in(page, username: str, password: str) -> None:  # type: ignore[no-untyped-def]
    page.get_by_label("Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def test_doors_hold_in_a_real_browser(server: str, tmp_path: Path) -> None:
    import jwt
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)
    accounts = tmp_path / "accounts.yaml"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        first = browser.new_context().new_page()
        first.goto(server + "/")  # the first session after a start opens the app at its root
        expect(first.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
        first.goto(server + "/runs")  # an admin's page, by a visitor: said, not silently away
        expect(first.get_by_text("Runs is an admin's page: log in")).to_be_visible()

        # Ten sessions post wrong passwords for the admin at the same moment: every one counts.
        pages = [browser.new_context().new_page() for _ in range(10)]
        for page in pages:
            page.goto(server + "/login")
            expect(page.get_by_label("Username")).to_be_visible()
        for n, page in enumerate(pages):
            page.get_by_label("Username").fill("boss")
            page.get_by_role("textbox", name="Password").fill(f"wrong-{n}")
        for page in pages:
            page.get_by_role("button", name="Log in").click(no_wait_after=True)
        for page in pages:
            expect(page.get_by_text("Wrong username or password.")).to_be_visible()
        assert users.load(accounts)["usernames"]["boss"]["locked_until"] > time.time()
        _log_in(pages[0], "boss", ADMIN_PASSWORD)  # right, but waiting: the same answer
        expect(pages[0].get_by_text("Wrong username or password.")).to_be_visible()
        _log_in(pages[1], "nobody", "whatever-password")  # unknown: the same answer
        expect(pages[1].get_by_text("Wrong username or password.")).to_be_visible()
        assert "Logged in" not in pages[0].content()

        # A rater stays blind to results while the study is open.
        rater = browser.new_context()
        page = rater.new_page()
        page.goto(server + "/login")
        _log_in(page, "mina", RATER_PASSWORD)
        expect(page.get_by_text("Logged in as Mina (rater).")).to_be_visible()
        page.wait_for_timeout(1000)  # the cookie component reaches the browser
        page.goto(server + "/agreement")
        expect(page.get_by_text("No published human ratings yet")).to_be_visible()
        assert page.get_by_test_id("stDataFrame").count() == 0
        cookies = rater.cookies()
        assert any(c["name"] == "koed_studio_auth" for c in cookies)

        # Logout ends the session everywhere: a copy of the cookie made before is dead.
        page.goto(server + "/login")
        for attempt in (1, 2):  # a click that lands while the page's first run redraws
            _settled(page)
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
        _expect_in_menu(stolen, "Account", "Log in")
        assert stolen.get_by_text("Logged in: Mina").count() == 0

        # A forged token (alg "none") is just "logged out": no traceback, no server paths.
        forged = jwt.encode(
            {"username": "boss", "exp_date": time.time() + 3600}, key=None, algorithm="none"
        )
        attacker = browser.new_context()
        host = server.split("//", 1)[1].split(":")[0]
        attacker.add_cookies(
            [{"name": "koed_studio_auth", "value": forged, "domain": host, "path": "/"}]
        )
        evil = attacker.new_page()
        evil.goto(server + "/")
        expect(evil.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
        _expect_in_menu(evil, "Account", "Log in")
        assert evil.get_by_test_id("stException").count() == 0
        assert "Traceback" not in evil.content()
        assert "site-packages" not in evil.content()  # no server paths from a stack
        browser.close()


@pytest.mark.parametrize(
    "who, path, heading",
    [
        (None, "/gap?talk=true", "The cultural empathy gap"),
        ("mina", "/rate", "Rate responses"),
        ("boss", "/studies", "Studies"),
    ],
)
def test_a_deep_link_is_the_first_request_after_a_start(
    server: str, who: str | None, path: str, heading: str
) -> None:
    import jwt
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    expect.set_options(timeout=30_000)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        if who:  # a login cookie from an earlier visit, as a returning rater or admin has
            token = jwt.encode(
                {"username": who, "exp_date": time.time() + 86400}, "c" * 40, algorithm="HS256"
            )
            host = server.split("//", 1)[1].split(":")[0]
            context.add_cookies(
                [{"name": "koed_studio_auth", "value": token, "domain": host, "path": "/"}]
            )
        page = context.new_page()
        page.goto(server + path)  # nothing else has been served since the start
        expect(page.get_by_role("heading", name=heading)).to_be_visible()
        page.wait_for_timeout(1500)
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
        browser.close()


def _admin_cookie(server: str) -> dict[str, object]:
    import jwt

    token = jwt.encode({"username": "boss", "exp_date": time.time() + 86400}, "c" * 40, "HS256")
    host = server.split("//", 1)[1].split(":")[0]
    return {"name": "koed_studio_auth", "value": token, "domain": host, "path": "/"}


def _inside(box: dict[str, float] | None, width: int, height: int) -> bool:
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= height
        and (box["x"] + box["width"] <= width)
    )


@pytest.mark.parametrize("width, height", [(1280, 720), (1920, 1080)])
def test_talk_mode_fits_a_projector(server: str, width: int, height: int) -> None:
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    expect.set_options(timeout=30_000)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": width, "height": height})
        context.add_cookies([_admin_cookie(server)])  # type: ignore[list-item]
        page = context.new_page()
        page.goto(server + "/gap?talk=true")
        chart = page.get_by_test_id("stPlotlyChart").first
        expect(chart).to_be_visible()
        page.wait_for_timeout(1500)
        # the whole chart (axis titles, ticks, legend) is on screen without scrolling, and
        # uses the screen: two thirds of its height or more, whatever the projector
        box = chart.bounding_box()
        assert _inside(box, width, height) and box["height"] >= 0.66 * height, box
        page.wait_for_timeout(1500)  # the chart is redrawn to its box
        svg = chart.locator(".main-svg").first
        assert float(svg.get_attribute("height") or 0) >= 0.66 * height  # drawn, not padded
        shown = page.evaluate(  # no box around the chart cuts it short
            """() => [...document.querySelectorAll('.st-key-talk_chart *')].filter(e =>
                 e.contains(document.querySelector('.st-key-talk_chart .main-svg')))
                 .map(e => e.getBoundingClientRect().height)"""
        )
        assert min(shown) >= 0.66 * height, shown
        legend = chart.locator(".legend").first
        assert _inside(legend.bounding_box(), width, height)
        assert legend.bounding_box()["y"] >= 0.6 * height  # under bars that fill the screen
        page.screenshot(path=str(ARTIFACTS / f"talk_gap_{width}.png"))

        page.goto(server + "/demo?talk=true")
        play = page.get_by_role("button", name="Play")
        expect(play).to_be_visible()
        assert _inside(play.bounding_box(), width, height)
        assert page.get_by_text(EN_REPLY).count() == 0  # nothing shown before Play
        answer = page.get_by_text(EN_REPLY).first
        for attempt in (1, 2):  # a click that lands while the first run redraws is made again
            _settled(page)
            play.click()
            try:
                expect(answer).to_be_visible(timeout=20_000 if attempt == 1 else 30_000)
                break
            except AssertionError:
                if attempt == 2:
                    raise
        page.wait_for_timeout(1000)
        page.screenshot(path=str(ARTIFACTS / f"talk_demo_{width}.png"))
        assert _inside(answer.bounding_box(), width, height), answer.bounding_box()
        assert page.get_by_test_id("stException").count() == 0
        page.screenshot(path=str(ARTIFACTS / f"talk_demo_{width}.png"))
        browser.close()


def test_an_episode_on_the_runs_page_and_replayed_in_talk_mode(
    server: str, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    from playwright.sync_api import expect, sync_playwright

    from fixtures.fake_openai import SPEAKER_REPLY
    from koed_core.db import Store
    from koed_core.models.episodes import run_episodes

    listener = ModelSpec(
        name="fake-listener", backend="openai", model="fake-model", base_url=fake_openai.base_url
    )
    dataset = load_dataset(SAMPLE_FILE)
    run_episodes(  # stored by "another process" while the app runs, as koed episodes does
        Store(tmp_path / "koed.db"),
        make_client(listener),
        listener,
        make_client(listener),
        listener,
        dataset.dialogues[:2],
        dataset.sha256,
        langs=["ko", "en"],
        settings=GenerationSettings(),
        speaker_settings=GenerationSettings(),
        turns=2,
    )
    ARTIFACTS.mkdir(exist_ok=True)
    expect.set_options(timeout=30_000)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        context.add_cookies([_admin_cookie(server)])  # type: ignore[list-item]
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
        _settled(page)
        next_turn.click()
        answer = page.get_by_text(EN_REPLY).first
        expect(answer).to_be_visible()
        speaker = page.get_by_text(SPEAKER_REPLY["ko"]).first
        expect(speaker).to_be_visible()
        page.wait_for_timeout(500)
        for shown in (answer, speaker, next_turn):  # on the projector's screen, no scrolling
            assert _inside(shown.bounding_box(), 1280, 720), shown.bounding_box()
        expect(page.get_by_text("Turn 1 of 2")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "episode_talk_1280.png"))
        _settled(page)
        next_turn.click()  # one exchange at a time: the second still fits the projector
        expect(page.get_by_text("Turn 2 of 2")).to_be_visible()
        expect(page.get_by_text(SPEAKER_REPLY["en"]).first).to_be_visible()  # answered now
        page.wait_for_timeout(500)
        assert _inside(page.get_by_text(EN_REPLY).first.bounding_box(), 1280, 720)
        assert page.get_by_test_id("stException").count() == 0
        browser.close()


def test_the_offline_default_answers_on_a_fresh_server(plain_server: str) -> None:
    # The no-key default, both panes (ko and en), as the first thing a visitor does.
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    expect.set_options(timeout=180_000)  # SmolLM2 on two CPU cores: seconds per answer
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(plain_server + "/chat")
        expect(page.get_by_role("heading", name="Chat with models on KoED")).to_be_visible()
        tokens = page.get_by_label("Max new tokens")
        tokens.fill("16")
        tokens.press("Enter")
        page.wait_for_timeout(500)
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
        browser.close()


def test_a_job_started_in_the_browser_outlives_the_page_and_the_server(
    tmp_path: Path, fake_registry: Path, fake_openai: FakeOpenAI
) -> None:
    # Started from the Runs page, left, the server stopped, the worker killed too (a
    # machine restart): the next page load after a new start resumes the job, and what
    # it stored equals a foreground run of the same parameters.
    from playwright.sync_api import expect, sync_playwright

    from koed_core.config import Settings
    from koed_core.db import Store
    from koed_core.db.jobs import Jobs
    from koed_core.jobs.kinds import Environment, Hooks, execute, params_of
    from tests.conftest import stop_workers, stored_responses, wait_for_job

    ARTIFACTS.mkdir(exist_ok=True)
    expect.set_options(timeout=30_000)
    fake_openai.latency_s = 0.15
    db = tmp_path / "koed.db"
    extra = {"KOED_DATA": str(SAMPLE_FILE), "KOED_MODELS": str(fake_registry)}
    first = _serve(tmp_path, extra)
    url = next(first)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            page.goto(url + "/runs")
            expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
            page.get_by_label("First N of them (0 = all)").fill("0")
            page.get_by_label("Concurrent requests").fill("1")
            page.get_by_role("button", name="Start as a background job").click()
            expect(page.get_by_text("Job #1 queued")).to_be_visible()
            _navigate(page, "Dialogues", "Explorer")  # leave the page
            expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
            deadline = time.monotonic() + 60
            while stored_responses(db) < 6:
                assert time.monotonic() < deadline, "the job did not start"
                time.sleep(0.2)
            expect(page.get_by_text("of 68")).to_be_visible()  # the sidebar's jobs panel
            page.screenshot(path=str(ARTIFACTS / "job_running.png"))
            browser.close()
    finally:
        first.close()  # the Streamlit server stops
    before = stored_responses(db)
    time.sleep(1.5)
    assert stored_responses(db) > before, "the worker stopped with the server"
    store = Store(db)
    [worker] = Jobs(store).live_workers()
    os.kill(worker["pid"], 9)  # and now the worker too
    time.sleep(0.5)
    at_kill = stored_responses(db)
    assert at_kill < 68 and Jobs(store).get(1).state == "running"

    second = _serve(tmp_path, extra)
    url = next(second)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            page.goto(url + "/")  # any page load makes sure a worker runs waiting jobs
            wait_for_job(store, 1)
            page.get_by_text("Jobs (0 active)").click()  # the panel folds once nothing runs
            expect(page.get_by_text("finished").first).to_be_visible()
            expect(page.get_by_text("68 of 68")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "job_finished.png"))
            browser.close()
    finally:
        second.close()
        stop_workers(db)
    job = Jobs(store).get(1)
    assert (job.done, job.total, job.failed) == (68, 68, 0)
    keys = store.rows("select conv_id, lang, count(*) as n from responses group by 1, 2")
    assert len(keys) == 68 and all(k["n"] == 1 for k in keys)
    # the same parameters in the foreground, into another database: the same answers
    alone = Store(tmp_path / "foreground.db")
    env = Environment(
        Settings(models_path=fake_registry, data_path=str(SAMPLE_FILE), cache_dir=tmp_path),
        env={},
        secrets={},
    )
    result = execute(params_of(job), alone, env, Hooks())
    query = "select conv_id, lang, context_hash, text from responses order by 1, 2"
    assert result.data["run_id"] == job.result["run_id"]
    assert store.rows(query) == alone.rows(query)


def _score_all(page, score: str) -> None:  # type: ignore[no-untyped-def]
    """Pick ``score`` on every rubric dimension, and see each pick took (a click that lands
    while Streamlit swaps in the next item's form would be lost)."""
    from playwright.sync_api import expect

    radios = page.get_by_test_id("stRadio")
    expect(radios).to_have_count(5)
    # a new item's form starts empty: until then the last item's form is still there
    expect(radios.locator("input:checked")).to_have_count(0)
    for n in range(5):
        radio = radios.nth(n)
        for _ in range(10):
            radio.get_by_text(score, exact=True).click()
            if radio.locator("input:checked").count() == 1:
                break
            page.wait_for_timeout(200)
        expect(radio.locator("input:checked")).to_have_count(1)


def test_a_crowd_worker_comes_from_prolific_and_goes_back_with_the_code(tmp_path: Path) -> None:
    # The invite link as Prolific opens it: consent, screening, calibration, a batch of
    # two items, the completion code and the way back; the same worker returning is back
    # at the code; an expired link and a full one are refused in words.
    from playwright.sync_api import expect, sync_playwright

    from koed_core.db.crowd import Crowd
    from koed_core.rating import crowd

    ARTIFACTS.mkdir(exist_ok=True)
    expect.set_options(timeout=30_000)
    key = "s" * 40
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=0)
    consent = {"consent_ko": "연구 참여에 동의합니다.", "consent_en": "I agree to take part."}
    invite, token = crowd.create_invite(
        store, key.encode(), study_id, platform="prolific", days=7, cap=5, batch_size=2,
        reward=1.0, **consent,
    )  # fmt: skip
    expired, old_token = crowd.create_invite(
        store, key.encode(), study_id, platform="prolific", days=0.00001, cap=5,
        batch_size=2, **consent,
    )  # fmt: skip
    full, full_token = crowd.create_invite(
        store, key.encode(), study_id, platform="prolific", days=7, cap=1, batch_size=2,
        **consent,
    )  # fmt: skip
    crowd.join(store, key.encode(), full, {"PROLIFIC_PID": "ef" * 12})
    mturk, mturk_token = crowd.create_invite(
        store, key.encode(), study_id, platform="mturk", days=7, cap=5, batch_size=1,
        **consent,
    )  # fmt: skip
    pid, prolific_study, session = "5f1a2b3c4d5e6f7a8b9c0d1e", "60" * 12, "70" * 12
    link = f"/join?invite={token}&PROLIFIC_PID={pid}&STUDY_ID={prolific_study}&SESSION_ID={session}"
    hit = f"/join?invite={mturk_token}&workerId=A2TESTWORKER9&hitId=3HITID0000001"
    submit_to = "https://workersandbox.mturk.com"
    server = _serve(tmp_path, {"KOED_DATA": str(SAMPLE_FILE), "KOED_SECRET_KEY": key})
    url = next(server)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1366, "height": 768})  # a laptop
            page.goto(url + link)
            expect(page.get_by_role("heading", name="KoED rating study")).to_be_visible()
            expect(page.get_by_text("연구 참여에 동의합니다.")).to_be_visible()
            assert page.get_by_test_id("stTopNav").count() == 0  # no other page
            assert page.get_by_test_id("stSidebarNav").count() == 0
            page.screenshot(path=str(ARTIFACTS / "crowd_consent.png"))
            page.get_by_text("I have read this and agree").click()
            page.get_by_role("button", name="Continue / 계속").click()
            expect(page.get_by_text("Your native language / 모국어")).to_be_visible()
            page.goto(url + "/gap")  # a typed URL, same browser: still the worker, still here
            expect(page.get_by_role("heading", name="KoED rating study")).to_be_visible()
            expect(page.get_by_text("Your native language / 모국어")).to_be_visible()
            assert page.get_by_text("The cultural empathy gap").count() == 0
            page.wait_for_timeout(1500)
            page.screenshot(path=str(ARTIFACTS / "crowd_typed_url.png"))
            page.get_by_text("한국어 Korean").click()
            page.get_by_label("Years lived in Korea / 한국 거주 연수").fill("25")
            page.get_by_role("button", name="Continue / 계속").click()
            for n, score in ((1, "4"), (2, "2")):  # calibration, near the references
                expect(page.get_by_text(f"Calibration {n} of 2")).to_be_visible()
                _score_all(page, score)
                page.get_by_role("button", name="Submit rating").click()
                page.get_by_role("button", name="Next").click()
            for n in (0, 1):
                expect(page.get_by_text(f"Batch 1 of 1: {n} of 2 rated")).to_be_visible()
                if n == 1:  # after Submit the new item is shown from its top, not its form
                    expect(page.get_by_text(f"Batch 1 of 1: {n} of 2 rated")).to_be_in_viewport()
                if n == 0:
                    page.screenshot(path=str(ARTIFACTS / "crowd_item.png"))
                _score_all(page, "4")
                page.get_by_role("button", name="Submit rating").click()
            expect(page.get_by_text(invite.completion_code)).to_be_visible()
            back = page.get_by_role("link", name="Back to the platform / 플랫폼으로 돌아가기")
            assert back.get_attribute("href") == invite.redirect_url
            assert invite.redirect_url == crowd.PROLIFIC_DONE.format(code=invite.completion_code)
            page.screenshot(path=str(ARTIFACTS / "crowd_done.png"))
            again = browser.new_page()  # the worker opens the link again, another browser
            again.goto(url + link)
            expect(again.get_by_text(invite.completion_code)).to_be_visible()
            refused = browser.new_page()
            refused.goto(f"{url}/join?invite={old_token}&PROLIFIC_PID={'ab' * 12}")
            expect(refused.get_by_text("This invite link expired on")).to_be_visible()
            refused.goto(f"{url}/join?invite={full_token}&PROLIFIC_PID={'cd' * 12}")
            expect(refused.get_by_text("all 1 places are taken")).to_be_visible()
            refused.goto(f"{url}/join?invite={token}")  # not opened from Prolific
            expect(refused.get_by_text("Open this study from Prolific")).to_be_visible()
            refused.goto(url + link.replace(session, "71" * 12))  # the same PID, a new session
            expect(refused.get_by_text("another Prolific session")).to_be_visible()

            # MTurk: the preview shows the task and asks to accept; the accepted HIT ends
            # in a POST of assignmentId and the code to MTurk's externalSubmit.
            turk = browser.new_page(viewport={"width": 1366, "height": 768})
            turk.goto(
                f"{url}{hit}&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&turkSubmitTo={submit_to}"
            )
            expect(
                turk.get_by_text("Preview: accept the HIT to start.", exact=False)
            ).to_be_visible()
            expect(turk.get_by_text("I agree to take part.")).to_be_visible()
            assert turk.get_by_role("button", name="Continue / 계속").count() == 0
            turk.goto(f"{url}{hit}&assignmentId=3ASSIGN0000001&turkSubmitTo={submit_to}")
            turk.get_by_text("I have read this and agree").click()
            turk.get_by_role("button", name="Continue / 계속").click()
            turk.get_by_text("English", exact=True).click()
            turk.get_by_role("button", name="Continue / 계속").click()
            for score in ("4", "2"):
                _score_all(turk, score)
                turk.get_by_role("button", name="Submit rating").click()
                turk.get_by_role("button", name="Next").click()
            _score_all(turk, "4")
            turk.get_by_role("button", name="Submit rating").click()
            expect(turk.get_by_text(mturk.completion_code)).to_be_visible()
            form = turk.locator("form[method=post]")
            assert form.get_attribute("action") == f"{submit_to}/mturk/externalSubmit"
            fields = {
                i.get_attribute("name"): i.get_attribute("value")
                for i in form.locator("input[type=hidden]").all()
            }
            assert fields == {
                "assignmentId": "3ASSIGN0000001",
                "completion_code": mturk.completion_code,
            }
            expect(turk.get_by_role("button", name="Submit the HIT / HIT 제출")).to_be_visible()
            turk.screenshot(path=str(ARTIFACTS / "crowd_mturk_done.png"))
            browser.close()
    finally:
        server.close()
    worker = Crowd(store).worker(crowd.worker_name(key.encode(), study_id, "prolific", pid))
    assert worker is not None and worker["status"] == "completed"
    assert (worker["study_ref"], worker["session_ref"]) == (prolific_study, session)
    assert (worker["code_kind"], worker["code_given"]) == ("completed", invite.completion_code)
    assert worker["consent_version"] == invite.consent_version
    assert crowd.places(store, invite).used == 1
    assert store.count("ratings") == 3 * 5  # two Prolific items and one MTurk item


SPAN_AT = """
([lang, position, needle]) => {
  const found = [];
  (function walk(root) {
    root.querySelectorAll('*').forEach((n) => {
      if (n.classList && n.classList.contains('txt')) found.push(n);
      if (n.shadowRoot) walk(n.shadowRoot);
    });
  })(document);
  const el = found.find((e) => e.dataset.lang === lang && e.dataset.position === String(position));
  if (!el) return null;
  el.scrollIntoView({ block: 'center' });
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const i = node.data.indexOf(needle);
    if (i < 0) continue;
    const range = document.createRange();
    range.setStart(node, i);
    range.setEnd(node, i + needle.length);
    const rects = range.getClientRects();
    const a = rects[0], b = rects[rects.length - 1];
    return [a.left + 1.5, a.top + a.height / 2, b.right - 1.5, b.top + b.height / 2];
  }
  return null;
}
"""


def _drag_over(page, lang: str, position: int, needle: str) -> None:  # type: ignore[no-untyped-def]
    """Select ``needle`` in a turn of the span selector with the mouse, as a person does."""
    from playwright.sync_api import expect

    _settled(page)
    page.evaluate("() => getSelection().removeAllRanges()")
    box = None
    for _ in range(60):  # the component's script mounts after the page has settled
        box = page.evaluate(SPAN_AT, [lang, position, needle])
        if box is not None:
            break
        page.wait_for_timeout(250)
    assert box is not None, (lang, position, needle)
    x0, y0, x1, y1 = box
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=6)
    page.mouse.up()
    expect(page.get_by_text(f"turn {position}: {needle}", exact=True)).to_be_visible()


def _add_span(page, ko: tuple[int, str], en: tuple[int, str] | None, kind: str) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    _drag_over(page, "ko", *ko)
    if en is not None:
        _drag_over(page, "en", *en)
    form = page.get_by_test_id("stForm").filter(has_text="Signal type")
    _settled(page)
    form.get_by_test_id("stSelectbox").click()
    page.keyboard.type(kind)  # the picker filters as one types
    page.get_by_role("option").filter(has_text=kind).first.click()
    expect(form.get_by_role("combobox", name="Signal type")).to_have_value(re.compile(kind))
    if en is None:
        form.get_by_text("No English counterpart").click()
    _settled(page)
    form.get_by_role("button", name="Add span").click()
    expect(page.get_by_text(f"turn {ko[0]}: {ko[1]}", exact=True)).to_have_count(0)  # added


def _log_in_settled(page, username: str, password: str, welcome: str) -> None:  # type: ignore[no-untyped-def]
    """Log in once the login page has settled; a click lost while it redrew is made again."""
    from playwright.sync_api import expect

    for attempt in (1, 2):
        _settled(page)
        if page.get_by_text(welcome).count():
            return
        _log_in(page, username, password)
        try:
            expect(page.get_by_text(welcome).first).to_be_visible(
                timeout=15_000 if attempt == 1 else 30_000
            )
            return
        except AssertionError:
            if attempt == 2:
                raise


def _submit(page, category: str) -> None:  # type: ignore[no-untyped-def]
    """Choose the category and submit; a click lost while the page redrew is made again."""
    from playwright.sync_api import expect

    done = page.get_by_text(re.compile(r"^(Submitted\. You may still|Every annotator has)"))
    for attempt in (1, 2):
        _settled(page)
        if done.count():
            return  # the first click did submit, only late
        form = page.get_by_test_id("stForm").filter(has_text="Adaptation category")
        form.get_by_text(category).click()
        form.get_by_role("button", name="Submit").click()
        try:
            expect(done.first).to_be_visible(timeout=15_000 if attempt == 1 else 30_000)
            return
        except AssertionError:
            if attempt == 2:
                raise


def test_two_annotators_disagree_and_the_reviewer_adjudicates(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    from koed_core.annotation.projects import AnnotationStore
    from koed_core.db import Store

    for name in ("ann1", "ann2"):
        users.add_user(
            tmp_path / "accounts.yaml", name, "annotator", name.upper(), f"{name}-password"
        )
    dataset = load_dataset(SAMPLE_FILE)
    conv_id = dataset.dialogues[0].conv_id  # 편의점 / convenience store in turn 3
    AnnotationStore(Store(tmp_path / "koed.db")).create_project(
        "Convenience", dataset, [conv_id], per_item=2, annotators=["ann1", "ann2"]
    )
    ARTIFACTS.mkdir(exist_ok=True)
    expect.set_options(timeout=30_000)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for who, category in (("ann1", "context modified"), ("ann2", "simply transferred")):
            page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
            page.goto(server + "/login")
            _log_in_settled(page, who, f"{who}-password", f"Logged in as {who.upper()}")
            page.goto(server + "/annotate")
            expect(page.get_by_role("heading", name="Annotate the adaptation")).to_be_visible()
            _add_span(page, (3, "편의점"), (3, "convenience store"), "Places")
            colour = page.wait_for_function(  # the selector's own stylesheet holds
                """() => { let m; (function walk(r) { r.querySelectorAll('*').forEach((n) => {
                  if (!m && n.matches && n.matches('mark.en')) m = n;
                  if (n.shadowRoot) walk(n.shadowRoot); }); })(document);
                  return m ? getComputedStyle(m).backgroundColor : null; }"""
            ).json_value()
            assert colour == "rgb(205, 232, 255)", colour  # blue: an English counterpart
            if who == "ann1":
                _add_span(page, (1, "야근"), None, "School, work")
                form = page.get_by_test_id("stForm").filter(has_text="Signal type")
                expect(form.get_by_role("checkbox")).not_to_be_checked()  # cleared for the next
                page.screenshot(path=str(ARTIFACTS / "annotate_two_spans.png"), full_page=True)
                expect(page.get_by_text("Your spans (2)")).to_be_visible()
            else:  # blind: nothing of ann1's work is on ann2's page
                assert page.get_by_text("야근", exact=True).count() == 0
                expect(page.get_by_text("Your spans (1)")).to_be_visible()
            page.reload()  # the spans survive a reload, offsets and all
            expect(page.get_by_text(f"Your spans ({2 if who == 'ann1' else 1})")).to_be_visible()
            _submit(page, category)
            page.context.close()
        stored = AnnotationStore(Store(tmp_path / "koed.db")).submitted(1, conv_id)
        assert {a.annotator: a.category for a in stored} == {
            "ann1": "context_modified",
            "ann2": "simply_transferred",
        }
        text = dataset.dialogues[0].turns[2].ko
        assert all(
            text[s.ko.start : s.ko.end] == "편의점"
            for a in stored
            for s in a.spans
            if s.type == "places"
        )

        page = browser.new_context(viewport={"width": 1366, "height": 900}).new_page()
        page.goto(server + "/login")
        _log_in_settled(page, "boss", ADMIN_PASSWORD, "Logged in as Boss")
        page.goto(server + "/projects")
        expect(page.get_by_role("heading", name="Annotation projects")).to_be_visible()
        review = page.get_by_test_id("stForm").filter(has_text="Final answer")
        expect(review).to_be_visible()
        expect(page.get_by_text("category: context modified", exact=False).first).to_be_visible()
        review.get_by_text("context modified").click()
        _settled(page)
        review.get_by_role("button", name="Record the final answer").click()
        expect(review.get_by_text("(recorded; saving replaces it)")).to_be_visible()
        page.get_by_role("tab", name="Agreement and export").click()
        expect(page.get_by_text("span F1 exact").first).to_be_attached()  # a grid cell
        page.screenshot(path=str(ARTIFACTS / "annotation_review.png"), full_page=True)
        page.goto(server + "/gap")
        breakdown = page.get_by_test_id("stExpander").filter(has_text="The gap by adaptation")
        expect(breakdown).to_be_visible()
        breakdown.click()
        # the chart's axis names the category in words (the CSV keeps the code)
        expect(breakdown.locator("svg text", has_text="context modified").first).to_be_attached()
        page.screenshot(path=str(ARTIFACTS / "gap_by_adaptation.png"), full_page=True)
        assert page.get_by_test_id("stException").count() == 0
        browser.close()
