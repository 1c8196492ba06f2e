"""OpenAI's Batch API (and compatible servers with ``/v1/files`` + ``/v1/batches``) behind
the ordinary chat-client interface.

The pass engine (``koed_core.models.passes``) calls ``complete`` from many threads, as
it does for live calls. Here each call joins a queue instead of going out; when no new
call has arrived for a moment (``quiet_s``) the queue is written as JSONL, uploaded and
sent as one batch, which is then polled until the provider finishes it (within its 24 h
window, at half the price at OpenAI). Every caller gets its own line's answer and stores
it under the same keys as a live call. Lines the provider failed are sent again in a new
batch (``line_retries`` times); only then does a caller get an error.

Resuming: every batch is recorded in the database as soon as the provider accepts it.
A pass started after a crash first collects the results of the batches it had sent, so
nothing is paid for twice. Lines are named by a hash of their request plus the number of
times that same request was asked in this pass (a judge asking again after an
unparseable verdict sends an identical request and must get a fresh answer).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal, TypeVar

import openai

from koed_core.db.jobs import Jobs, ProviderBatch
from koed_core.db.types import short_hash
from koed_core.models.backends.openai_compat import NO_KEY_NEEDED, chat_request
from koed_core.models.backends.retries import Tried, with_retries
from koed_core.models.client import Completion, GenerationSettings, ModelError, require_text
from koed_core.models.protocol import ListenerTask, Message
from koed_core.models.registry import ModelSpec
from koed_core.text.redact import redact_url

ENDPOINT: Literal["/v1/chat/completions"] = "/v1/chat/completions"
MAX_LINES = 50_000
"""OpenAI's limit of requests in one batch."""
TERMINAL = ("completed", "failed", "expired", "cancelled")
API_TRIES = 6
"""Tries of one call to the files or batches API (through tenacity, as every client's)."""
T = TypeVar("T")


@dataclass
class _Line:
    """One caller's request, from queued to answered."""

    custom_id: str
    body: dict[str, Any]
    tries: int = 0
    sent_at: float = 0.0
    result: Completion | ModelError | None = None
    event: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class ProviderBatchOptions:
    """How a batch client paces itself: polling, batch sizes and retries."""

    poll_s: float = 30.0
    """Seconds between looks at a batch in flight."""
    quiet_s: float = 0.5
    """Seconds without a new request before the requests waiting are sent as a batch."""
    line_retries: int = 2
    """Times a request answered with a server or rate-limit error goes in a new batch."""
    max_lines: int = MAX_LINES
    """Requests in one batch at most (never above the provider's ``MAX_LINES``)."""
    batch_size: int = 1000
    """Requests the engine puts in flight (each waits in the batch)."""
    read_attempts: int = 3
    """Tries at reading a finished batch's output files over a failing connection."""


class ProviderBatchClient:
    """A chat client whose ``complete`` calls are answered through provider batches."""

    max_concurrency: int | None = None

    def __init__(
        self,
        spec: ModelSpec,
        api_key: str | None,
        ledger: Jobs,
        options: ProviderBatchOptions | None = None,
        *,
        stop: Callable[[], bool] | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        if spec.backend != "openai":
            raise ModelError(
                "config",
                f"{spec.name} is a {spec.backend} model: only OpenAI and OpenAI-compatible "
                "servers offer a Batch API",
            )
        if not api_key and spec.base_url is None:
            raise ModelError(
                "auth", f"{spec.name} needs an API key for the Batch API: set {spec.api_key_env}"
            )
        self.name = spec.name
        self.server = redact_url(spec.base_url) or "api.openai.com"
        self._spec = spec
        self._ledger = ledger
        self._sdk = openai.OpenAI(
            api_key=api_key or NO_KEY_NEEDED, base_url=spec.base_url, timeout=120, max_retries=0
        )
        options = options or ProviderBatchOptions()
        self._poll_s = options.poll_s
        self._quiet_s = options.quiet_s
        self._line_retries = options.line_retries
        self._max_lines = min(options.max_lines, MAX_LINES)
        self.batch_size = min(options.batch_size, self._max_lines)
        """How many requests the engine puts in flight (each waits in the batch)."""
        self._stop = stop or (lambda: False)
        self._say = say or (lambda _message: None)
        self._read_attempts = options.read_attempts
        self._read_failures: Counter[str] = Counter()
        self._owner = f"{socket.gethostname()}:{os.getpid()}"
        self._cond = threading.Condition()
        self._asked: Counter[str] = Counter()
        self._queued: dict[str, _Line] = {}
        self._sent: dict[str, _Line] = {}
        self._earlier: dict[str, Completion | ModelError] = {}
        """Results of batches sent by an earlier pass, waiting for their caller."""
        self._open: dict[str, set[str]] = {}
        """Batches not finished yet: id -> the custom ids they carry."""
        self._used: list[str] = []
        self._last_arrival = 0.0
        self._closed = False
        self.sent_batches = 0
        """Batches this pass created (the CLI reports it)."""
        self._recover()
        self._thread = threading.Thread(target=self._loop, name="koed-batch", daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Ask the server whether it has a Batch API at all, before anything is planned.

        Raises:
            ModelError: it has none (a plain vLLM or Ollama server), rejects the key, or
                cannot be reached.
        """
        try:
            self._api(lambda: self._sdk.batches.list(limit=1))
        except openai.OpenAIError as err:
            self.close()
            raise _batch_error(self.name, self.server, err) from None

    # The chat-client interface -----------------------------------------------------------

    def complete(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Completion:
        """Wait for this request's line of a batch; raises ModelError as a live call does."""
        body = chat_request(self._spec, messages, settings)
        digest = short_hash(json.dumps(body, sort_keys=True, ensure_ascii=False))
        with self._cond:
            custom_id = f"{digest}-{self._asked[digest]}"
            self._asked[digest] += 1
            line = _Line(custom_id, body)
            if custom_id in self._earlier:
                line.result = self._earlier.pop(custom_id)
            elif any(custom_id in ids for ids in self._open.values()):
                self._sent[custom_id] = line  # an earlier pass sent it: wait for that batch
            else:
                self._queued[custom_id] = line
                self._last_arrival = time.monotonic()
            self._cond.notify_all()
        while not line.event.wait(0.2) and line.result is None:
            if self._closed or not self._thread.is_alive():
                break
        if line.result is None and not self._closed and not self._thread.is_alive():
            line.result = ModelError("server", f"{self.name}: the batch thread stopped")
        result = line.result or ModelError("cancelled", f"{self.name}: the batch was cancelled")
        if isinstance(result, ModelError):
            raise result
        return result

    def stream(
        self, messages: list[Message], settings: GenerationSettings, task: ListenerTask | None
    ) -> Iterator[str]:
        """Batches answer hours later, not word by word: the chat page uses live calls."""
        raise ModelError("request", f"{self.name}: a Batch API model cannot stream")

    def close(self) -> None:
        """The pass is over and every answer stored: its batches are never reused."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=5)
        self._ledger.consume(self._used)

    # The background loop ----------------------------------------------------------------

    def _recover(self) -> None:
        """Collect what an earlier pass sent: finished batches' results, open batches."""
        for batch in self._ledger.open_batches(self.server, self._spec.model, self._owner):
            self._used.append(batch.id)
            if batch.status == "completed" and batch.output_file_id is not None:
                try:
                    found = self._results(batch.id, batch.output_file_id, batch.error_file_id)
                except (openai.OpenAIError, ValueError, UnicodeError) as err:
                    # Unreadable now: its requests are asked again, and the batch is never
                    # taken up again (every later job of this model would trip on it).
                    self._note(
                        f"batch {batch.id} from an earlier pass could not be read "
                        f"({_reason(err)}); its requests are asked again"
                    )
                    self._ledger.consume([batch.id])
                    continue
                for custom_id, result in found.items():
                    self._earlier.setdefault(custom_id, result)
            elif batch.status not in TERMINAL:
                self._open[batch.id] = set(batch.custom_ids)

    def _loop(self) -> None:
        """Send queued lines and poll open batches until closed; whatever goes wrong in
        here fails the waiting calls with the reason instead of leaving them waiting."""
        try:
            self._serve()
        except Exception as err:  # noqa: BLE001 - callers must hear of it, never hang
            self._note(f"the batch loop stopped: {_reason(err)}")
            failure = ModelError("server", f"{self.name}: the batch loop stopped ({_reason(err)})")
            with self._cond:
                for line in [*self._queued.values(), *self._sent.values()]:
                    line.result = failure
                    line.event.set()
                self._queued.clear()
                self._sent.clear()

    def _serve(self) -> None:
        last_poll = 0.0
        while True:
            with self._cond:
                if self._closed:
                    return
                if self._stop():
                    self._cancel_all()
                    return
                ready = bool(self._queued) and (
                    time.monotonic() - self._last_arrival >= self._quiet_s
                    or len(self._queued) >= self._max_lines
                )
                lines = list(self._queued.values())[: self._max_lines] if ready else []
                for line in lines:
                    del self._queued[line.custom_id]
            if lines:
                self._send(lines)
            if self._open and time.monotonic() - last_poll >= self._poll_s:
                last_poll = time.monotonic()
                for batch_id in list(self._open):
                    self._poll(batch_id)
            time.sleep(min(self._quiet_s, self._poll_s, 0.2) / 2)

    def _send(self, lines: list[_Line]) -> None:
        """Upload the lines as JSONL and create the batch; record it before waiting."""
        payload = "".join(
            json.dumps(
                {"custom_id": ln.custom_id, "method": "POST", "url": ENDPOINT, "body": ln.body},
                ensure_ascii=False,
            )
            + "\n"
            for ln in lines
        ).encode("utf-8")
        try:
            upload = self._api(
                lambda: self._sdk.files.create(
                    file=("koed-batch.jsonl", payload, "application/jsonl"), purpose="batch"
                )
            )
            batch = self._api(
                lambda: self._sdk.batches.create(
                    input_file_id=upload.id,
                    endpoint=ENDPOINT,
                    completion_window="24h",
                    metadata={"source": "koed-studio", "model": self._spec.name},
                )
            )
        except openai.OpenAIError as err:
            self._resolve(lines, _batch_error(self.name, self.server, err))
            return
        ids = tuple(ln.custom_id for ln in lines)
        self._ledger.add_batch(
            ProviderBatch(
                batch.id,
                self.server,
                self._spec.model,
                upload.id,
                ids,
                batch.status,
                None,
                None,
                self._owner,
            )
        )
        self.sent_batches += 1
        now = time.monotonic()
        with self._cond:
            for ln in lines:
                ln.sent_at = now
                self._sent[ln.custom_id] = ln
            self._open[batch.id] = set(ids)
            self._used.append(batch.id)

    def _poll(self, batch_id: str) -> None:
        """Ask about one batch; when it ended, hand out its lines and resend the failed."""
        try:
            batch = self._api(lambda: self._sdk.batches.retrieve(batch_id))
        except openai.OpenAIError:
            return  # a hiccup while polling: ask again next time
        self._ledger.update_batch(batch_id, batch.status, batch.output_file_id, batch.error_file_id)
        if batch.status not in TERMINAL:
            return
        results: dict[str, Completion | ModelError] = {}
        if batch.status == "failed" and not batch.output_file_id:
            reasons = (
                "; ".join(e.message or "" for e in (batch.errors.data or []))
                if (batch.errors)
                else "no reason given"
            )
            failure = ModelError("request", f"{self.name}: the batch was refused ({reasons})")
        else:
            failure = ModelError(
                "server", f"{self.name}: the batch ended {batch.status} without this answer"
            )
            try:
                results = self._results(batch_id, batch.output_file_id, batch.error_file_id)
            except (openai.OpenAIError, ValueError, UnicodeError) as err:
                self._read_failures[batch_id] += 1
                transient = isinstance(err, openai.APIConnectionError | openai.InternalServerError)
                if transient and self._read_failures[batch_id] < self._read_attempts:
                    return  # the files will still be there on the next poll
                reason = f"its output could not be read ({_reason(err)})"
                self._note(f"batch {batch_id} {reason}; its requests are asked again")
                failure = ModelError("server", f"{self.name}: batch {batch_id}: {reason}")
                self._ledger.consume([batch_id])
        with self._cond:
            ids = self._open.pop(batch_id, set())
            foreign = set(results) - ids
            if foreign:  # an answer under an id this batch never sent is nobody's answer
                self._note(
                    f"batch {batch_id}: {len(foreign)} line(s) with a custom_id it never sent "
                    "(left out: they answer no request of this batch)"
                )
            retry: list[_Line] = []
            for custom_id in ids:
                line = self._sent.pop(custom_id, None)
                result = results.get(custom_id, failure)
                if line is None:
                    if isinstance(result, Completion):
                        self._earlier[custom_id] = result  # its caller has not asked yet
                    continue
                retryable = isinstance(result, ModelError) and result.kind in (
                    "server",
                    "rate_limit",
                )
                if retryable and line.tries < self._line_retries and batch.status != "failed":
                    line.tries += 1
                    retry.append(line)
                    continue
                if isinstance(result, Completion) and line.sent_at:
                    # A live call's latency is the request's; a batch line's is its wait.
                    result = replace(result, latency_s=time.monotonic() - line.sent_at)
                line.result = result
                line.event.set()
            for line in retry:
                self._queued[line.custom_id] = line
            if retry:
                self._last_arrival = 0.0  # send the retries at once

    def _results(
        self, batch_id: str, output_file_id: str | None, error_file_id: str | None
    ) -> dict[str, Completion | ModelError]:
        """Every readable line of a finished batch: an answer or the reason it failed.

        A line that is not JSON or names no ``custom_id`` cannot be matched to a request:
        it is counted and that request, missing from the result, fails and is asked again.
        A ``custom_id`` that comes twice keeps its first answer, and the repeat is reported.
        """
        results: dict[str, Completion | ModelError] = {}
        bad: Counter[str] = Counter()
        for file_id in (error_file_id, output_file_id):
            if not file_id:
                continue
            text = self._api(partial(self._sdk.files.content, file_id)).text
            for raw in text.splitlines():
                if not raw.strip():
                    continue
                try:
                    entry = json.loads(raw)
                except ValueError:
                    bad["not JSON"] += 1
                    continue
                custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
                if not isinstance(custom_id, str) or not custom_id:
                    bad["without a custom_id"] += 1
                    continue
                if custom_id in results:
                    bad["with a custom_id already answered (the first answer kept)"] += 1
                    continue
                results[custom_id] = self._line_result(entry)
        if bad:
            counts = ", ".join(f"{n} {what}" for what, n in bad.items())
            self._note(f"batch {batch_id}: lines {counts}")
        return results

    def _line_result(self, entry: dict[str, Any]) -> Completion | ModelError:
        """One line's answer; a line of the wrong shape is a failed line (asked again)."""
        try:
            return self._read_line(entry)
        except (AttributeError, TypeError, ValueError, KeyError, IndexError):
            return ModelError("server", f"{self.name}: a batch line could not be read")

    def _read_line(self, entry: dict[str, Any]) -> Completion | ModelError:
        response = entry.get("response") or {}
        status = int(response.get("status_code") or 0)
        if entry.get("error") or status != 200:
            message = (entry.get("error") or {}).get("message") or f"HTTP {status}"
            kind = (
                "rate_limit"
                if status == 429
                else "server"
                if status >= 500 or not status
                else ("request")
            )
            return ModelError(kind, f"{self.name}: a batch line failed ({message})")
        body = response.get("body") or {}
        choices = body.get("choices") or []
        text = (choices[0].get("message") or {}).get("content") if choices else None
        usage = body.get("usage") or {}
        try:
            answer = require_text(text or "", self.name)
        except ModelError as err:
            return err
        return Completion(answer, 0.0, usage.get("prompt_tokens"), usage.get("completion_tokens"))

    def _api(self, call: Callable[[], T]) -> T:
        """One call of the files or batches API, retried through tenacity (``retries``);
        the last try's SDK error is raised as it is."""
        try:
            return with_retries(call, API_TRIES)
        except Tried as tried:
            raise tried.err from None

    def _note(self, message: str) -> None:
        """What went wrong with the provider's output, in words, for the job's log."""
        with contextlib.suppress(Exception):
            self._say(f"{self.name}: {message}")

    def _resolve(self, lines: list[_Line], error: ModelError) -> None:
        with self._cond:
            for line in lines:
                line.result = error
                line.event.set()

    def _cancel_all(self) -> None:
        """Cancelled: stop waiting, ask the provider to stop, never reuse these batches."""
        for batch_id in list(self._open):
            with contextlib.suppress(openai.OpenAIError):
                self._api(partial(self._sdk.batches.cancel, batch_id))
        cancelled = ModelError("cancelled", f"{self.name}: the job was cancelled")
        for line in [*self._queued.values(), *self._sent.values()]:
            line.result = cancelled
            line.event.set()
        self._queued.clear()
        self._sent.clear()
        self._open.clear()


def _reason(err: BaseException) -> str:
    """An exception in a few words, without a traceback."""
    return f"{type(err).__name__}: {err}"[:200]


def _batch_error(name: str, server: str, err: openai.OpenAIError) -> ModelError:
    """Why a batch could not be sent, in words."""
    if isinstance(err, openai.NotFoundError):
        return ModelError(
            "not_found",
            f"{name}: {server} has no Batch API (/v1/files and /v1/batches); run it without "
            "--batch (live calls)",
        )
    if isinstance(err, openai.AuthenticationError):
        return ModelError("auth", f"{name}: {server} rejected the API key")
    if isinstance(err, openai.APIConnectionError):
        return ModelError("connection", f"{name}: could not reach {server}")
    return ModelError("request", f"{name}: {server} refused the batch ({type(err).__name__})")
