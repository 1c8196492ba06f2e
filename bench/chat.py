"""Timings the tests no longer assert: two chat panes at once, and retry back-off.

    python bench/chat.py [--smoke]

``panes_s``: two panes answering one Speaker turn through the Chat page (AppTest) while
the fake server takes 1 s per request; about 1 s means they ran at once, 2 s one after
the other. ``backoff_s``: one request that meets two 503s without Retry-After before it
succeeds (the SDK's exponential back-off with jitter: about 0.5 s then 1 s).
``embedded_load_s`` and ``embedded_answer_s``: the offline default (SmolLM2-135M) loading,
then answering one Korean ``single`` turn as the Chat page asks it (emotion and reply, the
model's 256 tokens at most) on this machine's CPU; the figure the Chat page quotes.

``--smoke``: the panes at 0.3 s a request and the back-off, without the embedded model
(about a minute here); the test suite runs it to see the bench still works.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.fake_openai import FakeOpenAI, Step  # noqa: E402
from koed_core.models.backends import make_client  # noqa: E402
from koed_core.models.client import GenerationSettings  # noqa: E402
from koed_core.models.registry import ModelSpec  # noqa: E402


def panes_s(server: FakeOpenAI, work: Path, latency_s: float = 1.0) -> float:
    """Wall time of one Speaker turn answered in ko and en by one model."""
    from streamlit.testing.v1 import AppTest

    registry = work / "models.toml"
    registry.write_text(
        f'[models.fake]\nbackend = "openai"\nmodel = "m"\nbase_url = "{server.base_url}"\n'
    )
    os.environ.update(KOED_MODELS=str(registry), KOED_DB=str(work / "k.db"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/models/chat.py").run()
    at.multiselect(key="chat.models").set_value(["fake"]).run()
    server.latency_s = latency_s
    start = time.perf_counter()
    at.button(key="chat.ask").click().run()
    return time.perf_counter() - start


def backoff_s(server: FakeOpenAI) -> float:
    """Wall time of a request retried twice without a Retry-After header."""
    server.latency_s = 0.0
    server.queue(Step(503), Step(503))
    spec = ModelSpec(name="fake", backend="openai", model="m", base_url=server.base_url)
    client = make_client(spec)
    start = time.perf_counter()
    client.complete([{"role": "user", "content": "hi"}], GenerationSettings(), None)
    return time.perf_counter() - start


def embedded_s() -> tuple[float, float]:
    """Seconds to load the embedded model, and to answer one Korean turn once loaded."""
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.models.prompts import build_messages
    from koed_core.models.protocol import build_task
    from koed_core.paths import SAMPLE_FILE

    dialogue = load_dataset(SAMPLE_FILE).dialogues[0]
    client = make_client(ModelSpec(name="smollm2", backend="embedded"))
    task = build_task(dialogue, "ko")
    messages = build_messages(task, "single")  # the Chat page's prompt
    start = time.perf_counter()
    client.complete(messages, GenerationSettings(temperature=0.7, max_tokens=8), task)
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    client.complete(messages, GenerationSettings(temperature=0.7, max_tokens=256), task)
    return loaded, time.perf_counter() - start


def main() -> None:
    smoke = "--smoke" in sys.argv[1:]
    if smoke:
        print("# smoke: panes at 0.3 s a request, no embedded model")
    server = FakeOpenAI().start()
    try:
        with tempfile.TemporaryDirectory() as work:
            print(f"panes_s: {panes_s(server, Path(work), 0.3 if smoke else 1.0):.2f}")
        print(f"backoff_s: {backoff_s(server):.2f}")
        if smoke:
            return
        loaded, answer = embedded_s()
        print(f"embedded_load_s: {loaded:.1f}")
        print(f"embedded_answer_s: {answer:.1f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
