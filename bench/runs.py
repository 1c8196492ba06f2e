"""Batch-run throughput against the fake OpenAI-compatible server at a fixed latency.

320 items at concurrency 16 with 200 ms per request: the ideal is 16 / 0.2 s = 80
requests per second. Prints the ratio to that ideal, the speed-up over a sequential run
measured in the same process (the paper's scripts sent one request at a time), and peak
memory. The server runs in its own process so it does not share our GIL. The first
request of the process (SDK imports, pydantic validators, connection set-up) is timed
apart as ``first_request_s``; the run figures are for a warm client.

    python bench/runs.py [--smoke]

``--smoke``: 32 items of the built-in sample at concurrency 8 and 50 ms a request, in
seconds; the test suite runs it to see the bench still works, and its figures are not
the benchmark's.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._fake_server import fake_openai  # noqa: E402
from koed_core.db import Store  # noqa: E402
from koed_core.dialogues.dataset import load_dataset  # noqa: E402
from koed_core.models.backends import make_client  # noqa: E402
from koed_core.models.client import ChatClient  # noqa: E402
from koed_core.models.registry import ModelSpec  # noqa: E402
from koed_core.models.request import RunRequest  # noqa: E402
from koed_core.models.runs import run_benchmark  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

LATENCY_S = 0.2
ITEMS = 320
CONCURRENCY = 16
SEQUENTIAL_ITEMS = 20
OFFICIAL = ROOT.parent / "shared" / "data" / "KoED.json"


def timed_run(
    client: ChatClient,
    db: Path,
    spec: ModelSpec,
    dialogues: list,  # type: ignore[type-arg]
    sha: str,
    concurrency: int,
) -> float:
    """Seconds per request for one fresh run of ``len(dialogues)`` Korean items."""
    store = Store(db)
    start = time.perf_counter()
    report = run_benchmark(
        store,
        client,
        spec,
        dialogues,
        sha,
        RunRequest(
            spec.name,
            langs=("ko",),
            protocol="single",
            max_retries=0,
            concurrency=concurrency,
            prompts="native",
        ),
    )
    elapsed = time.perf_counter() - start
    assert report.succeeded == len(dialogues), report
    return elapsed / report.succeeded


def main() -> None:
    global LATENCY_S, ITEMS, CONCURRENCY, SEQUENTIAL_ITEMS
    smoke = "--smoke" in sys.argv[1:]
    if smoke:
        LATENCY_S, ITEMS, CONCURRENCY, SEQUENTIAL_ITEMS = 0.05, 32, 8, 4
        print("# smoke: a small size; the figures are not the benchmark's")
    with fake_openai(LATENCY_S) as base:
        dataset = load_dataset(SAMPLE_FILE if smoke else OFFICIAL)
        dialogues = list(dataset.dialogues[:ITEMS])
        spec = ModelSpec(name="bench", backend="openai", model="fake", base_url=base)
        client = make_client(spec, None)
        with tempfile.TemporaryDirectory() as tmp:
            # One-off costs of a process (SDK imports, first validators) are measured apart.
            cold = timed_run(client, Path(tmp, "w.db"), spec, dialogues[:1], "warm-up", 1)
            per_item = timed_run(
                client, Path(tmp, "c.db"), spec, dialogues, dataset.sha256, CONCURRENCY
            )
            sequential = timed_run(
                client,
                Path(tmp, "s.db"),
                spec,
                dialogues[:SEQUENTIAL_ITEMS],
                dataset.sha256 + "-seq",
                1,
            )
        print(f"first_request_s: {cold:.3f}")
        rate = 1 / per_item
        ideal = CONCURRENCY / LATENCY_S
        print(f"requests_per_s: {rate:.1f}")
        print(f"ratio_to_ideal: {rate / ideal:.3f}")
        print(f"speedup_vs_sequential: {sequential / per_item:.2f}")
        print(f"peak_rss_mb: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")


if __name__ == "__main__":
    main()
