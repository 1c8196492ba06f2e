"""Explorer performance on the official file and on a 25,000-dialogue synthetic corpus.

Prints one ``name: value`` line per figure. Targets: a filter change at 25,000
dialogues under 50 ms; the explorer's first AppTest run on the official file under 1.5 s.

    python bench/explorer.py [PATH_TO_KoED.json] [--smoke]

``--smoke``: the built-in sample (unless a path is given), a 2,000-dialogue corpus and
two repeats, in seconds; the test suite runs it to see the bench still works, and its
figures are not the benchmark's.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from koed_core.dialogues.dataset import load_dataset  # noqa: E402
from koed_core.dialogues.filters import DialogueFilter, FilterIndex  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

DEFAULT_FILE = ROOT.parent / "shared" / "data" / "KoED.json"
SYNTHETIC_SIZE = 25_000
REPEATS = 7
FILTERS = [
    DialogueFilter(labels=frozenset({"afraid", "grateful"}), mode="exact"),
    DialogueFilter(labels=frozenset({"sad", "lonely"}), mode="any"),
    DialogueFilter(origin="korean", ko_only_turns=True),
    DialogueFilter(text="엄마"),
    DialogueFilter(text="grandmother", min_turns=4, max_turns=6),
    DialogueFilter(labels=frozenset({"anxious"}), text="회사", ko_only_turns=False),
]


def timed(fn, repeats: int | None = None) -> float:  # type: ignore[no-untyped-def]
    """Median wall time of ``fn`` in seconds (``REPEATS`` runs unless told)."""
    samples = []
    for _ in range(repeats or REPEATS):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def slowest_filter_ms(index: FilterIndex) -> float:
    """The slowest of the representative filter changes (each a median), in ms."""
    return max(timed(lambda f=f: index.positions(f)) for f in FILTERS) * 1000


def main() -> None:
    global REPEATS
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    smoke = "--smoke" in sys.argv[1:]
    path = Path(args[0]) if args else SAMPLE_FILE if smoke else DEFAULT_FILE
    size = 2_000 if smoke else SYNTHETIC_SIZE
    if smoke:
        REPEATS = 2
        print("# smoke: a small size; the figures are not the benchmark's")
    dataset = load_dataset(path)
    print(f"load_s: {timed(lambda: load_dataset(path), 2 if smoke else 5):.3f}")
    print(f"filter_ms_1360: {slowest_filter_ms(FilterIndex(dataset.dialogues)):.2f}")

    copies = -(-size // len(dataset))
    synthetic = [
        replace(d, conv_id=f"{d.conv_id}#{n}") for n in range(copies) for d in dataset.dialogues
    ][:size]
    start = time.perf_counter()
    big = FilterIndex(synthetic)
    print(f"index_build_s_25k: {time.perf_counter() - start:.3f}")
    print(f"filter_ms_25k: {slowest_filter_ms(big):.2f}")

    from streamlit.testing.v1 import AppTest

    os.environ["KOED_DATA"] = str(path)
    start = time.perf_counter()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    first = time.perf_counter() - start
    if at.exception:
        raise SystemExit(f"explorer raised: {at.exception[0].value}")
    print(f"explorer_first_run_s: {first:.3f}")
    start = time.perf_counter()
    at.multiselect(key="labels").set_value(["jeong"]).run()
    print(f"explorer_filter_rerun_s: {time.perf_counter() - start:.3f}")


if __name__ == "__main__":
    main()
