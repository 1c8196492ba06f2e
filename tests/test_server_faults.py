"""A misconfigured model server: a 200 reply that is not the
API's, a Retry-After no one waits out, a server that answers nothing. Each fails one item
with a sentence; a run that can only fail stops early with one sentence, never a traceback
and never 1,360 failures."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI, Step
from koed_core.db import Runs, Store
from koed_core.db.jobs import Jobs
from koed_core.dialogues.dataset import load_dataset
from koed_core.jobs.kinds import Environment, enqueue
from koed_core.jobs.worker import Worker
from koed_core.judge.judging import judge_run
from koed_core.judge.request import JudgeRequest
from koed_core.models import passes
from koed_core.models.backends import make_client
from koed_core.models.client import GenerationSettings, ModelError
from koed_core.models.passes import ServerUnusable
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.paths import SAMPLE_FILE

ROOT = Path(__file__).resolve().parents[1]
PORTAL = (
    b"<!DOCTYPE html><html><head><title>Guest Wi-Fi</title></head>"
    b"<body><form>Sign in to continue</form></body></html>"
)


def html() -> Step:
    return Step(body=PORTAL, content_type="text/html; charset=utf-8")


def _spec(server: FakeOpenAI, name: str = "fake") -> ModelSpec:
    return ModelSpec(name=name, backend="openai", model="m", base_url=server.base_url)


def _run(server: FakeOpenAI, store: Store, **kwargs):  # type: ignore[no-untyped-def]
    dataset = load_dataset(SAMPLE_FILE)
    spec = _spec(server)
    options = {
        "langs": ("ko", "en"),
        "protocol": "single",
        "max_retries": 0,
        **kwargs,
    }
    return run_benchmark(
        store,
        make_client(spec, None),
        spec,
        dataset.dialogues,
        dataset.sha256,
        RunRequest(spec.name, **options),
    )


def test_one_html_page_fails_one_item_with_what_came_back(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    store = Store(tmp_path / "runs.db")
    fake_openai.queue(Step(), html())
    report = _run(fake_openai, store, limit=3, concurrency=1)
    assert (report.succeeded, report.failed) == (5, 1), report.errors
    assert report.errors == {"not_api": 1}
    failed = Runs(store).responses(report.run_id).dropna(subset=["error"])["error"].iloc[0]
    assert "text/html" in failed and "Guest Wi-Fi" in failed
    assert fake_openai.base_url in failed and "base URL" in failed


@pytest.mark.parametrize(
    "body",
    [b'{"hello": 1}', b'"a string"', b'{"choices": [{"message": 5}]}', b"[1, 2]"],
    ids=["other-json", "json-string", "message-not-object", "json-list"],
)
def test_json_of_another_shape_is_one_named_failure(fake_openai: FakeOpenAI, body: bytes) -> None:
    fake_openai.queue(Step(body=body))
    client = make_client(_spec(fake_openai), None)
    with pytest.raises(ModelError) as failed:
        client.complete([{"role": "user", "content": "hi"}], GenerationSettings(), None)
    assert failed.value.kind == "not_api"
    assert "chat completion" in str(failed.value)


def test_a_run_whose_every_reply_is_html_stops_early(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    store = Store(tmp_path / "runs.db")
    fake_openai.queue(*[html() for _ in range(100)])
    with pytest.raises(ServerUnusable) as stopped:
        _run(fake_openai, store, concurrency=2)
    said = str(stopped.value)
    assert "not the API's answer" in said and "text/html" in said
    assert fake_openai.base_url in said and "run the same command again" in said
    assert len(fake_openai.requests) <= passes.NOT_AN_API_IN_A_ROW + 2  # not 68


@pytest.mark.slow
def test_koed_run_on_an_html_server_prints_one_sentence(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.queue(*[html() for _ in range(100)])
    env = {**os.environ, "OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": "sk-test"}
    result = subprocess.run(
        [sys.executable, "-m", "koed_core.cli", "run", "--model", "openai:some-model"]
        + ["--db", str(tmp_path / "koed.db")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "Traceback" not in out and "AttributeError" not in out
    assert "not the API's answer" in out and "text/html" in out, out
    assert len(fake_openai.requests) < 20


def test_a_judge_on_an_html_server_stops_early(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    run_id = _run(fake_openai, store, limit=4, concurrency=1).run_id
    asked = len(fake_openai.requests)
    fake_openai.queue(*[html() for _ in range(100)])
    spec = _spec(fake_openai, "judge")
    with pytest.raises(ServerUnusable) as stopped:
        judge_run(
            store,
            make_client(spec, None),
            spec,
            JudgeRequest(run_id, judge=spec.name, mode="strict", concurrency=1),
        )
    assert "text/html" in str(stopped.value)
    assert len(fake_openai.requests) - asked <= passes.NOT_AN_API_IN_A_ROW + 1


@pytest.mark.slow
def test_a_run_job_on_an_html_server_ends_failed_with_the_sentence(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.queue(*[html() for _ in range(100)])
    db = tmp_path / "koed.db"
    store = Store(db)
    from koed_core.config import Settings

    env = Environment(
        Settings(db_path=db, cache_dir=tmp_path),
        env={"OPENAI_BASE_URL": fake_openai.base_url},
        secrets={},
    )
    job_id = enqueue(store, RunRequest(model="openai:fake", data=str(SAMPLE_FILE)), "tester")
    worker = Worker(store, env, idle_exit_s=0.5, tick_s=0.05)
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    thread.join(60)
    job = Jobs(store).get(job_id)
    assert job.state == "failed", job
    assert "not the API's answer" in (job.reason or "") and "text/html" in (job.reason or "")
    assert len(fake_openai.requests) < 68


def test_a_retry_after_no_one_waits_out_is_said_as_one_try(fake_openai: FakeOpenAI) -> None:
    """The SDK does not retry past its 120 s cap; the message said '5 tries' after one."""
    fake_openai.queue(*[Step(429, headers={"Retry-After": "100000"}) for _ in range(5)])
    client = make_client(_spec(fake_openai), None)
    with pytest.raises(ModelError) as failed:
        client.complete([{"role": "user", "content": "hi"}], GenerationSettings(), None)
    assert len(fake_openai.requests) == 1
    said = str(failed.value)
    assert "1 try" in said and "100,000 s" in said and "not retried" in said


def test_retries_are_counted_as_sent(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(*[Step(500, headers={"retry-after-ms": "10"}) for _ in range(3)])
    client = make_client(_spec(fake_openai), None)
    with pytest.raises(ModelError) as failed:
        client.complete(
            [{"role": "user", "content": "hi"}], GenerationSettings(max_retries=2), None
        )
    assert len(fake_openai.requests) == 3 and "(3 tries)" in str(failed.value)


def test_a_run_whose_server_answers_nothing_stops_after_the_stated_time(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every item failing on time-outs, 5xx: the pass stops once nothing has been
    answered for SERVER_SILENCE_S (here shortened), with a sentence saying so."""
    monkeypatch.setattr(passes, "SERVER_SILENCE_S", 0.6)
    fake_openai.queue(*[Step(503, delay_s=0.15) for _ in range(100)])
    store = Store(tmp_path / "runs.db")
    started = time.monotonic()
    with pytest.raises(ServerUnusable) as stopped:
        _run(fake_openai, store, concurrency=1)
    said = str(stopped.value)
    assert "answered nothing" in said and "HTTP 503" in said
    assert len(fake_openai.requests) < 20 and time.monotonic() - started < 10


def test_answers_between_failures_keep_a_run_going(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """The breaker is for a server that can only fail: once it has answered, HTML now and
    then fails those items only, and the run goes to its end."""
    fake_openai.queue(Step(), Step(), *[html() for _ in range(30)])  # paper set: two calls
    store = Store(tmp_path / "runs.db")
    report = _run(fake_openai, store, limit=8, concurrency=1)
    assert (report.succeeded, report.failed) == (1, 15), report.errors
