"""A provider's batch output as it really comes: damaged lines, duplicates, lost files.

The scripted server damages its output on purpose. A bad line is a failed line (asked
again), a duplicated ``custom_id`` keeps the first answer and is reported, an output that
cannot be read fails the batch with a reason and never trips a later job, and a job
waiting on a batch can be cancelled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI
from koed_core.config import Settings
from koed_core.db import Store
from koed_core.db.jobs import Jobs
from koed_core.jobs.kinds import Environment, Hooks, enqueue, execute
from koed_core.jobs.worker import Worker
from koed_core.models.request import RunRequest
from koed_core.paths import SAMPLE_FILE
from tests.conftest import stored_responses

ROOT = Path(__file__).resolve().parents[1]


def _env(server: FakeOpenAI, tmp_path: Path) -> Environment:
    settings = Settings(db_path=tmp_path / "koed.db", cache_dir=tmp_path, batch_poll_s=0.05)
    return Environment(settings, env={"OPENAI_BASE_URL": server.base_url}, secrets={})


def _params(**changes: object) -> RunRequest:
    base = RunRequest(model="openai:fake", data=str(SAMPLE_FILE), limit=4, batch=True)
    return replace(base, **changes)  # type: ignore[arg-type]


def _in_thread(work, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    """Run ``work`` and fail the test (instead of hanging it) if it never returns."""
    box: dict[str, object] = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", work()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "the batch job hung"
    return box["result"]


def _answered(store: Store) -> int:
    return int(store.rows("select count(*) as n from responses where error is null")[0]["n"])


def _unconsumed(store: Store) -> int:
    return int(store.rows("select count(*) as n from provider_batches where consumed = 0")[0]["n"])


def test_bad_lines_are_failed_lines_asked_again(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.damage = ["not_json", "no_custom_id", "choices_not_list"]
    store = Store(tmp_path / "koed.db")
    said: list[str] = []
    result = _in_thread(
        lambda: execute(_params(), store, _env(fake_openai, tmp_path), Hooks(say=said.append))
    )
    assert result.failed == 0
    assert store.count("responses") == 8  # 4 dialogues x ko, en: the 7 good and the 1 asked again
    # the three damaged lines went out once more, in a batch of their own
    assert fake_openai.batch_lines == 8 + 3 + 8
    assert any("1 not JSON" in s and "1 without a custom_id" in s for s in said), said
    assert _unconsumed(store) == 0


def test_a_duplicated_custom_id_keeps_the_first_answer(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.damage = ["duplicate"] * 8
    store = Store(tmp_path / "koed.db")
    said: list[str] = []
    result = _in_thread(
        lambda: execute(
            _params(prompts="native"), store, _env(fake_openai, tmp_path), Hooks(say=said.append)
        )
    )
    assert result.failed == 0
    texts = [r["text"] for r in store.rows("select text from responses")]
    assert len(texts) == 8 and not any("A SECOND ANSWER" in t for t in texts)
    assert any("8 with a custom_id already answered (the first answer kept)" in s for s in said)


def test_an_unreadable_output_fails_plainly_and_never_trips_a_later_job(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.lost_outputs = True
    store = Store(tmp_path / "koed.db")
    env = _env(fake_openai, tmp_path)
    said: list[str] = []
    result = _in_thread(lambda: execute(_params(), store, env, Hooks(say=said.append)))
    assert result.failed == 8 and _answered(store) == 0
    assert any("its output could not be read" in s for s in said), said
    assert _unconsumed(store) == 0
    # the provider is healthy again: the next batch job of the same model just works
    fake_openai.lost_outputs = False
    again = _in_thread(lambda: execute(_params(), store, env, Hooks()))
    assert again.failed == 0 and _answered(store) == 8


def test_cancel_stops_a_job_waiting_on_a_batch(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.batch_delay_s = 3600  # the provider takes its time
    store = Store(tmp_path / "koed.db")
    job_id = enqueue(store, _params(), "tester")
    worker = Worker(store, _env(fake_openai, tmp_path), idle_exit_s=0.3, tick_s=0.05)
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    jobs = Jobs(store)
    deadline_checks = 0
    while not fake_openai.batches and deadline_checks < 600:
        threading.Event().wait(0.1)
        deadline_checks += 1
    assert fake_openai.batches, "no batch was sent"
    jobs.request_cancel(job_id)
    thread.join(60)
    assert not thread.is_alive(), "the worker kept waiting on the batch"
    assert jobs.get(job_id).state == "cancelled"
    assert fake_openai.batches["batch_1"]["status"] == "cancelled"  # the provider was told


@pytest.mark.slow
def test_a_killed_run_takes_over_a_damaged_batch(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.batch_delay_s = 600
    db = tmp_path / "koed.db"
    env = {**os.environ, "OPENAI_BASE_URL": fake_openai.base_url, "KOED_DB": str(db)}
    env["KOED_BATCH_POLL_S"] = "0.05"
    command = [
        sys.executable, "-m", "koed_core.cli", "run", "--model", "openai:fake",
        "--limit", "4", "--batch", "--data", str(SAMPLE_FILE),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(600):
            if fake_openai.batches:
                break
            threading.Event().wait(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert fake_openai.batches and stored_responses(db) == 0
    fake_openai.damage = ["not_json", "choices_not_list"]  # the output it finds is damaged
    fake_openai.batches["batch_1"]["_ready_at"] = 0
    fake_openai.batch_delay_s = 0
    store = Store(db)
    result = _in_thread(lambda: execute(_params(), store, _env(fake_openai, tmp_path), Hooks()))
    assert result.failed == 0 and store.count("responses") == 8
    assert _unconsumed(store) == 0


def test_a_line_under_an_id_the_batch_never_sent_is_left_out_and_said(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """An output line is matched to a request by its custom_id (a
    hash of the request body and a count); a line whose id this batch never sent answers
    no request of it: it is reported and left out, and the request it replaced is asked
    again, so every stored answer is its own request's."""
    fake_openai.damage = ["foreign_id", "foreign_id"]
    store = Store(tmp_path / "koed.db")
    said: list[str] = []
    result = _in_thread(
        lambda: execute(
            _params(prompts="native"), store, _env(fake_openai, tmp_path), Hooks(say=said.append)
        )
    )
    assert result.failed == 0 and store.count("responses") == 8
    assert fake_openai.batch_lines == 8 + 2  # the two replaced lines asked once more
    assert any("2 line(s) with a custom_id it never sent" in s for s in said), said
