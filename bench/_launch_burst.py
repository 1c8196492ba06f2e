"""bench/serve.py's launch burst: a study's link goes live and more people arrive within a
minute than it has places (a helper of that bench, not a bench: its name starts with an
underscore).

Each simulated worker does what a browser does on a capped Prolific link: loads the join
page through the proxy (keeping the sticky cookie it is given), opens Streamlit's
websocket with it, and walks the visit as the page leads: consent (tick the box, then
Continue), screening, calibration (the reference scores, then Next), its batch of ratings,
the completion code. Everything goes through the real join page: the places are taken by
the app's own rules, never by the bench.

What is checked, not timed: exactly ``places`` people hold a place (the page let them in,
and the database counts as many), everybody else was told the study is full, nobody met
anything else; and every rating a worker saw acknowledged is stored once.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

from bench._streamlit_ws import Page, Session, connect
from fixtures.rating import sample
from koed_core.cli.serving import STICKY_COOKIE
from koed_core.db import Store
from koed_core.db.runs import Runs
from koed_core.rating import crowd
from koed_core.rating.studies import StudyConfig, StudyRules, calibration_items

FULL = "This study is full:"
"""How joining's refusal for a full link opens, in English (the bench's browser sends no
locale and the burst's study rates both languages, so refusals are in English)."""
STUDY_ID = "b" * 24
"""The Prolific study these links claim to come from (24 hexadecimal characters)."""
MAX_STEPS = 60
"""Page loads one worker may take before the bench calls them stuck."""


@dataclass(frozen=True)
class BurstSize:
    """A launch: how many arrive, over how long, for how many places."""

    workers: int
    window_s: float
    places: int
    items: int
    """Ratings in each worker's one batch."""
    think_s: float
    """Seconds a worker spends on a page before acting (each drawn from 0.5-1.5x)."""


@dataclass
class Burst:
    """What the workers met: each page load's time, each one's outcome, acknowledgements."""

    pages: list[float] = field(default_factory=list)
    first_pages: list[float] = field(default_factory=list)
    """The arrivals' pages alone: the link's request to its first script run finished."""
    outcome: Counter[str] = field(default_factory=Counter)
    acknowledged: Counter[str] = field(default_factory=Counter)
    holders: set[str] = field(default_factory=set)
    finished: int = 0
    crashes: int = 0
    reconnects: int = 0
    other: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def open_link(store: Store, key: bytes, size: BurstSize) -> tuple[int, str]:
    """A study over the database's first run (both languages, no attention checks, room
    for every place) and a Prolific link with ``size.places`` places; its id and token."""
    run_id = str(Runs(store).runs()["run_id"].iloc[0])
    rules = StudyRules(store)
    config = StudyConfig(name="launch", run_ids=(run_id,), overlap=size.places, attention_checks=0)
    study_id = rules.create_study(config, sample())
    _invite, token = crowd.create_invite(
        store,
        key,
        study_id,
        crowd.InviteRequest(
            platform="prolific",
            days=1,
            cap=size.places,
            batch_size=size.items,
            consent_ko="동의",
            consent_en="agree",
            contact="researcher@example.org",
        ),
    )
    return study_id, token


def arrivals(size: BurstSize, token: str, seed: int = 62) -> list[tuple[float, str, str]]:
    """Each worker's arrival (seconds after launch, spread evenly at random over the
    window), Prolific id and the query their link opens with."""
    chooser = random.Random(seed)
    moments = sorted(chooser.uniform(0, size.window_s) for _ in range(size.workers))
    people = []
    for n, moment in enumerate(moments):
        pid = f"{0xB000 + n:024x}"
        query = f"invite={token}&PROLIFIC_PID={pid}&STUDY_ID={STUDY_ID}&SESSION_ID={pid[::-1]}"
        people.append((moment, pid, query))
    return people


def run(port: int, size: BurstSize, token: str) -> Burst:
    """The whole burst through the proxy on ``port``; what the workers met."""
    burst = Burst()
    references = {item["id"]: item["reference"] for item in calibration_items(("ko", "en"))}

    async def everyone() -> None:
        start = time.perf_counter()
        await asyncio.gather(
            *(
                _worker(port, start + at, pid, query, size, burst, references)
                for at, pid, query in arrivals(size, token)
            )
        )

    began = time.perf_counter()
    asyncio.run(everyone())
    burst.wall_s = time.perf_counter() - began
    return burst


def _page_cookie(port: int, query: str) -> str | None:
    """GET the join page as a browser's first request does; the sticky cookie it got."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/join?{query}", timeout=60) as answer:
        answer.read()
        found = SimpleCookie()
        for header in answer.headers.get_all("Set-Cookie") or []:
            found.load(header)
    morsel = found.get(STICKY_COOKIE)
    return f"{STICKY_COOKIE}={morsel.value}" if morsel else None


async def _worker(  # noqa: PLR0913 - one worker's whole description
    port: int,
    at: float,
    pid: str,
    query: str,
    size: BurstSize,
    burst: Burst,
    references: dict[str, dict[str, int]],
) -> None:
    """One worker from arrival to their last page; a dropped connection is opened again
    (as the browser does) and the visit goes on from what the page shows."""
    import websockets

    await asyncio.sleep(max(0.0, at - time.perf_counter()))
    for _attempt in range(5):
        try:
            start = time.perf_counter()
            cookie = await asyncio.to_thread(_page_cookie, port, query)
            async with connect(port, cookie) as ws:
                session = Session(ws, "join", query)
                page = await session.run()
                burst.pages.append(time.perf_counter() - start)
                if pid not in burst.holders:  # an arrival, not a reconnect
                    burst.first_pages.append(burst.pages[-1])
                await _visit(session, page, pid, size, burst, references)
                return
        except (TimeoutError, OSError, websockets.ConnectionClosed):
            burst.reconnects += 1
            await asyncio.sleep(0.5)
    burst.outcome["lost"] += 1


async def _visit(  # noqa: PLR0913 - one worker's whole description
    session: Session,
    page: Page,
    pid: str,
    size: BurstSize,
    burst: Burst,
    references: dict[str, dict[str, int]],
) -> None:
    """Act on each page as a worker would until the visit ends (a refusal, the code)."""
    first = pid not in burst.holders  # a reconnect's first page is not an arrival
    for _step in range(MAX_STEPS):
        if page.exception:
            burst.crashes += 1
            burst.outcome["crashed"] += 1
            return
        refusals = [_plain(body) for body in page.alerts("ERROR")]
        if refusals and first:
            full = refusals[0].startswith(FULL)
            burst.outcome["full" if full else "refused"] += 1
            burst.other += [] if full else refusals[:1]
            return
        if first:
            burst.outcome["held"] += 1
            burst.holders.add(pid)
            first = False
        states, rating = _next_move(page, references)
        if states is None:
            burst.finished += bool(page.alerts("SUCCESS"))
            return
        await asyncio.sleep(size.think_s * random.uniform(0.5, 1.5))
        start = time.perf_counter()
        page = await session.run(states)
        burst.pages.append(time.perf_counter() - start)
        if rating and not page.exception and not page.alerts("ERROR"):
            burst.acknowledged[pid] += 1
    burst.outcome["stuck"] += 1


def _plain(markdown: str) -> str:
    """An alert's text as read: the page escapes Markdown in sentences (``full\\:``)."""
    return re.sub(r"\\(.)", r"\1", markdown)


def _next_move(page: Page, references: dict[str, dict[str, int]]) -> tuple[Any, bool]:
    """The widget states of a worker's next click on this page (None: nothing left to
    click), and whether that click submits a rating."""
    from streamlit.proto.WidgetStates_pb2 import WidgetStates

    states = WidgetStates()
    agree = next((c for c in page.checkbox if c.id.endswith("crowd.agree")), None)
    if agree is not None:  # consent: tick the box (the page redraws), then Continue
        ticked = states.widgets.add()
        ticked.id, ticked.bool_value = agree.id, True
        go = next((b for b in page.button if b.type == "primary" and not b.form_id), None)
        if go is not None and not go.disabled:
            _press(states, go)
        return states, False
    following = next((b for b in page.button if "calibration.next" in b.id), None)
    if following is not None:
        _press(states, following)
        return states, False
    submit = page.submitter()
    if submit is None:
        return None, False
    if submit.form_id.startswith("calibration."):  # the reference scores: it passes
        reference = references[submit.form_id.removeprefix("calibration.")]
        for radio in page.radio:
            chosen = states.widgets.add()
            chosen.id = radio.id
            chosen.string_value = str(reference[radio.label.split(" ")[0]])
    elif submit.form_id != "crowd.screening":  # an item: scored 4 throughout
        for radio in page.radio:
            chosen = states.widgets.add()
            chosen.id, chosen.string_value = radio.id, "4"
    _press(states, submit)  # screening: the defaults (Korean native, no years abroad)
    rating = submit.form_id != "crowd.screening" and not submit.form_id.startswith("calibration.")
    return states, rating


def _press(states: Any, button: Any) -> None:
    pressed = states.widgets.add()
    pressed.id, pressed.trigger_value = button.id, True


def places_stored(db: Path, key: bytes, token: str) -> int:
    """The places the database counts as held on the burst's link."""
    store = Store(db)
    try:
        invite = crowd.check_invite(store, key, token, joining=False)
        return crowd.places(store, invite).used
    finally:
        store.db.conn.close()


def usernames(key: bytes, study_id: int, pids: list[str]) -> dict[str, str]:
    """Each Prolific id's pseudonym in the burst's study (the app's own naming)."""
    return {pid: crowd.worker_name(key, study_id, "prolific", pid) for pid in pids}


def figures(  # noqa: PLR0913 - what the report reads
    burst: Burst,
    size: BurstSize,
    stored: Counter[str],
    db: Path,
    key: bytes,
    study_id: int,
    token: str,
) -> dict[str, object]:
    """The ``name: value`` lines of the burst; ``stored`` is items rated per username."""
    names = usernames(key, study_id, sorted(burst.holders))
    kept = {pid: stored[name] for pid, name in names.items()}
    acknowledged = sum(burst.acknowledged.values())
    lost = sum(max(0, burst.acknowledged[pid] - kept[pid]) for pid in kept)
    extra = sum(max(0, kept[pid] - burst.acknowledged[pid]) for pid in kept)
    in_db = places_stored(db, key, token)
    other = sum(n for kind, n in burst.outcome.items() if kind not in ("held", "full"))
    exact = (
        burst.outcome["held"] == size.places == in_db
        and burst.outcome["full"] == size.workers - size.places
        and other == 0
    )
    pages = sorted(burst.pages)
    return {
        "burst_workers": size.workers,
        "burst_window_s": f"{size.window_s:g}",
        "burst_places": size.places,
        "burst_held": burst.outcome["held"],
        "burst_told_full": burst.outcome["full"],
        "burst_other": other,
        "burst_places_stored": in_db,
        "places_exact": int(exact),
        "burst_finished": burst.finished,
        "burst_acknowledged": acknowledged,
        "burst_stored": sum(kept.values()),
        "burst_lost": lost,
        "burst_stored_unacknowledged": extra,
        "burst_reconnects": burst.reconnects,
        "burst_crashes": burst.crashes,
        "burst_page_loads": len(pages),
        "p50_page_s": f"{_quantile(pages, 0.5):.3f}",
        "p95_page_s": f"{_quantile(pages, 0.95):.3f}",
        "max_page_s": f"{pages[-1] if pages else float('nan'):.3f}",
        "p95_first_page_s": f"{_quantile(sorted(burst.first_pages), 0.95):.3f}",
        "burst_wall_s": f"{burst.wall_s:.1f}",
    }  # fmt: skip


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[int(q * (len(ordered) - 1))] if ordered else float("nan")
