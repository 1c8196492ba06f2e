"""Background jobs: queue, worker, cancel, take-over after a crash, the provider Batch API."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI
from koed_core.cli import main
from koed_core.config import Settings
from koed_core.db import Store
from koed_core.db.jobs import JobError, Jobs
from koed_core.errors import KoedError
from koed_core.jobs.kinds import Environment, Hooks, enqueue, execute
from koed_core.jobs.worker import Worker
from koed_core.judge.request import JudgeRequest
from koed_core.models.client import ModelError
from koed_core.models.request import RunRequest
from koed_core.paths import SAMPLE_FILE
from tests.conftest import stored_responses, wait_until

ROOT = Path(__file__).resolve().parents[1]


def _env(server: FakeOpenAI, tmp_path: Path, poll_s: float = 0.05) -> Environment:
    """What a worker sees: the fake server as OPENAI_BASE_URL, fast batch polling."""
    settings = Settings(db_path=tmp_path / "koed.db", cache_dir=tmp_path, batch_poll_s=poll_s)
    return Environment(settings, env={"OPENAI_BASE_URL": server.base_url}, secrets={})


def _params(**changes: object) -> RunRequest:
    base = RunRequest(model="openai:fake", data=str(SAMPLE_FILE), limit=4, concurrency=4)
    return replace(base, **changes)  # type: ignore[arg-type]


def _serve(store: Store, env: Environment, idle_exit_s: float = 0.3) -> threading.Thread:
    worker = Worker(store, env, idle_exit_s=idle_exit_s, tick_s=0.05)
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    return thread


def _answers(store: Store, run_id: str) -> list[tuple[str, str, str, str, str]]:
    rows = store.rows(
        "select conv_id, lang, context_hash, text, predicted from responses where run_id = ? "
        "order by conv_id, lang",
        [run_id],
    )
    return [tuple(r.values()) for r in rows]  # type: ignore[misc]


def _wait(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    wait_until(predicate, "the condition", timeout)


# Queue --------------------------------------------------------------------------------------


def test_the_queue_hands_each_job_out_once_and_cancels_a_waiting_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "q.db")
    jobs = Jobs(store)
    first = enqueue(store, _params(), "boss")
    second = enqueue(store, _params(limit=2), "boss")
    third = enqueue(store, _params(limit=1), None)
    assert jobs.request_cancel(third) == "cancelled"  # waiting: cancelled at once
    assert jobs.get(third).state == "cancelled"
    assert jobs.claim("w1:1").id == first  # type: ignore[union-attr]
    assert jobs.claim("w2:2").id == second  # type: ignore[union-attr]
    assert jobs.claim("w3:3") is None  # nothing left; the cancelled job is never handed out
    with pytest.raises(JobError, match="already ended"):
        jobs.request_cancel(third)
    assert jobs.request_cancel(first) == "running" and jobs.cancel_requested(first)
    listed = jobs.recent()
    assert [j.id for j in listed][:2] == [second, first]  # active first
    assert listed[0].params["limit"] == 2 and listed[0].created_by == "boss"


def test_bad_parameters_are_refused_before_they_are_queued(tmp_path: Path) -> None:
    store = Store(tmp_path / "q.db")
    with pytest.raises(JobError, match="protocol must be one of"):
        enqueue(store, _params(protocol="chatty"), None)
    with pytest.raises(JobError, match="langs must be among ko, en, en-from-ko and ko-from-en"):
        enqueue(store, _params(langs=("fr",)), None)
    with pytest.raises(JobError, match="dimensions must be among"):
        enqueue(store, JudgeRequest(run_id="r", dims=("XX",)), None)
    assert store.count("jobs") == 0


def test_a_job_with_parameters_this_release_does_not_know_fails_with_the_reason(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    store = Store(tmp_path / "koed.db")
    job_id = Jobs(store).enqueue("run", "from the future", {"model": "x", "warp": 9}, None)
    _serve(store, _env(fake_openai, tmp_path)).join(30)
    job = Jobs(store).get(job_id)
    assert job.state == "failed" and "unknown parameter(s) warp" in (job.reason or "")


# Worker -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_background_job_stores_what_the_same_run_in_the_foreground_stores(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    store = Store(tmp_path / "koed.db")
    env = _env(fake_openai, tmp_path)
    job_id = enqueue(store, _params(), "boss")
    _serve(store, env).join(60)
    job = Jobs(store).get(job_id)
    assert job.state == "finished", job.reason
    assert (job.done, job.total, job.failed) == (8, 8, 0)
    assert job.started and job.ended and "8 answered" in (job.message or "")

    alone = Store(tmp_path / "foreground.db")
    result = execute(_params(), alone, env, Hooks())
    assert result.data["run_id"] == job.result["run_id"]  # the same run identity
    background = _answers(store, job.result["run_id"])
    assert len(background) == 8 and background == _answers(alone, result.data["run_id"])


@pytest.mark.slow
def test_cancel_stops_a_running_job_and_keeps_what_it_stored(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.latency_s = 0.1
    store = Store(tmp_path / "koed.db")
    job_id = enqueue(store, _params(limit=None, concurrency=2), "boss")
    thread = _serve(store, _env(fake_openai, tmp_path))
    _wait(lambda: stored_responses(tmp_path / "koed.db") >= 4)
    Jobs(store).request_cancel(job_id)
    thread.join(60)
    job = Jobs(store).get(job_id)
    stored = store.count("responses")
    assert job.state == "cancelled"
    assert 4 <= stored < 68 and job.done == stored  # stopped early, every answer kept
    assert not store.rows("select id from responses where error is not null")
    # The same job queued again resumes: only what is missing is asked.
    asked = fake_openai.live_calls
    again = enqueue(store, _params(limit=None, concurrency=2), "boss")
    _serve(store, _env(fake_openai, tmp_path)).join(120)
    assert Jobs(store).get(again).state == "finished"
    assert store.count("responses") == 68
    assert fake_openai.live_calls - asked == (68 - stored) * 2  # two calls per item (paper)


@pytest.mark.slow
def test_a_killed_worker_s_job_is_taken_over_and_resumes(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.latency_s = 0.1
    db = tmp_path / "koed.db"
    store = Store(db)
    job_id = enqueue(store, _params(limit=None, concurrency=2), "boss")
    env = {**os.environ, "OPENAI_BASE_URL": fake_openai.base_url, "KOED_DB": str(db)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "koed_core.cli", "worker"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait(lambda: stored_responses(db) >= 6)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    with sqlite3.connect(db) as conn:
        state, worker = conn.execute(
            "select state, worker from jobs where id = ?", [job_id]
        ).fetchone()
    assert state == "running" and worker.endswith(f":{proc.pid}")  # died mid-job
    at_kill = stored_responses(db)
    _serve(store, _env(fake_openai, tmp_path)).join(120)  # takes over at once: pid gone
    job = Jobs(store).get(job_id)
    assert job.state == "finished" and job.done == 68
    keys = store.rows("select conv_id, lang, count(*) as n from responses group by 1, 2")
    assert len(keys) == 68 and all(k["n"] == 1 for k in keys)
    assert at_kill < 68


# Provider Batch API -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_batch_job_stores_every_result_once_and_retries_only_the_failed_line(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail_lines = 1
    store = Store(tmp_path / "koed.db")
    env = _env(fake_openai, tmp_path)
    run = execute(_params(limit=3, batch=True), store, env, Hooks())
    assert run.failed == 0
    run_id = run.data["run_id"]
    assert store.count("responses") == 6
    assert fake_openai.live_calls == 0  # nothing went out as a live call
    # paper prompts: 6 emotion lines, then 6 reply lines; plus the one failed line again
    assert fake_openai.batch_lines == 6 + 6 + 1
    sent = [line for b in fake_openai.batches.values() for line in _lines(fake_openai, b)]
    assert len(sent) == 13 and len(set(sent)) == 12  # exactly one line was sent twice
    assert store.rows("select count(*) as n from provider_batches where consumed = 0")[0]["n"] == 0
    # the same answers a live run gives
    live = Store(tmp_path / "live.db")
    result = execute(_params(limit=3), live, env, Hooks())
    assert [a[:4] for a in _answers(store, run_id)] == [
        a[:4] for a in _answers(live, result.data["run_id"])
    ]

    judged = execute(
        JudgeRequest(run_id=run_id, judge="openai:fake", batch=True), store, env, Hooks()
    )
    assert judged.failed == 0
    rows = store.rows("select response_id, dimension, count(*) as n from judgments group by 1, 2")
    assert len(rows) == 30 and all(r["n"] == 1 for r in rows)
    assert fake_openai.live_calls == 12  # only the live comparison run above


def _lines(server: FakeOpenAI, batch: dict[str, object]) -> list[str]:
    import json

    data = server.files[str(batch["input_file_id"])].decode()
    return [json.loads(line)["custom_id"] for line in data.splitlines()]


@pytest.mark.slow
def test_a_batch_run_killed_while_waiting_picks_up_its_batch_instead_of_paying_twice(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.batch_delay_s = 600  # the first batch is still running when the run dies
    db = tmp_path / "koed.db"
    env = {
        **os.environ,
        "OPENAI_BASE_URL": fake_openai.base_url,
        "KOED_DB": str(db),
        "KOED_BATCH_POLL_S": "0.05",
    }
    command = [
        sys.executable, "-m", "koed_core.cli", "run", "--model", "openai:fake",
        "--limit", "3", "--batch", "--data", str(SAMPLE_FILE),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait(lambda: len(fake_openai.batches) == 1 and _status(db) == "in_progress")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert stored_responses(db) == 0
    fake_openai.batches["batch_1"]["_ready_at"] = 0  # the provider finishes it meanwhile
    fake_openai.batch_delay_s = 0
    store = Store(db)
    result = execute(_params(limit=3, batch=True), store, _env(fake_openai, tmp_path), Hooks())
    assert result.failed == 0 and store.count("responses") == 6
    assert len(fake_openai.batches) == 2  # batch 1 collected, batch 2 for the replies
    assert fake_openai.batch_lines == 12 and fake_openai.live_calls == 0


def _status(db: Path) -> str | None:
    try:
        with sqlite3.connect(db) as conn:
            row = conn.execute("select status from provider_batches").fetchone()
    except sqlite3.OperationalError:
        return None
    return row[0] if row else None


@pytest.mark.slow
def test_a_server_without_a_batch_api_is_named_before_anything_is_sent(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.batch_api = False
    store = Store(tmp_path / "koed.db")
    with pytest.raises(ModelError, match=r"has no Batch API \(/v1/files and /v1/batches\)"):
        execute(_params(limit=1, batch=True), store, _env(fake_openai, tmp_path), Hooks())
    assert fake_openai.live_calls == 0 and store.count("responses") == 0
    # a reproduction with batch = true runs such a server live instead, and says so
    from koed_core.jobs.kinds import ReproduceJob

    plan = (
        'name = "t"\nmodels = ["openai:listener"]\njudge = "openai:judge"\nsubset = "full"\n'
        'sample = 2\nprotocols = ["single"]\nbatch = true\n'
    )
    said: list[str] = []
    result = execute(
        ReproduceJob(plan="t", plan_text=plan, data=str(SAMPLE_FILE)),
        store,
        _env(fake_openai, tmp_path),
        Hooks(say=said.append),
    )
    assert not result.problems and store.count("responses") == 4
    assert "openai:listener: no Batch API at its server, so live calls" in said


# Command line -------------------------------------------------------------------------------


def test_koed_jobs_lists_and_cancels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KOED_DB", str(tmp_path / "koed.db"))
    store = Store(tmp_path / "koed.db")
    job_id = enqueue(store, _params(), "boss")
    assert main(["jobs"]) == 0
    out = capsys.readouterr().out
    assert f"{job_id}\tqueued\t0\t0\t0\tboss" in out and "run openai:fake" in out
    assert main(["jobs", "cancel", str(job_id)]) == 0
    assert "cancelled before it started" in capsys.readouterr().out
    assert main(["jobs", "cancel", str(job_id)]) == 1
    assert "already ended (cancelled)" in capsys.readouterr().err
    assert main(["jobs", "cancel", "99"]) == 1
    assert "no job 99" in capsys.readouterr().err


def test_the_dry_run_says_what_the_batch_api_would_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "small"\nmodels = ["openai:a"]\njudge = "gpt-4o"\nsubset = "full"\n'
        'protocols = ["single"]\nbatch = true\n'
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["reproduce", str(plan), "--dry-run", "--data", str(SAMPLE_FILE)]) == 0
    out = capsys.readouterr().out
    assert "api.openai.com: 340 requests" in out  # the judge: 68 answers x 5 dimensions
    assert "via the Batch API: about half the live price, answers within 24 h" in out
    assert "127.0.0.1:9/v1: 136 requests" in out and "Batch API if it has one" in out
    plan.write_text(plan.read_text().replace("batch = true\n", ""))
    assert main(["reproduce", str(plan), "--dry-run", "--data", str(SAMPLE_FILE)]) == 0
    out = capsys.readouterr().out
    assert "via the Batch API" not in out and "with --batch" in out


@pytest.mark.slow
def test_a_reproduction_job_runs_and_judges_every_model_of_its_plan(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    from koed_core.jobs.kinds import ReproduceJob

    plan = (
        'name = "tiny"\nmodels = ["openai:listener"]\njudge = "openai:judge"\n'
        'subset = "full"\nsample = 3\nprotocols = ["single"]\n'
    )
    store = Store(tmp_path / "koed.db")
    job_id = enqueue(
        store, ReproduceJob(plan="tiny.toml", plan_text=plan, data=str(SAMPLE_FILE)), None
    )
    _serve(store, _env(fake_openai, tmp_path)).join(120)
    job = Jobs(store).get(job_id)
    assert job.state == "finished", job.reason
    assert list(job.result["runs"]) == ["openai:listener single"]
    assert job.result["judge"].startswith("openai:judge")
    assert store.count("responses") == 6  # 3 dialogues x 2 languages
    scored = store.rows("select count(*) as n from judgments where score is not null")[0]["n"]
    assert scored == 30 and (job.done, job.total) == (36, 36)  # 6 answers + 30 verdicts
    with pytest.raises(KoedError, match="not valid TOML"):
        enqueue(store, ReproduceJob(plan="bad.toml", plan_text="name = "), None)


def test_a_worker_never_takes_over_a_job_it_runs_itself(tmp_path: Path) -> None:
    """Finding 31.7: on a full disk a worker's beats stop landing, so its own running job
    looks stale; it must not claim it a second time. Another worker may take it over, and
    the first then reads that the job is no longer its own (and stops asking models)."""
    store = Store(tmp_path / "q.db")
    jobs = Jobs(store)
    job_id = enqueue(store, _params(), None)
    assert jobs.claim("w1:1").id == job_id  # type: ignore[union-attr]
    assert jobs.still_ours(job_id, "w1:1")
    assert jobs.claim("w1:1", stale_after_s=-1) is None  # stale-looking, but w1 runs it
    assert jobs.claimable(stale_after_s=-1) == 1  # to anyone else it is orphaned
    assert jobs.claim("w2:2", stale_after_s=-1).id == job_id  # type: ignore[union-attr]
    assert not jobs.still_ours(job_id, "w1:1") and jobs.still_ours(job_id, "w2:2")
    jobs.finish(job_id, "failed", reason="the disk is full")
    assert not jobs.still_ours(job_id, "w2:2")  # ended: the second execution stops too


def test_a_stopping_worker_gives_up_a_request_in_flight_and_requeues_its_job(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """Finding 31.3: SIGTERM (which sets ``stopping``, as Ctrl-C does) and ``koed jobs
    cancel`` waited for a silent server's request. The worker now gives it up a few
    seconds after the stop, puts the job back in the queue and exits."""
    from fixtures.fake_openai import Step

    fake_openai.queue(Step(delay_s=600))
    store = Store(tmp_path / "koed.db")
    job_id = enqueue(store, _params(limit=1, langs=("ko",), concurrency=1), "boss")
    worker = Worker(store, _env(fake_openai, tmp_path), tick_s=0.05)
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    _wait(lambda: fake_openai.in_flight > 0)
    worker.stopping.set()  # what the SIGTERM handler does
    thread.join(60)  # a guard against hanging, not a measurement
    assert not thread.is_alive(), "the worker still waits for the silent server"
    job = Jobs(store).get(job_id)
    assert job.state == "queued" and store.count("responses") == 0


def test_a_judging_that_leaves_verdicts_unscored_says_why_and_what_to_try(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """A summary of "0 scored, 30 unscored" said nothing useful. Now it names the
    commonest reason and the lenient parser, in the job's row and on the command line."""
    from fixtures.fake_openai import Step

    store = Store(tmp_path / "koed.db")
    env = _env(fake_openai, tmp_path)
    run = execute(_params(limit=1), store, env, Hooks())
    fake_openai.queue(*[Step(text="A fine reply. I would give it a four.")] * 5)
    judged = execute(
        JudgeRequest(run_id=run.data["run_id"], judge="openai:fake", dims=("ER",), concurrency=1),
        store,
        env,
        Hooks(),
    )
    assert "1 unscored" in judged.summary
    reason = "the authors' parser rejects it: no 'Score:' in the reply"  # paper mode's parser
    assert f"The commonest reason for no score: {reason} (1 of 1)" in judged.summary
    assert "--parse lenient" in judged.summary
    assert judged.data["said"]["values"]["reason"] == reason


def test_the_dry_run_of_a_sensitivity_plan_says_each_variants_calls_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Per variant, listener and judge calls; the emotion reader's judged
    texts are the base's, so it costs no judge call at all (no resampling noise)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'name = "moved"\nmodels = ["openai:a"]\njudge = "gpt-4o"\nsubset = "full"\n'
        'protocols = ["single"]\n'
        '[variants."emotion reader: extended"]\nemotion_reader = "extended"\n'
        '[variants."post-processing: none"]\npostprocess = "none"\n'
        '[variants."commas: decoded"]\ncommas = "decoded"\n'
        '[variants."judge parse: lenient"]\njudge_parse = "lenient"\n'
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["reproduce", str(plan), "--dry-run", "--data", str(SAMPLE_FILE)]) == 0
    out = capsys.readouterr().out
    # 68 answers (34 dialogues x 2 languages), two calls each (the paper set), 5 dimensions
    assert "authors' pipeline: 136 listener, 340 judge" in out
    assert "emotion reader: extended: 0 listener, 0 judge: reads the base's answers" in out
    assert "post-processing: none: 0 listener, 340 judge" in out and "at most" in out
    # Only the 9 English items with _comma_ in their context are new
    # requests; the Korean half and the rest are byte-identical and take the base's answers
    assert "commas: decoded: 18 listener, 45 judge: a run of its own" in out
    assert "judge parse: lenient: 0 listener, 0 judge: reads the judge's stored replies" in out
    assert "api.openai.com: 725 requests" in out  # 340 + 340 + 45: reader and parser ask none
