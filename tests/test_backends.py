"""The OpenAI adapter over real HTTP to the scripted server; the human reference."""

from __future__ import annotations

import pytest

from fixtures.fake_openai import FakeOpenAI, Step
from koed_core.models.backends import make_client
from koed_core.models.client import GenerationSettings, ModelError
from koed_core.models.protocol import ContextTurn, ListenerTask
from koed_core.models.registry import ModelSpec

MESSAGES = [{"role": "system", "content": "be kind"}, {"role": "user", "content": "Speaker: hi"}]
FAST = GenerationSettings(max_retries=2, timeout_s=5)
SECRET = "sk-test-very-secret-key"


def _client(server: FakeOpenAI, key: str | None = SECRET):  # type: ignore[no-untyped-def]
    spec = ModelSpec(name="fake", backend="openai", model="fake-model", base_url=server.base_url)
    return make_client(spec, key)


def test_complete_sends_the_request_and_reads_usage(fake_openai: FakeOpenAI) -> None:
    done = _client(fake_openai).complete(
        MESSAGES, GenerationSettings(temperature=0.3, max_tokens=50), None
    )  # type: ignore[arg-type]
    assert done.text.startswith("Emotion: sad")
    assert done.prompt_tokens == 4 and done.completion_tokens == len(done.text.split())
    body = fake_openai.requests[-1]
    assert body["model"] == "fake-model" and body["messages"] == MESSAGES
    assert body["temperature"] == 0.3 and body["max_tokens"] == 50


def test_stream_yields_pieces(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(Step(text="정말 속상했겠다. 무슨 일이야?"))
    pieces = list(_client(fake_openai).stream(MESSAGES, FAST, None))  # type: ignore[arg-type]
    assert len(pieces) == 4 and "".join(pieces) == "정말 속상했겠다. 무슨 일이야?"
    assert fake_openai.requests[-1]["stream"] is True


def test_rate_limit_and_5xx_are_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(
        Step(429, headers={"retry-after-ms": "20"}), Step(500, headers={"retry-after-ms": "20"})
    )
    done = _client(fake_openai).complete(MESSAGES, FAST, None)  # type: ignore[arg-type]
    assert done.text and len(fake_openai.requests) == 3


def test_retried_without_a_retry_after_header(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(Step(503), Step(503))
    done = _client(fake_openai).complete(MESSAGES, FAST, None)  # type: ignore[arg-type]
    # the waits themselves (exponential with jitter) are timed in bench/chat.py
    assert done.text and len(fake_openai.requests) == 3


@pytest.mark.parametrize(
    ("steps", "kind", "words"),
    [
        ([Step(500, headers={"retry-after-ms": "10"})] * 3, "server", "HTTP 500 (3 tries)"),
        ([Step(429, headers={"retry-after-ms": "10"})] * 3, "rate_limit", "rate-limited"),
        ([Step(401)], "auth", "rejected the API key"),
        ([Step(404)], "not_found", "no model 'fake-model'"),
        ([Step(400)], "request", "refused the request (400)"),
        ([Step(text="   ")], "empty", "empty response"),
    ],
)
def test_persistent_failures_become_one_error(fake_openai: FakeOpenAI, steps, kind, words) -> None:  # type: ignore[no-untyped-def]
    fake_openai.queue(*steps)
    with pytest.raises(ModelError) as info:
        _client(fake_openai).complete(MESSAGES, FAST, None)  # type: ignore[arg-type]
    assert info.value.kind == kind and words in str(info.value)
    assert SECRET not in str(info.value)


def test_timeout_and_unreachable_server(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(Step(delay_s=1.5), Step(delay_s=1.5))
    with pytest.raises(ModelError) as info:
        _client(fake_openai).complete(
            MESSAGES, GenerationSettings(max_retries=1, timeout_s=0.5), None
        )  # type: ignore[arg-type]
    assert info.value.kind == "timeout"
    spec = ModelSpec(name="gone", backend="openai", model="m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ModelError, match="could not reach http://127.0.0.1:9/v1"):
        make_client(spec, None).complete(MESSAGES, GenerationSettings(max_retries=0), None)  # type: ignore[arg-type]


def test_streamed_empty_answer_is_an_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.queue(Step(text=""))
    with pytest.raises(ModelError, match="empty response"):
        list(_client(fake_openai).stream(MESSAGES, FAST, None))  # type: ignore[arg-type]


def test_openai_itself_needs_a_key() -> None:
    spec = ModelSpec(name="gpt-4o", backend="openai", model="gpt-4o")
    with pytest.raises(ModelError, match="needs an API key: set OPENAI_API_KEY"):
        make_client(spec, None)


def test_human_replays_the_reference() -> None:
    client = make_client(ModelSpec(name="human", backend="human"))
    task = ListenerTask(
        "c1", "ko", (ContextTurn("speaker", "가"),), reference="그랬구나, 힘들었겠다."
    )
    assert client.complete([], FAST, task).text == "그랬구나, 힘들었겠다."
    assert "".join(client.stream([], FAST, task)) == "그랬구나, 힘들었겠다."
    with pytest.raises(ModelError, match="no Listener turn after its context"):
        client.complete([], FAST, ListenerTask("c2", "en", (ContextTurn("speaker", "a"),)))
