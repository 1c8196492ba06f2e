"""The paper plan end to end against scripted servers, one per model, each as slow as it
likes: do models and judging overlap, or does the reproduction wait on each model in turn?

    python bench/reproduce.py [--smoke]

Five listener servers at 200 to 800 ms a request and a judge at 150 ms (real servers take
longer still), each in its own process; the paper plan's shape (5 models x single, multi x
ko, en, paper prompts, two calls an item, judged on five dimensions) on a stratified sample
of 6 dialogues. Prints ``reproduce_s`` (all five models), ``slowest_alone_s`` (the slowest
model and its judging alone, on a fresh database) and ``ratio_to_slowest`` (goal <= 1.2).

``--smoke``: two models (at 20 and 80 ms a request, the judge at 15 ms) on 2 dialogues,
in seconds; the test suite runs it to see the bench still works, and its figures are not
the benchmark's.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import _fake_server as fake  # noqa: E402
from koed_core.db import Store  # noqa: E402
from koed_core.dialogues.dataset import load_dataset  # noqa: E402
from koed_core.dialogues.subsets import select  # noqa: E402
from koed_core.models.backends import make_client  # noqa: E402
from koed_core.models.registry import ModelSpec  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402
from koed_core.results.reproduce import Plan, Reached, reproduce  # noqa: E402

LATENCIES = {"m-200": 0.2, "m-300": 0.3, "m-400": 0.4, "m-500": 0.5, "m-800": 0.8}
JUDGE_LATENCY = 0.15
SAMPLE = 6


def timed(models: list[str], urls: dict[str, str], db: Path) -> float:
    dataset = load_dataset(SAMPLE_FILE)
    dialogues = select(dataset.dialogues, "full", sample=SAMPLE, seed=3)
    plan = Plan(name="bench", models=tuple(models), judge="judge", subset="full")

    def spec(name: str) -> ModelSpec:
        return ModelSpec(
            name=name,
            backend="openai",
            model=name,
            base_url=urls[name],
        )

    listeners = {name: (spec(name), make_client(spec(name))) for name in models}
    judge = (spec("judge"), make_client(spec("judge")))
    start_at = time.perf_counter()
    reproduce(plan, Store(db), dialogues, dataset.sha256, Reached(listeners, judge))
    return time.perf_counter() - start_at


def main() -> None:
    global LATENCIES, JUDGE_LATENCY, SAMPLE
    if "--smoke" in sys.argv[1:]:
        LATENCIES, JUDGE_LATENCY, SAMPLE = {"m-200": 0.02, "m-800": 0.08}, 0.015, 2
        print("# smoke: a small size; the figures are not the benchmark's")
    started = {
        name: fake.start(LATENCIES.get(name, JUDGE_LATENCY)) for name in [*LATENCIES, "judge"]
    }
    urls = {name: url for name, (_server, url) in started.items()}
    try:
        for url in urls.values():  # started together, then each waited for
            fake.wait_up(url)
        with tempfile.TemporaryDirectory() as work:
            everything = timed(list(LATENCIES), urls, Path(work) / "all.db")
            slowest = max(LATENCIES, key=LATENCIES.__getitem__)
            alone = timed([slowest], urls, Path(work) / "alone.db")
        print(f"reproduce_s: {everything:.2f}")
        print(f"slowest_alone_s: {alone:.2f}")
        print(f"ratio_to_slowest: {everything / alone:.2f}")
    finally:
        for server, _url in started.values():
            fake.stop(server)


if __name__ == "__main__":
    main()
