"""How long each page takes to run, warm, on the official KoED; and the adaptation scores.

    python bench/pages.py [PATH_TO_KoED.json]

Each page is run through Streamlit's AppTest (the page script as the server runs it,
without the browser's rendering): once to warm the caches, then three times; the
median of those three is printed as ``page_<name>_s``. ``adaptation_s`` is the first
full computation of the ko/en similarities (encoder load included), in a fresh cache.
Goals on the 2-core machine: every page under 0.5 s warm, adaptation under 20 s.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OFFICIAL = ROOT.parent / "shared" / "data" / "KoED.json"
CROWD_ONLY = {"pages/rating/join.py"}
"""Opened only through an invite link: no admin's navigation holds it."""


def page_times(data: Path, work: Path) -> dict[str, float]:
    """Warm median seconds per page, as a logged-in admin (who may open every page)."""
    from streamlit.testing.v1 import AppTest

    from koed_core.rating.accounts import add_user

    add_user(work / "users.yaml", "boss", "admin", "Boss", "bench-password")
    os.environ.update(
        KOED_DATA=str(data),
        KOED_DB=str(work / "k.db"),
        KOED_CACHE_DIR=str(work),
        KOED_USERS=str(work / "users.yaml"),
        KOED_COOKIE_KEY="b" * 40,
    )
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*/*.py"))
    times = {}
    for page in pages:
        if page in CROWD_ONLY:
            print(f"# {page}: a crowd worker's page, not an admin's (bench/raters.py times it)")
            continue
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.session_state["authentication_status"] = True
        at.session_state["username"] = "boss"
        at.run()
        at.switch_page(page).run()  # warm: caches filled
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            at.run()
            runs.append(time.perf_counter() - start)
        if at.exception or not at.title:
            raise SystemExit(f"{page} did not render: {[e.value for e in at.exception]}")
        times[f"{Path(page).stem} ({at.title[0].value})"] = statistics.median(runs)
    return times


def adaptation(data: Path, work: Path) -> tuple[float, float]:
    """The first full computation of the similarities (encoder load included), and the
    encoder's throughput in texts per second once loaded."""
    from koed_core.dialogues.adaptation import UseEncoder, pair_similarities, unique_texts
    from koed_core.dialogues.dataset import load_dataset

    dataset = load_dataset(data)
    start = time.perf_counter()
    pair_similarities(dataset, UseEncoder(), work / "fresh-cache")
    total = time.perf_counter() - start
    texts = unique_texts(dataset.dialogues)
    encoder = UseEncoder()
    encoder.encode(texts[:8])  # load
    start = time.perf_counter()
    for begin in range(0, 2000, 64):
        encoder.encode(texts[begin : begin + 64])
    return total, 2000 / (time.perf_counter() - start)


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else OFFICIAL
    with tempfile.TemporaryDirectory() as work:
        for name, seconds in page_times(data, Path(work)).items():
            stem, title = name.split(" ", 1)
            print(f"page_{stem}_s: {seconds:.3f}  # {title.strip('()')}")
        seconds, rate = adaptation(data, Path(work))
        print(f"adaptation_s: {seconds:.1f}")
        print(f"adaptation_texts_per_s: {rate:.0f}")


if __name__ == "__main__":
    main()
