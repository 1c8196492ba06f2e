"""``koed prolific receive``: the small process that takes Prolific's signed events.

Streamlit cannot take a POST, so ``koed serve --domain`` runs this beside the app processes
under the same supervisor, and Caddy sends ``/prolific/hooks`` here. Each request is
checked (signature, timestamp, event id: :mod:`koed_core.rating.crowd.prolific_hooks`),
applied once and answered at once; everything else is a 404. It is Python's own
``http.server`` (no framework: one path, one method, a body of a few hundred bytes, and the
house's one dependency rule says no new server stack for that), bound to 127.0.0.1 only:
Caddy is the one entry point from outside.

The webhook secret is read from Prolific with the API token when the first event comes
(and again while there is none), kept in memory only.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from koed_core.db import Store
from koed_core.rating.crowd.prolific_hooks import (
    HOOK_PATH,
    MAX_BODY,
    HookRefused,
    apply,
    verify,
)

LOG = logging.getLogger("koed.prolific.hooks")
HEALTH = "/prolific/hooks/health"


class Receiver:
    """The receiver's state: its database, how it gets the secret, its clock."""

    def __init__(
        self,
        store: Store,
        secret: Callable[[], str | None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self._secret_source = secret
        self._secret: str | None = None
        self._lock = threading.Lock()
        self.clock = clock

    def secret(self) -> str | None:
        """The workspace's secret (asked of Prolific until it has one)."""
        with self._lock:
            if self._secret is None:
                try:
                    self._secret = self._secret_source()
                except Exception as err:  # noqa: BLE001 - said in one line, tried next time
                    LOG.warning("could not read the webhook secret from Prolific: %s", err)
            return self._secret

    def handle(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """One POST: its status and JSON answer (every refusal one sentence, no detail of
        what a forger got wrong beyond what the reference says is checked)."""
        if path != HOOK_PATH:
            return 404, {"error": "not found"}
        secret = self.secret()
        if secret is None:
            return 503, {"error": "the receiver has no webhook secret yet"}
        try:
            event_id = verify(secret, headers, body, self.clock())
            done = apply(self.store, event_id, body)
        except HookRefused as refused:
            LOG.warning("refused an event: %s", refused)
            return refused.status, {"error": str(refused)}
        LOG.info("event %s: %s", done.event_id, done.outcome)
        return 200, {"event": done.event_id, "outcome": done.outcome, "repeated": done.repeated}


def server(receiver: Receiver, host: str, port: int) -> ThreadingHTTPServer:
    """An HTTP server for ``receiver`` (not started)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # each event is logged once, by the receiver

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            if self.path == HEALTH:
                self._answer(200, {"ok": True})
            else:
                self._answer(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= MAX_BODY:
                self.close_connection = True
                self._answer(413, {"error": "the body is too large or its length unknown"})
                return
            body = self.rfile.read(length)
            status, payload = receiver.handle(self.path, dict(self.headers.items()), body)
            self._answer(status, payload)

    httpd = ThreadingHTTPServer((host, port), Handler)
    httpd.daemon_threads = True
    return httpd
