"""The gap three ways in Chromium: a visitor on the Gap page of the planted pipeline sees
PPI++ by default, named in the chart's title, switches to the judge alone, and downloads
the estimator's CSV under a name that says which it is; an admin reads whether the gap is
a judge artefact and adds the planner's next batch to the study."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fixtures.planted import planted_store
from koed_core.db import Store
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts as users
from koed_core.rating.studies import StudyRules
from tests.browser.conftest import ADMIN_PASSWORD, ARTIFACTS, COOKIE_KEY, login_cookie, serve
from tests.browser.steps import download, settled


@pytest.fixture
def planted_server(tmp_path: Path) -> Iterator[str]:
    planted = planted_store(tmp_path / "koed.db", dialogues=80, fraction=0.3)
    StudyRules(planted.store).close(planted.study_id)  # published: a visitor sees it
    yield from serve(tmp_path, {"KOED_DATA": str(SAMPLE_FILE)})


def test_a_visitor_reads_the_gap_three_ways(planted_server: str, browser: Any) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1366, "height": 768}, accept_downloads=True)
    page = context.new_page()
    page.goto(planted_server + "/gap")
    expect(page.get_by_role("heading", name="The cultural empathy gap")).to_be_visible()
    section = page.get_by_role("heading", name="The gap anchored in people")
    section.scroll_into_view_if_needed()
    settled(page)
    expect(
        page.get_by_text("PPI++ (judge corrected by people): Korean minus English")
    ).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    # the chart under its title in view: the title at the top, scrolled at once
    page.get_by_text("Estimate", exact=True).evaluate(
        "e => e.scrollIntoView({block: 'start', behavior: 'instant'})"
    )
    page.screenshot(path=str(ARTIFACTS / "gap_three_ways_ppi.png"))
    page.get_by_text("Shown: PPI++", exact=False).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "gap_three_ways_table.png"))
    button = page.get_by_role("button", name="PPI++ (judge corrected by people) (CSV)")
    with page.expect_download(timeout=45_000) as got:
        button.click()
    assert got.value.suggested_filename == "koed_gap_ppi.csv"
    rows = pd.read_csv(io.BytesIO(Path(got.value.path()).read_bytes()))
    assert set(rows["estimator"]) == {"ppi"}
    page.get_by_text("judge only", exact=True).click()
    settled(page)
    expect(page.get_by_text("judge only: Korean minus English", exact=False)).to_be_visible()
    judge_rows = download(page, page.get_by_role("button", name="judge only (CSV)"))
    assert set(pd.read_csv(io.BytesIO(judge_rows))["estimator"]) == {"judge"}
    assert page.get_by_test_id("stException").count() == 0
    page.screenshot(path=str(ARTIFACTS / "gap_three_ways_judge.png"))
    context.close()


@pytest.fixture
def admin_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    planted_store(tmp_path / "koed.db", dialogues=80, fraction=0.3)  # the study stays open
    users.add_user(tmp_path / "accounts.yaml", "boss", "admin", "Boss", ADMIN_PASSWORD)
    extra = {
        "KOED_DATA": str(SAMPLE_FILE),
        "KOED_USERS": str(tmp_path / "accounts.yaml"),
        "KOED_COOKIE_KEY": COOKIE_KEY,
    }
    for url in serve(tmp_path, extra):
        yield url, tmp_path / "koed.db"


def test_an_admin_reads_the_artefact_and_adds_the_next_batch(
    admin_server: tuple[str, Path], browser: Any
) -> None:
    from playwright.sync_api import expect

    url, db = admin_server
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    context.add_cookies([login_cookie(url, "boss")])  # type: ignore[list-item]
    page = context.new_page()
    page.goto(url + "/agreement")
    heading = page.get_by_role("heading", name="Is the gap a judge artefact?")
    expect(heading).to_be_visible()
    settled(page)
    heading.scroll_into_view_if_needed()  # Playwright waits for it to stand still
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "judge_artefact.png"))
    page.goto(url + "/studies")
    planner = page.get_by_role("heading", name="Plan the next batch")
    expect(planner).to_be_visible()
    settled(page)
    planner.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "study_plan.png"))
    store = Store(db)
    before = len(StudyRules(store).config(1).sampling.conv_ids)
    add = page.get_by_role("button", name=re.compile(r"Add the next \d+ dialogues"))
    # a width out of reach offers no batch (the button is off): ask for wider ones until
    # the planner offers one, as a researcher would
    wanted = page.get_by_label("Interval width wanted (95%)")
    for width in ("0.3", "1.0", "2.0", "4.0"):
        if add.is_enabled():
            break
        wanted.fill(width)
        wanted.press("Enter")
        settled(page)
    if not add.is_enabled():
        # the planner found no width within reach of what the judge scored on this small
        # site (a batch it cannot fill is never offered): it says so, and adds nothing
        expect(
            page.get_by_text(re.compile("Gaps out of reach at this width")).first
        ).to_be_visible()
        assert len(StudyRules(store).config(1).sampling.conv_ids) == before
        assert page.get_by_test_id("stException").count() == 0
        context.close()
        return
    batch = int(re.findall(r"\d+", add.inner_text())[0])
    add.click()
    expect(page.get_by_text(f"Added {batch} dialogues.")).to_be_visible()
    assert len(StudyRules(store).config(1).sampling.conv_ids) == before + batch
    assert page.get_by_test_id("stException").count() == 0
    context.close()
