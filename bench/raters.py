"""How many crowd raters one server holds: N raters rating at once through the real app.

A study over the 34 sample dialogues (68 items, every rater may rate every item) and a
Prolific invite link; N workers already past consent, screening and calibration (those
pages are not what a crowd leans on). Each rater opens the link and rates ``ITEMS``
items as fast as a script can: five scores, Submit, wait until the next item is there.
``submit`` is that wait: the time a rater looks at a spinner after pressing Submit.

Two drivers. The default speaks Streamlit's own websocket protocol, as the browser does
(the same BackMsg / ForwardMsg protobufs, one connection per rater, no page rendering),
so that on two cores the server, not twenty browsers, is what is measured. ``--browser``
drives real Chromium pages instead (async Playwright); the browsers then share the
cores with the server and dominate the figures.

    python bench/raters.py [--browser] [--think S] [--smoke] [N ...]   (default: 5 10 20 50)

``--smoke``: 2 raters, 2 items each (unless numbers are given), in seconds; the test
suite runs it to see the bench still works, and its figures are not the benchmark's.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._streamlit_ws import Session, connect  # noqa: E402
from fixtures.rating import ready_raters  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

ITEMS = 5
KEY = "b" * 40
THINK_S = 0.0
"""Seconds a rater reads before scoring (``--think S``; each wait drawn from 0.5-1.5x).
0 is the stress case: every rater submits again the moment the next item is there."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):  # the peak resident set
            return int(line.split()[1]) / 1024
    return 0.0


async def _rater(page, url: str, times: list[float]) -> None:  # type: ignore[no-untyped-def]
    await page.goto(url)
    progress = page.get_by_text("rated", exact=False).first
    await progress.wait_for(timeout=120_000)
    for _ in range(ITEMS):
        before = await progress.inner_text()
        await _score(page)
        start = time.perf_counter()
        await page.get_by_role("button", name="Submit rating").click()
        deadline = start + 120
        while time.perf_counter() < deadline:  # the next item: the progress line moved on
            try:
                now = await progress.inner_text(timeout=5_000)
            except Exception:  # noqa: BLE001 - the element is being replaced; ask again
                now = before
            if now != before:
                break
            if await page.get_by_text("Score every dimension").count():
                await _score(page)  # a click landed on the form being replaced: again
                await page.get_by_role("button", name="Submit rating").click()
            await asyncio.sleep(0.02)
        else:
            raise RuntimeError(f"no next item 120 s after Submit (still {before!r})")
        # wait for the new item's empty form before scoring it
        checked = page.get_by_test_id("stRadio").first.locator("input:checked")
        while await checked.count() and time.perf_counter() < deadline:
            await asyncio.sleep(0.02)
        times.append(time.perf_counter() - start)


async def _score(page) -> None:  # type: ignore[no-untyped-def]
    radios = page.get_by_test_id("stRadio")
    for i in range(5):
        radio = radios.nth(i)
        while not await radio.locator("input:checked").count():
            await radio.get_by_text("4", exact=True).click()


async def _ws_rater(port: int, link: str, times: list[float]) -> None:
    """One rater over the websocket: open the page, then submit ITEMS ratings."""
    async with connect(port) as ws:
        session = Session(ws, "join", link.split("?", 1)[1])
        page = await session.run()
        for _ in range(ITEMS):
            if THINK_S:
                await asyncio.sleep(THINK_S * random.uniform(0.5, 1.5))
            start = time.perf_counter()
            page = await session.submit_scores(page, "4")
            times.append(time.perf_counter() - start)


async def _drive_ws(port: int, links: list[str]) -> list[float]:
    times: list[float] = []
    await asyncio.gather(*(_ws_rater(port, link, times) for link in links))
    return times


async def _drive(url: str, links: list[str]) -> list[float]:
    from playwright.async_api import async_playwright

    times: list[float] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        pages = [await browser.new_page() for _ in links]
        await asyncio.gather(
            *(_rater(p, url + link, times) for p, link in zip(pages, links, strict=True))
        )
        await browser.close()
    return times


def bench(raters: int, browser: bool = False) -> None:
    with tempfile.TemporaryDirectory() as work:
        store, people = ready_raters(Path(work) / "koed.db", KEY.encode(), raters, ITEMS)
        links = [link for _, link in people]
        port = _free_port()
        env = {
            **os.environ,
            "KOED_DB": str(Path(work) / "koed.db"),
            "KOED_DATA": str(SAMPLE_FILE),
            "KOED_CACHE_DIR": work,
            "KOED_SECRET_KEY": KEY,
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
             f"--server.port={port}", "--browser.gatherUsageStats=false",
             "--server.fileWatcherType=none"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(url + "/_stcore/health", timeout=2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)
            times = asyncio.run(_drive(url, links) if browser else _drive_ws(port, links))
            rss = _rss_mb(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=20)
        saved = store.count("ratings") // 5
    times.sort()
    print(f"driver: {'chromium' if browser else 'websocket'}")
    print(f"think_s: {THINK_S}")
    print(f"raters: {raters}")
    print(f"ratings_saved: {saved}")
    print(f"p50_submit_s: {statistics.median(times):.3f}")
    print(f"p95_submit_s: {times[int(0.95 * (len(times) - 1))]:.3f}")
    print(f"server_rss_mb: {rss:.0f}")


if __name__ == "__main__":
    use_browser = "--browser" in sys.argv
    args = sys.argv[1:]
    if "--think" in args:
        THINK_S = float(args[args.index("--think") + 1])
        del args[args.index("--think") : args.index("--think") + 2]
    smoke = "--smoke" in args
    if smoke:
        ITEMS = 2
        print("# smoke: a small size; the figures are not the benchmark's")
    for count in [int(a) for a in args if a.isdigit()] or ([2] if smoke else [5, 10, 20, 50]):
        bench(count, use_browser)
