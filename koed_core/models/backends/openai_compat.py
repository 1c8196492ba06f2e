"""OpenAI, and every server that speaks its chat-completions API (vLLM, Ollama,
llama.cpp server, LM Studio), through the official ``openai`` SDK.

Rate limits, 5xx and time-outs are retried through tenacity (``retries``: exponential
backoff with jitter, honouring ``Retry-After``; the SDK's own loop is off); what still
fails becomes one :class:`ModelError`.
The API key is handed to the SDK and nowhere else.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletion

from koed_core.models.backends.deadline import DeadlineClient, abandonable
from koed_core.models.backends.retries import (
    MAX_RETRY_AFTER_S,
    Tried,
    retry_after_s,
    with_retries,
)
from koed_core.models.client import (
    ABANDON_GRACE_S,
    Completion,
    GenerationSettings,
    ModelError,
    require_text,
)
from koed_core.models.protocol import ListenerTask, Message
from koed_core.models.registry import ModelSpec
from koed_core.text.redact import redact_url

NO_KEY_NEEDED = "not-needed"
NOT_AN_API = "not_api"
"""The error kind of a reply that came back but is not the API's (HTML, other JSON)."""
SHOWN_CHARS = 60  # local servers ignore the key, but the SDK wants one
_WARM = threading.Lock()
_warmed = False


def _warm_up() -> None:
    """Build the SDK's response models once, in one thread. Left to the first replies,
    eight worker threads building them at once can fail inside pydantic ("BaseModel
    cannot be instantiated directly"), which ended a whole run in a walk-through."""
    global _warmed
    with _WARM:
        if _warmed:
            return
        from openai.types import Model
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        message = {"role": "assistant", "content": "x"}
        ChatCompletion.model_validate(
            {
                "id": "warm",
                "object": "chat.completion",
                "created": 0,
                "model": "warm",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )
        ChatCompletionChunk.model_validate(
            {
                "id": "warm",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "warm",
                "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}],
            }
        )
        Model.model_validate({"id": "warm", "object": "model", "created": 0, "owned_by": "x"})
        _warmed = True


def chat_request(
    spec: ModelSpec, messages: list[Message], settings: GenerationSettings
) -> dict[str, Any]:
    """The chat-completions body; a live call and a Batch API line send the same one."""
    request: dict[str, Any] = {
        "model": spec.model,
        "messages": [dict(m) for m in messages],
        "max_tokens": settings.max_tokens,
    }
    if settings.temperature is not None:  # None: the server's default decoding
        request["temperature"] = settings.temperature
    if settings.top_p is not None:
        request["top_p"] = settings.top_p
    # Not in OpenAI's API, read by vLLM (a model's generation config made explicit)
    for name in SERVER_EXTRAS:
        value = getattr(settings, name)
        if value is not None:
            request[name] = value
    return request


SERVER_EXTRAS = ("top_k", "repetition_penalty")


class OpenAIClient:
    """Chat completions against ``spec.base_url`` (OpenAI itself when unset)."""

    max_concurrency: int | None = None

    def __init__(self, spec: ModelSpec, api_key: str | None) -> None:
        if not api_key and spec.base_url is None:
            raise ModelError(
                "auth",
                f"model {spec.name!r} needs an API key: set {spec.api_key_env} in the "
                "environment or in .streamlit/secrets.toml, or type it in the sidebar",
            )
        _warm_up()
        self.name = spec.name
        self._spec = spec
        self._key = api_key or NO_KEY_NEEDED
        self._clients: dict[tuple[float, int], openai.OpenAI] = {}

    @property
    def where(self) -> str:
        """The server, for messages (never the key)."""
        return redact_url(self._spec.base_url) or "api.openai.com"

    def _client(self, settings: GenerationSettings) -> openai.OpenAI:
        key = (settings.timeout_s, settings.max_retries)
        if key not in self._clients:
            self._clients[key] = openai.OpenAI(
                api_key=self._key,
                base_url=self._spec.base_url,
                timeout=settings.timeout_s,
                max_retries=0,  # tenacity retries (koed_core.models.backends.retries)
                http_client=DeadlineClient(settings.timeout_s, timeout=settings.timeout_s),
            )
        return self._clients[key]

    def _request(self, messages: list[Message], settings: GenerationSettings) -> dict[str, Any]:
        request = chat_request(self._spec, messages, settings)
        extra = {name: request.pop(name) for name in SERVER_EXTRAS if name in request}
        return {**request, "extra_body": extra} if extra else request

    def complete(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Completion:
        """One non-streaming call; token counts from the server's usage block.

        The reply's shape is checked inside the classified block: a ``200 OK`` that is not
        a chat completion (a captive portal's page, a proxy's error page, a base URL that
        points at a web site) fails this one item with a sentence saying what came back.
        """
        start = time.perf_counter()
        client, request = self._client(settings), self._request(messages, settings)
        with self._errors():
            raw = abandonable(
                lambda: with_retries(
                    lambda: client.chat.completions.with_raw_response.create(**request),
                    settings.max_retries + 1,
                ),
                settings.stop,
                ABANDON_GRACE_S,
                self.name,
            )
            reply = raw.parse()
            if not isinstance(reply, ChatCompletion) or not isinstance(reply.choices, list):
                raise self._not_an_api(raw.headers.get("content-type"), raw.http_response)
            text = reply.choices[0].message.content if reply.choices else None
            if text is not None and not isinstance(text, str):
                raise self._not_an_api(raw.headers.get("content-type"), raw.http_response)
            usage = reply.usage
            prompt_tokens = usage.prompt_tokens if usage else None
            completion_tokens = usage.completion_tokens if usage else None
        latency = time.perf_counter() - start
        return Completion(
            require_text(text or "", self.name), latency, prompt_tokens, completion_tokens
        )

    def _not_an_api(self, content_type: str | None, response: httpx2.Response) -> ModelError:
        """One sentence naming the server and what it sent instead of an API answer."""
        try:
            body = response.text
        except (UnicodeDecodeError, httpx2.HTTPError):
            body = ""
        return ModelError(
            NOT_AN_API,
            f"{self.name}: {self.where} answered HTTP {response.status_code} with "
            f"{shown_content_type(content_type)} ({first_characters(body)}), not an "
            "OpenAI-compatible chat completion: check the base URL (OPENAI_BASE_URL or the "
            "model's base_url), a proxy or a Wi-Fi login page in the way",
        )

    def stream(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Iterator[str]:
        """Yield text deltas as the server sends them."""
        produced = False
        with self._errors():
            client, request = self._client(settings), self._request(messages, settings)
            chunks = with_retries(  # the request that opens the stream; never a chunk again
                lambda: client.chat.completions.create(**request, stream=True),
                settings.max_retries + 1,
            )
            for chunk in chunks:
                delta = chunk.choices[0].delta.content if chunk.choices else None
                if delta:
                    produced = True
                    yield delta
        if not produced:
            require_text("", self.name)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn the SDK's exceptions into one user-facing ModelError."""
        try:
            yield
        except Tried as tried:
            raise self._model_error(tried.err, tried.tries) from None
        except openai.OpenAIError as err:
            raise self._model_error(err, 1) from None
        except (AttributeError, TypeError, IndexError, KeyError) as err:
            # A JSON reply of another shape (choices of the wrong type, a message without
            # content): one failed item, named, never the end of the run.
            raise ModelError(
                NOT_AN_API,
                f"{self.name}: {self.where} sent a reply that is not a chat completion "
                f"({type(err).__name__})",
            ) from None
        except (UnicodeDecodeError, json.JSONDecodeError, httpx2.DecodingError) as err:
            # A body that is not UTF-8 or not JSON is one failed item, like an HTTP error,
            # never the end of the whole run (the SDK lets these through unwrapped).
            raise ModelError(
                "response",
                f"{self.name}: {self.where} sent a reply that could not be read "
                f"({type(err).__name__})",
            ) from None

    def _model_error(self, err: openai.OpenAIError, tries: int) -> ModelError:
        name, where = self.name, self.where
        if isinstance(err, openai.RateLimitError):
            wait = retry_after_s(err)
            if wait is not None and wait > MAX_RETRY_AFTER_S:
                return ModelError(
                    "rate_limit",
                    f"{name}: rate-limited by {where}, which asks to wait {wait:,.0f} s, longer "
                    f"than the {MAX_RETRY_AFTER_S:.0f} s a retry waits: not retried "
                    f"({tries} {'try' if tries == 1 else 'tries'})",
                )
            return ModelError("rate_limit", f"{name}: rate-limited by {where} ({tries} tries)")
        if isinstance(err, openai.APITimeoutError):
            return ModelError("timeout", f"{name}: {where} did not answer in time ({tries} tries)")
        if isinstance(err, openai.APIConnectionError):
            return ModelError("connection", f"{name}: could not reach {where} ({tries} tries)")
        if isinstance(err, openai.AuthenticationError):
            return ModelError("auth", f"{name}: {where} rejected the API key")
        if isinstance(err, openai.NotFoundError):
            return ModelError("not_found", f"{name}: {where} has no model {self._spec.model!r}")
        if isinstance(err, openai.APIStatusError) and err.status_code >= 500:
            return ModelError(
                "server", f"{name}: {where} failed with HTTP {err.status_code} ({tries} tries)"
            )
        if isinstance(err, openai.APIStatusError):
            return ModelError("request", f"{name}: {where} refused the request ({err.status_code})")
        return ModelError("unknown", f"{name}: {type(err).__name__} from {where}")


def shown_content_type(content_type: str | None) -> str:
    """The reply's content type for a message, or say there was none."""
    kind = (content_type or "").split(";")[0].strip()
    return f"Content-Type {kind}" if kind else "no Content-Type"


def first_characters(body: str, count: int = SHOWN_CHARS) -> str:
    """The start of a body, on one line and quoted, for a message a person reads."""
    flat = " ".join(body.split())
    if not flat:
        return "an empty body"
    return repr(flat[:count] + ("..." if len(flat) > count else ""))


MAX_LISTED = 500
"""Most ids a model list shows (a hosted provider lists hundreds; a picker needs fewer)."""


def served_models(
    base_url: str | None, key: str | None, timeout: float = 5.0, limit: int | None = MAX_LISTED
) -> list[str]:
    """The model ids an OpenAI-compatible server lists (``GET /models``), sorted: what an
    admin may pick from instead of typing an id.

    Raises:
        ModelError: the server is not reachable, refuses the key, or keeps no list.
    """
    where = redact_url(base_url) or "api.openai.com"
    if base_url is None and not key:
        raise ModelError("auth", f"{where}: no API key (set OPENAI_API_KEY) to list its models")
    client = openai.OpenAI(
        base_url=base_url, api_key=key or NO_KEY_NEEDED, timeout=timeout, max_retries=0
    )
    try:
        ids = sorted({str(model.id) for model in client.models.list()})
    except openai.AuthenticationError:
        raise ModelError("auth", f"{where} rejected the API key") from None
    except (openai.APIConnectionError, openai.APITimeoutError):
        raise ModelError("connection", f"could not reach {where}") from None
    except openai.APIStatusError as err:
        raise ModelError(
            "request", f"{where} keeps no model list (HTTP {err.status_code})"
        ) from None
    except (openai.OpenAIError, ValueError, TypeError, AttributeError):
        raise ModelError(
            "request", f"{where} answered with something that is not a model list"
        ) from None
    return ids[:limit] if limit else ids
