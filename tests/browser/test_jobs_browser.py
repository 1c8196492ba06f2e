"""A background job started in the browser outlives the page and the server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fixtures.fake_openai import FakeOpenAI
from koed_core.paths import SAMPLE_FILE
from tests.browser import steps
from tests.browser.conftest import ARTIFACTS, serve


def test_a_job_started_in_the_browser_outlives_the_page_and_the_server(
    tmp_path: Path, fake_registry: Path, fake_openai: FakeOpenAI, browser: Any
) -> None:
    # Started from the Runs page, left, the server stopped, the worker killed too (a
    # machine restart): the next page load after a new start resumes the job, and what
    # it stored equals a foreground run of the same parameters.
    from playwright.sync_api import expect

    from koed_core.config import Settings
    from koed_core.db import Store
    from koed_core.db.jobs import Jobs
    from koed_core.jobs.kinds import Environment, Hooks, execute, params_of
    from tests.conftest import (
        process_gone,
        stop_workers,
        stored_responses,
        wait_for_job,
        wait_until,
    )

    fake_openai.latency_s = 0.15
    db = tmp_path / "koed.db"
    extra = {"KOED_DATA": str(SAMPLE_FILE), "KOED_MODELS": str(fake_registry)}
    first = serve(tmp_path, extra)
    url = next(first)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.goto(url + "/runs")
        expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
        page.get_by_label("First N of them (0 = all)", exact=True).fill("0")
        page.get_by_label("Concurrent requests").fill("1")
        page.get_by_role("button", name="Start as a background job").click()
        expect(page.get_by_text("Job #1 queued")).to_be_visible()
        steps.navigate(page, "Dialogues", "Explorer")  # leave the page
        expect(page.get_by_role("heading", name="Dialogue explorer")).to_be_visible()
        wait_until(lambda: stored_responses(db) >= 6, "the job started")
        expect(page.get_by_text("of 68")).to_be_visible()  # the sidebar's jobs panel
        page.screenshot(path=str(ARTIFACTS / "job_running.png"))
    finally:
        first.close()  # the Streamlit server stops
    before = stored_responses(db)
    wait_until(lambda: stored_responses(db) > before, "the worker went on after the server")
    store = Store(db)
    [worker] = Jobs(store).live_workers()
    os.kill(worker["pid"], 9)  # and now the worker too
    wait_until(lambda: process_gone(worker["pid"]), "the killed worker ended")
    at_kill = stored_responses(db)
    assert at_kill < 68 and Jobs(store).get(1).state == "running"

    second = serve(tmp_path, extra)
    url = next(second)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.goto(url + "/")  # any page load makes sure a worker runs waiting jobs
        wait_for_job(store, 1)
        page.get_by_text("Jobs (0 active)").click()  # the panel folds once nothing runs
        expect(page.get_by_text("finished").first).to_be_visible()
        expect(page.get_by_text("68 of 68")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "job_finished.png"))
    finally:
        second.close()
        stop_workers(db)
    job = Jobs(store).get(1)
    assert (job.done, job.total, job.failed) == (68, 68, 0)
    keys = store.rows("select conv_id, lang, count(*) as n from responses group by 1, 2")
    assert len(keys) == 68 and all(k["n"] == 1 for k in keys)
    # the same parameters in the foreground, into another database: the same answers
    fake_openai.latency_s = 0.0  # the slow server was for the job to be caught running
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
