"""A scripted OpenAI-compatible server on localhost: the far side of the network in tests.

It speaks ``POST /v1/chat/completions`` (whole and streamed as server-sent events),
``GET /v1/models``, and the Batch API: ``POST /v1/files`` (a JSONL upload),
``POST /v1/batches``, ``GET /v1/batches`` (a list), ``GET /v1/batches/ID``, ``POST /v1/batches/ID/cancel`` and
``GET /v1/files/ID/content``. A batch answers each line as a live call would, after
``batch_delay_s``; ``fail_lines`` makes that many lines fail with a 500 (once each). By default it answers like a polite listener in the language of the
conversation; a script can queue failures (429, 500, a stall) or exact replies, and every
request body is kept for assertions. Run it alone for the browser test or the benchmark:

    python tests/fake_openai.py --port 8765 [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANGUL = re.compile(r"[\uac00-\ud7a3]")


@dataclass
class Step:
    """One scripted answer: an HTTP error status, a stall, or an exact reply text."""

    status: int = 200
    text: str | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def default_reply(body: dict[str, Any]) -> str:
    """A listener's answer in the conversation's language, naming one emotion; or, to a
    judge prompt, a verdict whose score follows the quoted reply's length (1-5)."""
    user = body["messages"][-1]["content"]
    if body["messages"][0]["content"].startswith("You evaluate"):
        quoted = user.split("<<<REPLY>>>")[-1].split("<<<END REPLY>>>")[0]
        score = 1 + len(quoted.strip()) % 5
        if '"rationale"' in user:
            return f'{{"rationale": "Judged on the quoted reply.", "score": {score}}}'
        return f"The reply is judged on its own words.\nScore: {score}"
    korean = HANGUL.search(user) is not None
    reply = (
        "정말 속상했겠다. 괜찮으면 무슨 일이 있었는지 더 얘기해 줄래?"
        if korean
        else "That sounds really hard. Do you want to tell me more about it?"
    )
    if "Identified emotion:" in user:  # the paper set's second call: the reply alone
        return reply
    if "do not write the response yet" in user:  # its first call: the emotion alone
        return "The Speaker seems Sad."
    return f"Emotion: {'슬픈' if korean else 'sad'}\nResponse: {reply}"


class FakeOpenAI:
    """The server object tests hold: its URL, its script and what it received."""

    def __init__(self, latency_s: float = 0.0, port: int = 0) -> None:
        self.latency_s = latency_s
        self.script: deque[Step] = deque()
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        """The Authorization header of each request (which key was sent)."""
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests the server was answering at one moment."""
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        """Batches as the server holds them (id -> the Batch object, plus its input)."""
        self.live_calls = 0
        """Chat completions asked directly (not through a batch)."""
        self.batch_lines = 0
        """Lines answered through batches (each live request is in ``requests``)."""
        self.batch_delay_s = 0.0
        self.fail_lines = 0
        self.batch_api = True
        """False: /v1/files and /v1/batches answer 404, as a plain vLLM server does."""
        self.httpd = _Server(("127.0.0.1", port), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def queue(self, *steps: Step) -> None:
        with self.lock:
            self.script.extend(steps)

    def next_step(self, body: dict[str, Any]) -> Step:
        with self.lock:
            self.requests.append(body)
            return self.script.popleft() if self.script else Step()


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the stdlib's 5 drops connections when 16 clients start at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a time-out test, a killed run) is not a server fault.
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # As real servers do: without it, Nagle + delayed ACK add ~40 ms a response.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            if path.startswith(("/v1/files", "/v1/batches")):
                self._batch_api("GET", path, b"")
                return
            self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]}, {})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?")[0]
            if path.startswith(("/v1/files", "/v1/batches")):
                server.authorizations.append(self.headers.get("Authorization"))
                self._batch_api("POST", path, raw)
                return
            body = json.loads(raw or b"{}")
            server.authorizations.append(self.headers.get("Authorization"))
            with server.lock:
                server.live_calls += 1
            step = server.next_step(body)
            with server.lock:
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                time.sleep(server.latency_s + step.delay_s)
            finally:
                with server.lock:
                    server.in_flight -= 1
            if step.status != 200:
                error = {"error": {"message": f"scripted {step.status}", "type": "fake"}}
                self._json(step.status, error, step.headers)
                return
            text = step.text if step.text is not None else default_reply(body)
            if body.get("stream"):
                self._stream(body, text)
            else:
                self._json(200, _completion(body, text), {})

        def _batch_api(self, method: str, path: str, raw: bytes) -> None:
            if not server.batch_api:
                self._json(404, {"error": {"message": "no such route", "type": "fake"}}, {})
                return
            parts = path.strip("/").split("/")  # v1, files|batches, [id], [content|cancel]
            if method == "POST" and parts == ["v1", "files"]:
                file_id = f"file-{len(server.files) + 1}"
                server.files[file_id] = _multipart_file(self.headers["Content-Type"], raw)
                self._json(
                    200,
                    {
                        "id": file_id,
                        "object": "file",
                        "bytes": 0,
                        "created_at": 0,
                        "filename": "batch.jsonl",
                        "purpose": "batch",
                        "status": "processed",
                    },
                    {},
                )
            elif method == "GET" and len(parts) == 4 and parts[3] == "content":
                data = server.files.get(parts[2])
                if data is None:
                    self._json(404, {"error": {"message": "no such file"}}, {})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif method == "GET" and parts == ["v1", "batches"]:
                listed = [_public(b) for b in list(server.batches.values())[-1:]]
                self._json(200, {"object": "list", "data": listed, "has_more": False}, {})
            elif method == "POST" and parts == ["v1", "batches"]:
                request = json.loads(raw)
                batch_id = f"batch_{len(server.batches) + 1}"
                with server.lock:
                    server.batches[batch_id] = {
                        "id": batch_id,
                        "object": "batch",
                        "endpoint": request["endpoint"],
                        "input_file_id": request["input_file_id"],
                        "completion_window": request["completion_window"],
                        "status": "validating",
                        "created_at": int(time.time()),
                        "output_file_id": None,
                        "error_file_id": None,
                        "_ready_at": time.time() + server.batch_delay_s,
                    }
                self._json(200, _public(server.batches[batch_id]), {})
            elif len(parts) >= 3 and parts[1] == "batches" and parts[2] in server.batches:
                batch = server.batches[parts[2]]
                if method == "POST" and parts[3:] == ["cancel"]:
                    batch["status"] = "cancelled"
                elif batch["status"] in ("validating", "in_progress"):
                    if time.time() >= batch["_ready_at"]:
                        _finish_batch(server, batch)
                    else:
                        batch["status"] = "in_progress"
                self._json(200, _public(batch), {})
            else:
                self._json(404, {"error": {"message": f"no route {method} {path}"}}, {})

        def _stream(self, body: dict[str, Any], text: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pieces = re.findall(r"\S+\s*|\s+", text) or [""]
            for piece in pieces:
                chunk = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
                self._chunk(f"data: {json.dumps(chunk)}\n\n".encode())
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def _multipart_file(content_type: str, raw: bytes) -> bytes:
    """The uploaded file's bytes from a multipart/form-data body."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    for part in message.iter_parts():
        if part.get_filename():
            return part.get_payload(decode=True) or b""
    return b""


def _finish_batch(server: FakeOpenAI, batch: dict[str, Any]) -> None:
    """Answer every line of a batch as a live call would; fail the first ``fail_lines``."""
    out, errors = [], []
    for raw in server.files[batch["input_file_id"]].decode().splitlines():
        line = json.loads(raw)
        with server.lock:
            server.batch_lines += 1
            fail = server.fail_lines > 0
            if fail:
                server.fail_lines -= 1
        if fail:
            errors.append(
                {
                    "id": f"req_{len(errors)}",
                    "custom_id": line["custom_id"],
                    "response": {
                        "status_code": 500,
                        "body": {"error": {"message": "scripted line failure"}},
                    },
                    "error": None,
                }
            )
            continue
        step = server.next_step(line["body"])
        text = step.text if step.text is not None else default_reply(line["body"])
        out.append(
            {
                "id": f"req_{len(out)}",
                "custom_id": line["custom_id"],
                "response": {"status_code": 200, "body": _completion(line["body"], text)},
                "error": None,
            }
        )
    with server.lock:
        batch["output_file_id"] = f"file-{len(server.files) + 1}"
        server.files[batch["output_file_id"]] = "".join(json.dumps(e) + "\n" for e in out).encode()
        if errors:
            batch["error_file_id"] = f"file-{len(server.files) + 1}"
            server.files[batch["error_file_id"]] = "".join(
                json.dumps(e) + "\n" for e in errors
            ).encode()
        batch["status"] = "completed"


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in batch.items() if not key.startswith("_")}


def _completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": {
            "prompt_tokens": prompt_words,
            "completion_tokens": len(text.split()),
            "total_tokens": prompt_words + len(text.split()),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    server = FakeOpenAI(latency_s=args.latency, port=args.port).start()
    print(f"fake OpenAI server on {server.base_url}", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
