"""One retry library: the live model client, the Batch API client and the Prolific client
all retry through tenacity, never through a loop of their own or the SDK's.

Each test plants a failing server, counts the requests it receives and the waits that went
through tenacity's ``sleep`` hook (replaced, so nothing sleeps): the SDK's own retries
would send the same requests with no wait seen here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fixtures.fake_openai import FakeOpenAI, Step
from koed_core.db import Store
from koed_core.db.jobs import Jobs
from koed_core.models.backends import make_client, retries
from koed_core.models.backends.openai_batch import (
    API_TRIES,
    ProviderBatchClient,
    ProviderBatchOptions,
)
from koed_core.models.client import GenerationSettings, ModelError
from koed_core.models.registry import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = [{"role": "user", "content": "Speaker: hi"}]


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits tenacity asked for between tries, in order (none of them slept)."""
    seen: list[float] = []
    monkeypatch.setattr(retries, "nap", seen.append)
    return seen


def _spec(server: FakeOpenAI) -> ModelSpec:
    return ModelSpec(name="fake", backend="openai", model="fake-model", base_url=server.base_url)


def test_the_model_client_retries_through_tenacity(
    fake_openai: FakeOpenAI, waits: list[float]
) -> None:
    fake_openai.queue(Step(503), Step(503), Step(503))
    client = make_client(_spec(fake_openai), None)
    with pytest.raises(ModelError, match=r"HTTP 503 \(3 tries\)"):
        client.complete(MESSAGES, GenerationSettings(max_retries=2), None)  # type: ignore[arg-type]
    assert len(fake_openai.requests) == 3 and len(waits) == 2
    # from 0.5 s, doubling, with up to 0.25 s of jitter
    assert 0.5 <= waits[0] <= 0.75 and 1.0 <= waits[1] <= 1.25


def test_a_retry_after_is_waited_for_and_a_stream_is_retried_before_its_first_word(
    fake_openai: FakeOpenAI, waits: list[float]
) -> None:
    fake_openai.queue(Step(429, headers={"Retry-After": "3"}), Step(text="괜찮아요"))
    client = make_client(_spec(fake_openai), None)
    said = "".join(client.stream(MESSAGES, GenerationSettings(max_retries=2), None))  # type: ignore[arg-type]
    assert said == "괜찮아요" and waits == [3.0] and len(fake_openai.requests) == 2


def test_the_batch_client_retries_through_tenacity(
    fake_openai: FakeOpenAI, waits: list[float], tmp_path: Path
) -> None:
    ledger = Jobs(Store(tmp_path / "koed.db"))
    fake_openai.batch_api_failures = 2
    client = ProviderBatchClient(
        _spec(fake_openai), "key", ledger, ProviderBatchOptions(poll_s=0.05)
    )
    try:
        client.check()  # two 503s, then the list
        assert (fake_openai.batch_api_calls, len(waits)) == (3, 2)
        fake_openai.batch_api_failures = 100
        with pytest.raises(ModelError):
            client.check()
        assert fake_openai.batch_api_calls == 3 + API_TRIES and len(waits) == 2 + API_TRIES - 1
    finally:
        client.close()


def test_no_openai_sdk_client_retries_on_its_own() -> None:
    """Every ``openai.OpenAI(...)`` in koed_core is made with ``max_retries=0``."""
    made = []
    for path in sorted((ROOT / "koed_core").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "OpenAI(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "openai.OpenAI":
                given = {k.arg: ast.unparse(k.value) for k in node.keywords}
                made.append((path.name, given.get("max_retries")))
    assert made and all(value == "0" for _name, value in made), made
