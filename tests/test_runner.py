"""Batch runs against the scripted server: storage, scores, failures, resuming, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI, Step
from koed_core.db import Runs, Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.judge.request import JudgeRequest
from koed_core.models.backends import make_client
from koed_core.models.passes import PassHooks
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.paths import SAMPLE_FILE
from tests.conftest import stored_responses, wait_until

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"max_retries": 1}  # a failing fake answers fast


def _run(server: FakeOpenAI, store: Store, progress=None, stop=None, **kwargs):  # type: ignore[no-untyped-def]
    dataset = load_dataset(SAMPLE_FILE)
    spec = ModelSpec(
        name="fake",
        backend="openai",
        model="m",
        base_url=server.base_url,
        provenance="korean-centric",
    )
    options = {"langs": ("ko", "en"), "protocol": "single", **SETTINGS, **kwargs}
    request = RunRequest(spec.name, **options)
    return run_benchmark(
        store,
        make_client(spec, None),
        spec,
        dataset.dialogues,
        dataset.sha256,
        request,
        hooks=PassHooks(progress=progress, stop=stop),
    )


@pytest.mark.slow
def test_a_run_stores_every_answer_with_its_score(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    seen: list[tuple[int, int]] = []
    report = _run(fake_openai, store, limit=5, progress=lambda d, t: seen.append((d, t)))
    assert (report.planned, report.succeeded, report.failed) == (10, 10, 0)
    assert seen[-1] == (10, 10)
    rows = Runs(store).responses(report.run_id)
    assert len(rows) == 10 and set(rows["lang"]) == {"ko", "en"}
    assert set(rows["predicted"]) == {"sad"}
    # the sample's dialogues 1-5: afraid+anxious, angry+annoyed, annoyed+angry,
    # anticipating+excited, anxious+apprehensive: "sad" is in none of their gold sets
    assert rows["hit"].sum() == 0 and rows["precision"].max() == 0
    first = json.loads(rows["prompt"].iloc[0])
    assert (
        first[0]["role"] == "system"
        and "Speaker" in first[1]["content"]
        or "화자" in first[1]["content"]
    )
    summary = Runs(store).runs()
    assert list(summary["lang"]) == ["en", "ko"] and list(summary["responses"]) == [5, 5]
    assert set(summary["provenance"]) == {"korean-centric"}


def test_emotion_accuracy_counts_hits(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    # dialogue 11 is devastated+sad, 12 disappointed+sad: "sad" hits both in both languages
    dataset = load_dataset(SAMPLE_FILE)
    spec = ModelSpec(name="fake", backend="openai", model="m", base_url=fake_openai.base_url)
    report = run_benchmark(
        store,
        make_client(spec, None),
        spec,
        dataset.dialogues[10:12],
        dataset.sha256,
        RunRequest(spec.name, langs=("ko", "en"), protocol="multi", **SETTINGS),
    )
    summary = Runs(store).runs()
    assert report.succeeded == 4
    assert list(summary["accuracy"]) == [1.0, 1.0]
    # multi: predicted {sad}, gold {x, sad}: P=1, R=1/2, F1=2/3, Jaccard=1/2
    assert summary["f1"].tolist() == pytest.approx([2 / 3, 2 / 3])
    assert summary["jaccard"].tolist() == pytest.approx([0.5, 0.5])


def test_failures_are_recorded_never_faked_and_retried_on_rerun(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    store = Store(tmp_path / "runs.db")
    fake_openai.queue(*[Step(500, headers={"retry-after-ms": "5"})] * 2)  # one item, both tries
    first = _run(fake_openai, store, limit=3, concurrency=1)
    assert (first.succeeded, first.failed) == (5, 1) and first.errors == {"server": 1}
    rows = Runs(store).responses(first.run_id)
    failed = rows[rows["error"].notna()]
    assert len(failed) == 1 and failed["text"].isna().all() and failed["hit"].isna().all()
    again = _run(fake_openai, store, limit=3, concurrency=1)
    assert (again.skipped, again.succeeded, again.failed) == (5, 1, 0)
    assert (
        store.count("responses") == 6 and Runs(store).responses(first.run_id)["error"].isna().all()
    )


@pytest.mark.slow
def test_rerun_skips_done_and_extends(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    first = _run(fake_openai, store, limit=2, langs=["ko"])
    more = _run(fake_openai, store, limit=4, langs=["ko", "en"])
    assert first.run_id == more.run_id
    assert (more.skipped, more.succeeded) == (2, 6)
    # the paper prompt set (the default for single): two calls per response
    assert len(fake_openai.requests) == 16 and store.count("responses") == 8


def test_human_reference_run_is_not_scored(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    dataset = load_dataset(SAMPLE_FILE)
    spec = ModelSpec(name="human", backend="human")
    report = run_benchmark(
        store,
        make_client(spec),
        spec,
        dataset.dialogues[:4],
        dataset.sha256,
        RunRequest(spec.name, langs=("ko", "en"), protocol="single", **SETTINGS),
    )
    rows = Runs(store).responses(report.run_id)
    # dialogue 1 has 6 Korean turns but 4 English ones; both end on a Listener turn
    ko = rows[(rows["conv_id"] == "sample:1_conv:1") & (rows["lang"] == "ko")]["text"].item()
    en = rows[(rows["conv_id"] == "sample:1_conv:1") & (rows["lang"] == "en")]["text"].item()
    assert ko == "그래, 그런 날은 꼭 누구한테 연락해."
    assert en == "Smart move. Call me next time and we can talk while you walk."
    assert rows["hit"].isna().all()


@pytest.mark.slow
def test_sigkill_mid_run_loses_only_in_flight_and_never_duplicates(tmp_path: Path) -> None:
    server = FakeOpenAI(latency_s=0.25).start()
    db = tmp_path / "kill.db"
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "KOED_DB": str(db)}
    command = [
        sys.executable,
        "-m",
        "koed_core.cli",
        "run",
        "--model",
        "openai:fake",
        "--lang",
        "ko,en",
        "--concurrency",
        "4",
        "--data",
        str(SAMPLE_FILE),
    ]
    try:
        proc = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        wait_until(lambda: stored_responses(db) >= 12, "twelve answers stored before the kill")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        with sqlite3.connect(db) as conn:
            at_kill = conn.execute("select count(*) from responses").fetchone()[0]
        sent_before = len(server.requests)
        assert 12 <= at_kill < 68, "the run should have been killed mid-way"
        # at most the in-flight items (concurrency 4; the paper set asks twice per item)
        # were sent and not stored
        assert sent_before - 2 * at_kill <= 2 * 4 + 1
        rerun = subprocess.run(
            command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert rerun.returncode == 0, rerun.stderr
        assert f"{at_kill} already done" in rerun.stdout
        with sqlite3.connect(db) as conn:
            total, distinct = conn.execute(
                "select count(*), count(distinct run_id || conv_id || lang) from responses"
            ).fetchone()
            errors = conn.execute(
                "select count(*) from responses where error is not null"
            ).fetchone()[0]
        assert total == distinct == 68 and errors == 0  # 34 dialogues x 2 languages
        assert len(server.requests) - sent_before == 2 * (68 - at_kill)  # two calls each
    finally:
        server.stop()


def test_a_reply_that_is_not_utf8_fails_one_item_not_the_run(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """One reply of invalid UTF-8 (or broken JSON) aborted the whole
    run with a UnicodeDecodeError; it is one failed item, named, and the rest are stored."""
    store = Store(tmp_path / "runs.db")
    fake_openai.queue(
        Step(body=b'{"choices": [{"message": {"content": "\xff\xfe broken"}}]}'),
        Step(body=b'{"choices": [{"mess'),  # cut off mid-JSON
    )
    report = _run(fake_openai, store, limit=3, concurrency=1, max_retries=4)
    assert (report.succeeded, report.failed) == (4, 2), report.errors
    assert report.errors == {"response": 2}
    rows = Runs(store).responses(report.run_id)
    failed = rows[rows["error"].notna()]
    assert len(failed) == 2 and all("could not be read" in e for e in failed["error"])


def test_a_trickled_reply_is_cut_off_at_the_total_deadline(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A server sending one byte at a time never trips a per-read
    timeout and held a job for ever. Each try of a request now has its timeout in all:
    the trickled item fails as a time-out (the client hangs up), the others are stored."""
    store = Store(tmp_path / "runs.db")
    fake_openai.queue(Step(trickle_s=0.25))  # about 400 bytes: some 100 s to the end
    report = _run(fake_openai, store, limit=2, concurrency=1, timeout_s=2.0, max_retries=0)
    assert (report.succeeded, report.failed) == (3, 1), report.errors
    assert report.errors == {"timeout": 1}
    failed = Runs(store).responses(report.run_id).dropna(subset=["error"])
    assert "did not answer in time" in failed["error"].iloc[0]
    # the server notices the closed socket at its next byte
    wait_until(lambda: fake_openai.abandoned >= 1, "the server saw the client hang up", 10)
    assert fake_openai.abandoned == 1


def test_a_cancelled_run_gives_up_a_request_the_server_never_answers(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Cancel (and a worker's SIGTERM, the same stop signal) waited
    for requests in flight, so a silent server held the run for ever. A request still
    unanswered a few seconds after the stop is given up: nothing stored for it, and the
    run ends as stopped."""
    import threading

    store = Store(tmp_path / "runs.db")
    fake_openai.queue(Step(delay_s=600))  # says nothing for ten minutes
    result: dict[str, object] = {}

    def run() -> None:
        result["report"] = _run(
            fake_openai,
            store,
            limit=1,
            langs=["ko"],
            concurrency=1,
            timeout_s=900,
            max_retries=0,
            stop=lambda: fake_openai.in_flight > 0,  # cancelled once the request is out
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)  # a guard against hanging, not a measurement
    assert not thread.is_alive(), "the run still waits for the silent server"
    report = result["report"]
    assert report.stopped and report.succeeded == 0  # type: ignore[attr-defined]
    assert store.count("responses") == 0  # given up: a rerun asks it again


@pytest.mark.slow
def test_a_ten_megabyte_reply_is_cut_at_the_cap_and_says_so(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A 10 MB reply was stored whole, twice (raw and text), and
    would have gone to a judge. It is cut at MAX_REPLY_CHARS; the response records the cap
    and the length it had, and what the judge is sent is the cut text."""
    from koed_core.judge.judging import judge_run
    from koed_core.models.client import MAX_REPLY_CHARS

    store = Store(tmp_path / "runs.db")
    huge = "That must be hard. " + "정" * 10_000_000
    fake_openai.queue(Step(text=huge))
    report = _run(fake_openai, store, limit=1, langs=["ko"], concurrency=1,
                  protocol="direct", max_retries=0)  # fmt: skip
    assert report.succeeded == 1, report.errors
    row = store.rows("select raw, text, cut_at, full_chars from responses")[0]
    assert row["cut_at"] == MAX_REPLY_CHARS and row["full_chars"] == len(huge)
    assert len(row["raw"]) == MAX_REPLY_CHARS and len(row["text"]) <= MAX_REPLY_CHARS
    judge = ModelSpec(name="judge", backend="openai", model="j", base_url=fake_openai.base_url)
    before = len(fake_openai.requests)
    judge_run(
        store,
        make_client(judge, "k"),
        judge,
        JudgeRequest(report.run_id, judge=judge.name, mode="strict", dims=("EX",)),
    )
    sent = fake_openai.requests[before]["messages"][-1]["content"]
    assert len(sent) < MAX_REPLY_CHARS + 10_000  # the cut reply, not ten megabytes
