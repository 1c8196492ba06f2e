"""The scripted OpenAI-compatible server (fixtures/fake_openai.py) at a fixed latency, in a
process of its own so that it does not share the bench's GIL (a helper of the benches, not
a bench: its name starts with an underscore).

Shared by bench/runs.py, bench/episodes.py, bench/jobs.py and bench/reproduce.py.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fixtures.serve import free_port

ROOT = Path(__file__).resolve().parents[1]
START_S = 20.0
"""How long a server may take to answer before the bench gives up."""


def start(latency_s: float) -> tuple[subprocess.Popen[bytes], str]:
    """A server started on a free port, not waited for (several start together): the
    process and its base URL."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fixtures.fake_openai",
            "--port",
            str(port),
            "--latency",
            str(latency_s),
        ],
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    return server, f"http://127.0.0.1:{port}/v1"


def wait_up(base_url: str) -> None:
    """Return once the server at ``base_url`` lists its models; stop the bench when it has
    not within ``START_S``."""
    deadline = time.monotonic() + START_S
    while True:
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"the fake server at {base_url} did not start") from None
            time.sleep(0.1)


def stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(timeout=10)


@contextmanager
def fake_openai(latency_s: float) -> Iterator[str]:
    """One server, answering: its base URL; stopped when the bench is done with it."""
    server, base_url = start(latency_s)
    try:
        wait_up(base_url)
        yield base_url
    finally:
        stop(server)
