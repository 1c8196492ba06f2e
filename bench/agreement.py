"""The full agreement table for about 100,000 synthetic ratings, bootstrap included.

2,720 responses (1,360 dialogues x ko/en) x 5 dimensions, each rated by 7 or 8 of 40
raters with noise around a latent score, and a judge that tracks the latent score.
Target: under 2 s on two cores, with alpha's 2,000 resamples (the resampling is one draw
and one matrix product per cell: ``koed_core.results.alpha``). Prints one ``name: value``
line per figure.

    python bench/agreement.py [--smoke]

``--smoke``: 272 responses (about 10,000 ratings) and 100 bootstrap samples instead of
2,000, in a second or so; the test suite runs it to see the bench still works, and its
figures are not the benchmark's.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from koed_core import bootstrap  # noqa: E402
from koed_core.results.alt_test import alt_test_table  # noqa: E402
from koed_core.results.reliability import agreement_table  # noqa: E402

DIMENSIONS = ("EX", "IP", "ER", "EEA", "CA")


def synthetic(
    seed: int = 0, size: int = 2720
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, dict[str, str]]:
    rng = np.random.default_rng(seed)
    items = [f"r{i}" for i in range(size)]
    langs = np.where(np.arange(size) % 2 == 0, "ko", "en")
    raters = [f"u{i}" for i in range(40)]
    rows = []
    judge = []
    for dim in DIMENSIONS:
        latent = rng.normal(3, 1, size=len(items))
        for n, item in enumerate(items):
            chosen = rng.choice(40, size=7 + (rng.random() < 0.4), replace=False)
            scores = np.clip(np.rint(latent[n] + rng.normal(0, 0.7, len(chosen))), 1, 5)
            rows += [
                (item, raters[r], dim, langs[n], int(s))
                for r, s in zip(chosen, scores, strict=True)
            ]
            judge.append((item, dim, float(np.clip(np.rint(latent[n] + rng.normal(0, 0.9)), 1, 5))))
    ratings = pd.DataFrame(rows, columns=["item", "rater", "dimension", "lang", "score"])
    judged = pd.DataFrame(judge, columns=["item", "dimension", "score"])
    lengths = pd.Series(rng.integers(20, 300, size=len(items)).astype(float), index=items)
    groups = {r: "native ko" if i % 2 else "not native ko" for i, r in enumerate(raters)}
    return ratings, judged, lengths, groups


def main() -> None:
    smoke = "--smoke" in sys.argv[1:]
    if smoke:
        bootstrap.RESAMPLES = 100  # read at each call: the smoke's small bootstrap
    ratings, judged, lengths, groups = synthetic(size=272 if smoke else 2720)
    start = time.perf_counter()
    table = agreement_table(ratings, judged, lengths, groups)
    elapsed = time.perf_counter() - start
    assert len(table) == 5 * 2 * 3 and table["alpha"].notna().all()
    start = time.perf_counter()  # issue 64 item 2: the alternative annotator test's table
    tested = alt_test_table(ratings, judged, groups)
    alt_elapsed = time.perf_counter() - start
    assert len(tested) == 5 * 2 * 3
    if smoke:
        print("# smoke: a small size; the figures are not the benchmark's")
    print(f"ratings: {len(ratings)}")
    print(f"agreement_s_100k: {elapsed:.3f}")
    print(f"alt_test_s_100k: {alt_elapsed:.3f}")
    print(f"alt_test_passes: {int(tested['passes'].fillna(False).astype(bool).sum())}")
    print(f"peak_rss_mb: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")


if __name__ == "__main__":
    main()
