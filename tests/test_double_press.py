"""A double press: the same job queued twice, two `koed run` of the same
run at once. The second job is refused with a sentence naming the first; two processes on
one run never ask the model for the same item, and a stored answer is never replaced."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI
from koed_core.db import Runs, Store
from koed_core.db.item_locks import ItemLocks
from koed_core.db.jobs import JobError, Jobs
from koed_core.db.owners import this_process
from koed_core.jobs.kinds import enqueue
from koed_core.judge.request import JudgeRequest
from koed_core.models.request import EpisodeRequest, RunRequest
from koed_core.paths import SAMPLE_FILE

ROOT = Path(__file__).resolve().parents[1]


def test_the_same_run_job_twice_is_refused_naming_the_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "koed.db")
    first = enqueue(store, RunRequest(model="openai:m", limit=3), "ana")
    with pytest.raises(JobError) as refused:
        enqueue(store, RunRequest(model="openai:m", limit=3), "ana")
    assert f"job {first}" in str(refused.value) and "already queued" in str(refused.value)
    # resolved the way the engine resolves it: the default prompt set, and a speed setting
    # that changes nothing stored, make no other job
    for twin in (
        RunRequest(model="openai:m", limit=3, prompts="paper"),
        RunRequest(model="openai:m", limit=3, concurrency=2),
    ):
        with pytest.raises(JobError):
            enqueue(store, twin, "ben")
    assert len(Jobs(store).recent()) == 1


@pytest.mark.parametrize(
    "other",
    [
        RunRequest(model="openai:m", limit=4),
        RunRequest(model="openai:m", limit=3, langs=("ko",)),
        RunRequest(model="openai:m", limit=3, prompts="native"),
        RunRequest(model="openai:other", limit=3),
        EpisodeRequest(model="openai:m", limit=3),
    ],
    ids=["limit", "langs", "prompts", "model", "other-kind"],
)
def test_a_job_asking_other_work_is_queued(tmp_path: Path, other: object) -> None:
    store = Store(tmp_path / "koed.db")
    enqueue(store, RunRequest(model="openai:m", limit=3), "ana")
    enqueue(store, other, "ana")  # type: ignore[arg-type]
    assert len(Jobs(store).recent()) == 2


def test_a_job_like_an_ended_or_cancelled_one_is_queued(tmp_path: Path) -> None:
    store = Store(tmp_path / "koed.db")
    jobs = Jobs(store)
    first = enqueue(store, JudgeRequest(run_id="r1", judge="openai:j"), "ana")
    jobs.request_cancel(first)
    second = enqueue(store, JudgeRequest(run_id="r1", judge="openai:j"), "ana")
    assert second != first


def test_two_presses_at_the_same_moment_queue_one_job(tmp_path: Path) -> None:
    db = tmp_path / "koed.db"
    Store(db)
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def press() -> None:
        store = Store(db)  # each press its own connection, as two sessions have
        barrier.wait()
        try:
            enqueue(store, RunRequest(model="openai:m", limit=2), "ana")
            outcomes.append("queued")
        except JobError:
            outcomes.append("refused")

    threads = [threading.Thread(target=press) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["queued", "refused", "refused", "refused"]


def test_a_locked_item_is_not_asked_by_another_pass(tmp_path: Path) -> None:
    store = Store(tmp_path / "koed.db")
    mine, theirs = f"{this_process()}#a", f"{this_process()}#b"
    assert ItemLocks(store).lock_item("run", "item-1", mine)
    assert not ItemLocks(store).lock_item("run", "item-1", theirs)
    ItemLocks(store).unlock_item("item-1", mine)
    assert ItemLocks(store).lock_item("run", "item-1", theirs)


def test_a_dead_process_lock_is_taken_over(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    store = Store(tmp_path / "koed.db")
    host = this_process().rpartition(":")[0]
    assert ItemLocks(store).lock_item("run", "item-1", f"{host}:{gone}#x")
    assert ItemLocks(store).lock_item("run", "item-1", f"{this_process()}#y")


@pytest.mark.slow
def test_two_koed_runs_at_once_ask_each_item_once(tmp_path: Path) -> None:
    server = FakeOpenAI(latency_s=0.1).start()
    try:
        db = tmp_path / "koed.db"
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        command = [
            sys.executable,
            "-m",
            "koed_core.cli",
            "run",
            "--model",
            "openai:twin",
            "--limit",
            "6",
            "--concurrency",
            "2",
            "--db",
            str(db),
            "--data",
            str(SAMPLE_FILE),
        ]
        Store(db)  # migrated once, before both start
        runs = [
            subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [run.communicate(timeout=180)[0] for run in runs]
        assert all(run.returncode == 0 for run in runs), outputs
        with sqlite3.connect(db) as conn:
            rows = conn.execute("select count(*), count(distinct id) from responses").fetchone()
            locks = conn.execute("select count(*) from item_locks").fetchone()[0]
        assert rows == (12, 12)  # 6 dialogues x 2 languages, each stored once
        asked = [
            (r["messages"][-1]["content"], r["messages"][0]["content"]) for r in server.requests
        ]
        # the paper set asks twice an item (emotion, then reply): 24 requests, none twice
        assert len(server.requests) == 24 and len(set(asked)) == 24, len(server.requests)
        assert locks == 0
    finally:
        server.stop()


def test_a_stored_answer_is_never_replaced(tmp_path: Path) -> None:
    from koed_core.db import ResponseRecord
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.models.backends import make_client
    from koed_core.models.registry import ModelSpec
    from koed_core.models.runs import run_benchmark

    server = FakeOpenAI().start()
    try:
        store = Store(tmp_path / "koed.db")
        dataset = load_dataset(SAMPLE_FILE)
        spec = ModelSpec(name="m", backend="openai", model="m", base_url=server.base_url)
        report = run_benchmark(
            store,
            make_client(spec, None),
            spec,
            dataset.dialogues[:1],
            dataset.sha256,
            RunRequest(spec.name, langs=("en",), protocol="single", max_retries=0),
        )
        first = Runs(store).responses(report.run_id).iloc[0]
        # a late second answer to the same item (another process's), and a late failure
        for raw, error in (("a late answer", None), (None, "a late failure")):
            late = ResponseRecord(
                run_id=report.run_id,
                conv_id=first["conv_id"],
                lang="en",
                context_hash=first["context_hash"],
                prompt=[],
                context=[],
                raw=raw,
                text=raw,
                error=error,
                error_kind="server" if error else None,
            )
            assert late.response_id == first["id"]
            Runs(store).save_response(late, None, None)
        after = Runs(store).responses(report.run_id)
        assert len(after) == 1 and after["raw"].iloc[0] == first["raw"]
        assert after["error"].isna().all()
    finally:
        server.stop()
