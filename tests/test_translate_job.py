"""`koed translate run` as a background job (issue 65): queued like a run, carried out by
the worker with progress on its row, resumable after a kill: the dialogues translated
before the kill are kept and not asked again; the version is made once, at the end."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI
from koed_core.config import Settings
from koed_core.db import Store
from koed_core.db.jobs import JobError, Jobs
from koed_core.db.variants import Variants
from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.variants import source_texts
from koed_core.jobs.kinds import Environment, Hooks, TranslateJob, enqueue, execute
from koed_core.jobs.kinds.dispatch import outcome_of
from koed_core.jobs.worker import Worker
from koed_core.models.variant_texts import read_variant
from koed_core.paths import SAMPLE_FILE
from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = load_dataset(SAMPLE_FILE)


def _env(server: FakeOpenAI, tmp_path: Path) -> Environment:
    settings = Settings(db_path=tmp_path / "koed.db", cache_dir=tmp_path)
    return Environment(settings, env={"OPENAI_BASE_URL": server.base_url}, secrets={})


def _job(limit: int = 4) -> TranslateJob:
    return TranslateJob("en-from-ko", "openai:fake", limit=limit, data=str(SAMPLE_FILE))


def _texts(conv_ids: list[str]) -> int:
    """The calls translating these dialogues takes: the situation and each turn."""
    total = 0
    for d in SAMPLE.dialogues:
        if d.conv_id in conv_ids:
            situation, turns = source_texts(d, "en-from-ko")
            total += len(turns) + (1 if situation else 0)
    return total


def _translating(server: FakeOpenAI) -> None:
    server.reply_fn = lambda body: "EN " + body["messages"][-1]["content"][-12:]


def _kept(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("select conv_id from translation_drafts")]


def test_a_stopped_translation_keeps_what_came_back_and_the_next_pass_asks_only_the_rest(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    _translating(fake_openai)
    store = Store(tmp_path / "koed.db")
    env = _env(fake_openai, tmp_path)
    told: list[int] = []

    def stop() -> bool:  # asked before each dialogue: stop after two came back
        return len(_kept(tmp_path / "koed.db")) >= 2

    result = execute(_job(), store, env, Hooks(stop=stop, progress=lambda d, t: told.append(t)))
    assert result.cancelled and Variants(store).versions() == []  # no version yet
    assert result.summary.startswith("en-from-ko: stopped with 2 dialogues kept")
    kept = _kept(tmp_path / "koed.db")
    first = [d.conv_id for d in SAMPLE.dialogues[:4]]
    assert kept == first[:2] and set(told) == {4}
    asked = len(fake_openai.requests)
    assert asked == _texts(first[:2])
    again = execute(_job(), store, env, Hooks())
    assert len(fake_openai.requests) - asked == _texts(first[2:])  # only the rest
    [version] = Variants(store).versions()
    assert version.label == "en-from-ko v1" and version.dialogues == 4
    assert again.data["kept"] == 2 and again.data["version_id"] == version.id
    assert "(2 kept from an interrupted pass)" in again.summary
    assert _kept(tmp_path / "koed.db") == []  # the version took them in
    read = read_variant(store, SAMPLE.dialogues[:4], "en-from-ko").dialogues
    assert set(read) == set(first) and all(t.en.startswith("EN ") for t in read[first[0]].turns)


def test_a_translation_job_is_checked_before_it_is_queued_and_says_its_outcome(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "koed.db")
    with pytest.raises(JobError, match="variant must be one of en-from-ko, ko-from-en"):
        enqueue(store, TranslateJob("fr-from-ko", "openai:fake"), None)
    job_id = enqueue(store, _job(), "boss")
    with pytest.raises(JobError, match="already"):
        enqueue(store, _job(), "boss")  # a second press of Start
    job = Jobs(store).get(job_id)
    assert job.kind == "translate" and job.label == (
        "translate en-from-ko with openai:fake: first 4 of full"
    )


@pytest.mark.slow
def test_a_killed_worker_s_translation_is_taken_over_without_asking_again(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """A worker process translating is killed (SIGKILL) mid-job; the next worker takes
    the job over, asks only for the dialogues not kept at the kill, and makes one version
    of all of them; the job's row shows its progress and outcome."""
    _translating(fake_openai)
    fake_openai.latency_s = 0.05
    db = tmp_path / "koed.db"
    store = Store(db)
    job_id = enqueue(store, _job(limit=8), "boss")
    env = {**os.environ, "OPENAI_BASE_URL": fake_openai.base_url, "KOED_DB": str(db)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "koed_core.cli", "worker"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: len(_kept(db)) >= 2, "two dialogues kept", 60)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    kept = _kept(db)
    assert 2 <= len(kept) < 8 and Variants(store).versions() == []
    asked = len(fake_openai.requests)
    worker = Worker(store, _env(fake_openai, tmp_path), idle_exit_s=0.3, tick_s=0.05)
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    thread.join(120)
    job = Jobs(store).get(job_id)
    assert job.state == "finished", job.reason
    assert (job.done, job.total, job.failed) == (8, 8, 0)
    rest = [d.conv_id for d in SAMPLE.dialogues[:8] if d.conv_id not in kept]
    assert len(fake_openai.requests) - asked == _texts(rest)  # the kept ones not asked again
    [version] = Variants(store).versions()
    assert version.dialogues == 8 and version.made_by == "model"
    said = outcome_of(job)
    assert said is not None and said.startswith("en-from-ko v1: 8 dialogues")


def test_the_runs_page_queues_a_translation_job_and_lists_it(
    tmp_path: Path, fake_registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Runs page's "Translate a variant" panel queues `koed translate run` as a job
    (a worker takes it; none is started here), listed with the page's jobs."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setattr("components.models.jobs_panel.ensure_worker", lambda store: False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/models/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="runs.translate.variant").set_value("ko-from-en")
    at.number_input(key="runs.translate.limit").set_value(3)
    next(b for b in at.button if b.label == "Start the translation as a background job").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    [job] = Jobs(Store(tmp_path / "koed.db")).recent()
    assert job.kind == "translate" and job.state == "queued"
    assert job.params["variant"] == "ko-from-en" and job.params["limit"] == 3
    assert job.params["temperature"] == 0.0 and job.params["dataset_sha256"]
    shown = [s.value.replace("\\", "") for s in at.success]  # md() escapes the markdown
    assert "Job #1 queued: translate ko-from-en with fake-listener: first 3 of full." in shown


def test_the_drafts_table_comes_to_an_old_database(tmp_path: Path) -> None:
    """A database made before m034 takes the translation drafts on its first open."""
    from koed_core.db import migrations

    path = tmp_path / "old.db"
    Store(path)
    with sqlite3.connect(path) as conn:
        conn.execute("drop table translation_drafts")
        conn.execute("delete from _koed_migrations where name = 'm034_translation_drafts'")
    store = Store(path)
    assert "translation_drafts" in store.db.table_names()
    assert migrations.applied(store.db)[-1] == "m034_translation_drafts"
