"""`koed serve` under load: raters through Caddy with one app process and with N, 100 raters
who read before they submit, a launch burst on a capped link, and a process killed mid-load.

Each rater is a crowd worker already past consent, screening and calibration, rating
through Streamlit's own websocket protocol (the messages a browser sends, no drawing), so
that the server is what is measured. Every connection goes through the proxy, which keeps
it on one app process; "submit" is the time from Submit to the next item being there.

    python bench/serve.py [--processes N] [--raters R] [--burst-workers W]
        [--burst-window S] [--burst-places P] [--smoke]

Prints ``submits_per_s_1``, ``submits_per_s_N``, ``scale_ratio``, ``p95_1_s``, ``p95_N_s``,
``p95_100_raters_s`` and, for the kill, ``acknowledged``, ``stored`` and
``lost_after_kill`` (ratings acknowledged to a rater but not in the database: must be 0).

The launch burst (bench/_launch_burst.py), on the N processes: W people (100) arrive at
random over S seconds (60) on a Prolific link of P places (80), each from the join page's
first request through consent, screening, calibration, a batch of five ratings and the
code, reading 1-3 s on each page. It prints ``p95_page_s`` (every page load: the first
from the page's request to its script run finished, then each click to its rerun
finished; ``p95_first_page_s`` the arrivals' first pages alone), ``places_exact`` (1:
exactly P held a place, in the pages and in the database, and everybody else was told the
study is full), ``burst_lost`` (ratings acknowledged but not stored: must be 0) and the
counts these are made of.

``--smoke``: a few raters and items, in seconds; the suite runs it to see the bench works.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import _launch_burst as launch  # noqa: E402
from bench._streamlit_ws import Session, connect  # noqa: E402
from fixtures.rating import ready_raters  # noqa: E402
from koed_core.cli.serving import free_ports  # noqa: E402
from koed_core.db import Store  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

KEY = "b" * 40


@dataclass
class Load:
    """What the raters did: each submit's time, acknowledged submits per rater."""

    times: list[float] = field(default_factory=list)
    acknowledged: Counter[str] = field(default_factory=Counter)
    reconnects: int = 0
    pages_without_form: int = 0
    spans: list[tuple[float, float]] = field(default_factory=list)

    def per_second(self) -> float:
        """Submits a second from the first Submit to the last answer."""
        if not self.spans:
            return 0.0
        wall = max(b for _, b in self.spans) - min(a for a, _ in self.spans)
        return len(self.spans) / wall if wall > 0 else float("inf")


def prepare(
    folder: Path, groups: list[int], items: int
) -> tuple[Path, list[list[tuple[str, str]]]]:
    """A study over the 34 sample dialogues and groups of workers ready to rate (every
    worker may rate every item); returns the database and each group's (username, link)."""
    db = folder / "koed.db"
    store, people = ready_raters(db, KEY.encode(), sum(groups), items)
    store.db.conn.close()
    cut = [sum(groups[:i]) for i in range(len(groups) + 1)]
    return db, [people[a:b] for a, b in zip(cut, cut[1:], strict=False)]


class Served:
    """`koed serve` running on a database, stopped on exit."""

    def __init__(self, db: Path, processes: int) -> None:
        self.port = free_ports(1)[0]
        self.run_dir = db.with_name(f"run-{processes}")
        env = {**os.environ, "KOED_DATA": str(SAMPLE_FILE), "KOED_SECRET_KEY": KEY}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "koed_core.cli", "serve", "--processes", str(processes),
             "--port", str(self.port), "--db", str(db), "--run-dir", str(self.run_dir),
             "--backup-every", "0"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []
        threading.Thread(
            target=lambda: self.lines.extend(self.proc.stdout or []), daemon=True
        ).start()
        deadline = time.monotonic() + 120
        while not any(line.startswith("ready:") for line in self.lines):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("koed serve did not start:\n" + "".join(self.lines))
            time.sleep(0.2)
        self.warm()

    def warm(self) -> None:
        """Each app process draws the join page once (its first run imports the app), on
        its own port, so no figure below includes a cold start."""
        conf = (self.run_dir / "supervisord.conf").read_text()
        ports = [int(p) for p in re.findall(r"--server\.port=(\d+)", conf)]

        async def once(port: int) -> None:
            await rater(port, "warm-up", "/join?invite=none", 1, 0.0, Load(), tries=1)

        async def all_ports() -> None:
            await asyncio.gather(*(once(p) for p in ports))

        asyncio.run(all_ports())

    def app_pids(self) -> list[int]:
        conf = self.run_dir / "supervisord.conf"
        out = subprocess.run(
            [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), "status"],
            capture_output=True, text=True,
        ).stdout  # fmt: skip
        return [int(p) for p in re.findall(r"^app-\d+\s+RUNNING\s+pid (\d+)", out, re.M)]

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *_: object) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


async def rater(  # noqa: PLR0913 - a rater's whole description
    port: int, who: str, link: str, items: int, think_s: float, load: Load, tries: int = 20
) -> None:
    """One rater over the websocket, through the proxy; a dropped connection (its process
    killed) is opened again, as the browser does, and the visit goes on from the database."""
    import websockets

    while load.acknowledged[who] < items and tries > 0:
        tries -= 1
        try:
            async with connect(port) as ws:
                session = Session(ws, "join", link.split("?", 1)[1])
                page = await session.run()
                while load.acknowledged[who] < items:
                    if think_s:
                        await asyncio.sleep(think_s * random.uniform(0.5, 1.5))
                    if page.submitter() is None:  # not the item yet (a page between): again
                        load.pages_without_form += 1
                        if load.pages_without_form > 20 * items:
                            return
                        await asyncio.sleep(0.2)
                        page = await session.run()
                        continue
                    start = time.perf_counter()
                    page = await session.submit_scores(page, "4")  # ran whole: saved
                    load.times.append(time.perf_counter() - start)
                    load.spans.append((start, time.perf_counter()))
                    load.acknowledged[who] += 1
        except (TimeoutError, OSError, websockets.ConnectionClosed):
            load.reconnects += 1
            await asyncio.sleep(0.5)


def drive(port: int, people: list[tuple[str, str]], items: int, think_s: float) -> Load:
    load = Load()

    async def everyone() -> None:
        await asyncio.gather(*(rater(port, w, link, items, think_s, load) for w, link in people))

    asyncio.run(everyone())
    return load


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[int(0.95 * (len(ordered) - 1))] if ordered else float("nan")


def stored_per_rater(db: Path) -> Counter[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select username, count(*) / 5 from ratings group by username")
        return Counter({name: int(n) for name, n in rows.fetchall()})


def kill_mid_load(served: Served, people: list[tuple[str, str]], items: int) -> Load:
    """Raters back to back; one app process killed once a third of their work is done."""
    load = Load()

    async def everyone() -> None:
        tasks = [
            asyncio.create_task(rater(served.port, w, link, items, 0.0, load)) for w, link in people
        ]
        while sum(load.acknowledged.values()) < len(people) * items // 3:
            await asyncio.sleep(0.02)
        os.kill(served.app_pids()[0], signal.SIGKILL)
        await asyncio.gather(*tasks)

    asyncio.run(everyone())
    return load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--raters", type=int, default=40, help="raters back to back")
    parser.add_argument("--items", type=int, default=5)
    parser.add_argument("--burst-workers", type=int, default=100)
    parser.add_argument("--burst-window", type=float, default=60.0, help="seconds")
    parser.add_argument("--burst-places", type=int, default=80)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    crowd_size, think_s = 100, 10.0
    burst_size = launch.BurstSize(
        args.burst_workers, args.burst_window, args.burst_places, items=5, think_s=2.0
    )
    if args.smoke:
        print("# smoke: a small size; the figures are not the benchmark's")
        args.raters, args.items, crowd_size, think_s = 3, 2, 4, 0.2
        burst_size = launch.BurstSize(6, 3.0, 4, items=2, think_s=0.1)
    if not 0 < burst_size.places < burst_size.workers:
        parser.error("the launch burst needs more workers than places (and a place at least)")
    n = max(2, args.processes)
    with tempfile.TemporaryDirectory() as work:
        db, (alone,) = prepare(Path(work), [args.raters], args.items)
        with Served(db, 1) as served:
            one = drive(served.port, alone, args.items, 0.0)
    with tempfile.TemporaryDirectory() as work:
        db, (fast, readers, killed) = prepare(
            Path(work), [args.raters, crowd_size, args.raters], args.items
        )
        store = Store(db)
        burst_study, token = launch.open_link(store, KEY.encode(), burst_size)
        store.db.conn.close()
        with Served(db, n) as served:
            many = drive(served.port, fast, args.items, 0.0)
            reading = drive(served.port, readers, args.items, think_s)
            burst = launch.run(served.port, burst_size, token)
            kill = kill_mid_load(served, killed, args.items)
        stored = stored_per_rater(db)
        burst_lines = launch.figures(
            burst, burst_size, stored, db, KEY.encode(), burst_study, token
        )
    lost = sum(max(0, count - stored[who]) for who, count in kill.acknowledged.items())
    unfinished = sum(
        len(group) * args.items - sum(load.acknowledged.values())
        for group, load in ((alone, one), (fast, many), (readers, reading), (killed, kill))
    )
    print(f"processes: {n}")
    print(f"raters_back_to_back: {args.raters}")
    print(f"submits_per_s_1: {one.per_second():.1f}")
    print(f"submits_per_s_N: {many.per_second():.1f}")
    print(f"scale_ratio: {many.per_second() / max(one.per_second(), 1e-9):.2f}")
    print(f"p95_1_s: {p95(one.times):.3f}")
    print(f"p95_N_s: {p95(many.times):.3f}")
    print(f"p95_{crowd_size}_raters_s: {p95(reading.times):.3f}")
    print(f"acknowledged: {sum(kill.acknowledged.values())}")
    print(f"stored: {sum(stored[who] for who in kill.acknowledged)}")
    print(f"reconnects_after_kill: {kill.reconnects}")
    print(f"lost_after_kill: {lost}")
    print(f"unfinished_submits: {unfinished}")
    for name, value in burst_lines.items():
        print(f"{name}: {value}")
    for said in burst.other:
        print(f"# a burst worker was told: {said}")


if __name__ == "__main__":
    main()
