"""Episode throughput against the fake OpenAI-compatible server at a fixed latency.

64 episodes (32 dialogues, ko and en) of 3 Listener turns at concurrency 16, 200 ms per
request. An episode with the native prompt set is 3 Listener calls and 2 Speaker calls,
one after the other: 5 x latency. The ideal is concurrency / (calls x latency) episodes
per second; the issue's goal is a ratio of 0.8 or more. The server runs in its own
process so it does not share our GIL; a one-episode warm-up is timed apart.

    python bench/episodes.py [--smoke]

``--smoke``: 8 episodes (4 dialogues) at concurrency 8 and 50 ms a request, in seconds;
the test suite runs it to see the bench still works, and its figures are not the
benchmark's.
"""

from __future__ import annotations

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
from koed_core.models.episodes import run_episodes  # noqa: E402
from koed_core.models.registry import ModelSpec  # noqa: E402
from koed_core.models.request import EpisodeRequest  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

LATENCY_S = 0.2
DIALOGUES = 32
TURNS = 3
CONCURRENCY = 16
CALLS = TURNS + (TURNS - 1)  # Listener turns, and the Speaker between them


def main() -> None:
    global LATENCY_S, DIALOGUES, CONCURRENCY
    if "--smoke" in sys.argv[1:]:
        LATENCY_S, DIALOGUES, CONCURRENCY = 0.05, 4, 8
        print("# smoke: a small size; the figures are not the benchmark's")
    with fake_openai(LATENCY_S) as base:
        dataset = load_dataset(SAMPLE_FILE)
        dialogues = list(dataset.dialogues[:DIALOGUES])
        listener = ModelSpec(name="bench", backend="openai", model="fake", base_url=base)
        speaker = ModelSpec(name="bench-speaker", backend="openai", model="fake", base_url=base)

        with tempfile.TemporaryDirectory() as tmp:

            def play(db: str, chosen: list, sha: str) -> tuple[float, int]:  # type: ignore[type-arg]
                store = Store(Path(tmp, db))
                start = time.perf_counter()
                report = run_episodes(
                    store,
                    (listener, make_client(listener, None)),
                    (speaker, make_client(speaker, None)),
                    chosen,
                    sha,
                    EpisodeRequest(
                        listener.name,
                        speaker=speaker.name,
                        protocol="direct",
                        prompts="native",
                        turns=TURNS,
                        concurrency=CONCURRENCY,
                        max_retries=0,
                    ),
                )
                assert report.failed == 0, report
                return time.perf_counter() - start, report.succeeded

            cold, _ = play("warm.db", dialogues[:1], "warm-up")
            elapsed, played = play("bench.db", dialogues, dataset.sha256)
        rate = played / elapsed
        ideal = CONCURRENCY / (CALLS * LATENCY_S)
        print(f"warm_up_s: {cold:.3f}")
        print(f"episodes: {played}")
        print(f"episodes_per_s: {rate:.2f}")
        print(f"ideal_episodes_per_s: {ideal:.2f}")
        print(f"ratio_to_ideal: {rate / ideal:.3f}")


if __name__ == "__main__":
    main()
