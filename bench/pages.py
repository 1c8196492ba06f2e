"""How long each page takes, warm, on the official KoED: in Chromium, as a person sees it.

    python bench/pages.py [PATH_TO_KoED.json] [--script-only] [--smoke] [--cold]

An admin's database is built first, as a study's admin would have it: two listener runs
(a Western and a Korean-centric one, served by the scripted OpenAI-compatible server)
and the human reference on the first 100 dialogues in both languages, all three judged,
and a study with three raters' scores, so Gap and Agreement have numbers to draw.

``page_<name>_s`` is the browser's time from a click in the navigation to that page's
title on screen with its script finished (Streamlit's own "not running" mark), warm:
each page is visited once first, then three rounds over all pages; the median is
printed. Goal on the 2-core machine: every page under 1 s.

Cold: ``page_first_load_s`` is the first page after the server's start,
``first_<name>_s`` each page's first visit after it (its imports, caches and first run;
goal under 3 s), ``page_full_reload_s`` the median of a full reload (F5, a new session)
of each page, ``page_full_reload_max_s`` the slowest (goal under 1.5 s), ``reload_<name>_s``
each page's.
``page_clicks_retried`` counts the clicks a busy browser took before the page was live
(nothing changed in 30 s), made again and named; a third lost click stops the bench.

``script_<name>_s`` is the page script alone as Streamlit's AppTest runs it (no browser,
no rendering), warm, median of three. ``adaptation_s`` is the first full computation of
the ko/en similarities (encoder load included), in a fresh cache.

``--smoke``: the built-in sample (unless a path is given), 2 dialogues in the database,
4 in the similarity computation, two pages (``SMOKE_PAGES``: the first one and one
behind a menu) opened once, with no warm-up round, in the browser and in AppTest, in
both languages; the test suite runs it to see the bench still works, and its figures
are not the benchmark's.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from koed_core import i18n  # noqa: E402  (after the path: the bench runs from anywhere)
from koed_core.judge.request import JudgeRequest  # noqa: E402
from koed_core.models.request import EpisodeRequest, RunRequest  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

OFFICIAL = ROOT.parent / "shared" / "data" / "KoED.json"
CROWD_ONLY = {"app_pages/rating/join.py"}
"""Opened only through an invite link: no admin's navigation holds it."""
PASSWORD = "bench-password"
ROUNDS = 3
WARM_UP = True
"""Open every page once before timing (off in a smoke run: one round, cold)."""
DIALOGUES = 100
SIMILARITIES: int | None = None
"""Dialogues whose similarities are computed (None: the whole file)."""
PAGES: tuple[str, ...] | None = None
"""The titles timed (None: every page an admin's navigation holds)."""
SMOKE_PAGES = ("Explorer", "Chat")
LAUNCHER = ("components.core.warm_start",)
"""How the server starts: as ``koed serve`` starts it, its imports and dataset warmed
while it waits for the first browser (``--cold``: plain ``streamlit``, for comparison)."""
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]


def seed(data: Path, work: Path) -> dict[str, str]:
    """An admin's database on ``data``; returns the environment the app runs with."""
    from fixtures.fake_openai import FakeOpenAI
    from koed_core.db import Store
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.judge.judging import judge_run
    from koed_core.models.backends import make_client
    from koed_core.models.registry import ModelSpec
    from koed_core.models.runs import run_benchmark
    from koed_core.rating.accounts import add_user
    from koed_core.rating.studies import RaterProfile, StudyConfig, StudyRules

    add_user(work / "users.yaml", "boss", "admin", "Boss", PASSWORD)
    store = Store(work / "k.db")
    dataset = load_dataset(data)
    dialogues = dataset.dialogues[:DIALOGUES]
    server = FakeOpenAI().start()
    try:
        specs = [
            ModelSpec("western", "openai", "w", base_url=server.base_url, provenance="western"),
            ModelSpec(
                "korean", "openai", "k", base_url=server.base_url, provenance="korean-centric"
            ),
            ModelSpec("human", "human"),
        ]
        judge = ModelSpec("judge", "openai", "fake-judge", base_url=server.base_url)
        run_ids = []
        for spec in specs:
            report = run_benchmark(
                store,
                make_client(spec),
                spec,
                dialogues,
                dataset.sha256,
                RunRequest(
                    spec.name,
                    langs=("ko", "en"),
                    protocol="direct" if spec.backend == "human" else "single",
                    concurrency=8,
                ),
            )
            judge_run(
                store,
                make_client(judge),
                judge,
                JudgeRequest(report.run_id, judge=judge.name, mode="paper", concurrency=8),
            )
            run_ids.append(report.run_id)
        # episodes of one model on a fifth of the dialogues, judged: the Episodes page and
        # the gap over turns have something to draw
        from koed_core.models.episodes import run_episodes

        listener = specs[1]
        played = run_episodes(
            store,
            (listener, make_client(listener)),
            (specs[0], make_client(specs[0])),
            dialogues[: max(2, DIALOGUES // 5)],
            dataset.sha256,
            EpisodeRequest(listener.name, speaker=specs[0].name, temperature=0.7),
        )
        judge_run(
            store,
            make_client(judge),
            judge,
            JudgeRequest(played.run_id, judge=judge.name, mode="paper", concurrency=8),
        )
    finally:
        server.stop()
    rules = StudyRules(store)
    study_id = rules.create_study(
        StudyConfig(name="bench", run_ids=tuple(run_ids), attention_checks=0), dataset
    )
    for n, name in enumerate(("r1", "r2", "r3")):
        rules.save_profile(RaterProfile(name, ("ko", "en"), "ko", 20.0, 1.0))
        rules.mark_calibrated(name)
        for _ in range(60):
            item = rules.next_item(study_id, name)
            if item is None:
                break
            base = 1 + (len(item.response) + n) % 5
            scores = dict.fromkeys(["EX", "IP", "ER", "EEA", "CA"], base)
            rules.save_rating(item.assignment_id, name, scores)
    return {
        "KOED_DATA": str(data),
        "KOED_DB": str(work / "k.db"),
        "KOED_CACHE_DIR": str(work),
        "KOED_USERS": str(work / "users.yaml"),
        "KOED_COOKIE_KEY": "b" * 40,
    }


def page_titles() -> dict[str, str]:
    """Navigation title -> page file, for the pages an admin's navigation holds."""
    import ast

    titles = {}
    source = ast.parse((ROOT / "app.py").read_text())
    for node in ast.walk(source):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page":
            words = {k.arg: k.value for k in node.keywords}
            path = node.args[0]
            if isinstance(path, ast.BinOp) and isinstance(path.right, ast.Constant):
                page = str(path.right.value)
                title = words.get("title")
                if isinstance(title, ast.Call) and title.args:  # title=_("Chat"): its source
                    title = title.args[0]
                if page not in CROWD_ONLY and isinstance(title, ast.Constant):
                    titles[str(title.value)] = page
    titles.pop("Log in", None)  # an admin sees the same file as "Account"
    if PAGES is not None:
        missing = set(PAGES) - set(titles)
        if missing:
            raise SystemExit(f"no page titled {sorted(missing)} in app.py")
        titles = {title: page for title, page in titles.items() if title in PAGES}
    if not titles:  # never a bench that times nothing and says nothing
        raise SystemExit("no st.Page(..., title=...) found in app.py")
    return titles


def browser_times(env: dict[str, str], work: Path) -> dict[str, float]:
    """Warm median seconds from a navigation click to the page drawn, per page title."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from fixtures.serve import free_port, wait_healthy

    port = free_port()
    log = (work / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", *LAUNCHER, "run", "app.py", "--server.headless=true",
         f"--server.port={port}", "--browser.gatherUsageStats=false",
         "--server.fileWatcherType=none"],
        cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_healthy(url, proc, timeout_s=90):
            raise SystemExit(f"the Streamlit server did not start (see {work / 'streamlit.log'})")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            page.set_default_timeout(120_000)
            start = time.perf_counter()  # the first visitor after a start: nothing warm yet
            page.goto(url)
            _settled(page)
            first = time.perf_counter() - start
            page.goto(url + "/login")
            logged_in = page.get_by_text("Logged in: Boss")
            for attempt in (1, 2):  # a click that lands while the page redraws is lost
                _settled(page)  # a field filled before the first run ends is wiped by it
                if logged_in.count():
                    break
                page.get_by_label("Username").fill("boss")
                page.get_by_role("textbox", name="Password").fill(PASSWORD)
                page.get_by_role("button", name="Log in").click()
                try:
                    logged_in.wait_for(timeout=20_000 * attempt)
                    break
                except PlaywrightTimeout:
                    if attempt == 2:
                        raise
            titles = list(page_titles())
            seen: dict[str, list[float]] = {t: [] for t in titles}
            for title in titles:  # each page's first load after the start (< 3 s)
                seen[f"{title} (first)"] = [_open(page, title)]
            for _ in range(ROUNDS):
                for title in titles:
                    seen[title].append(_open(page, title))
            reloads = []
            for title in titles:  # a full reload (F5) of each page, warm (goal < 1.5 s)
                _open(page, title)
                start = time.perf_counter()
                page.reload()
                _settled(page)
                reloads.append(time.perf_counter() - start)
                seen[f"{title} (reload)"] = [reloads[-1]]  # which page is the slowest
            seen["full reload"] = reloads
            seen["full reload max"] = [max(reloads)]
            korean = i18n.catalog("ko").gettext
            switches = []
            page.goto(url + "/?lang=en")  # the Explorer, whatever page was timed last
            _settled(page)
            for _ in range(ROUNDS):  # the language switch, both ways, on the Explorer
                for name in (i18n.NAMES["ko"], i18n.NAMES["en"]):
                    switches.append(_switch(page, name))
            page.goto(url + "/?lang=ko")
            _settled(page)
            for title in titles if WARM_UP else ():  # the same pages in Korean, then warm
                _open(page, korean(title))
            for _ in range(ROUNDS):
                for title in titles:
                    seen.setdefault(f"{title} (ko)", []).append(_open(page, korean(title)))
            seen["language switch"] = switches
            seen["first load"] = [first]
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return {title: statistics.median(times) for title, times in seen.items()}


RETRIED: list[str] = []  # the clicks made again (a lost click is said, never hidden)


def _settled(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(
        """() => document.querySelector('[data-testid="stApp"]')
                 ?.getAttribute('data-test-script-state') === 'notRunning'
            && document.querySelector('h1') !== null""",
        polling="raf",
    )


def _switch(page, name: str) -> float:  # type: ignore[no-untyped-def]
    """Seconds from a click on the language switch to the page drawn in that language.

    A click that a busy machine's browser took before the switch was live (the page never
    changes language) is made again, up to three times; the time is the answered click's."""
    button = page.get_by_test_id("stButtonGroup").get_by_text(name, exact=True)
    lang = next(code for code, shown in i18n.NAMES.items() if shown == name)
    for attempt in range(3):
        _settled(page)
        start = time.perf_counter()
        button.click()
        try:
            page.wait_for_function(
                """lang => location.search.includes('lang=' + lang)
                    && document.querySelector('[data-testid="stApp"]')
                         .getAttribute('data-test-script-state') === 'notRunning'""",
                arg=lang,
                polling="raf",
                timeout=30_000,
            )
        except Exception:  # noqa: BLE001 - playwright's timeout; the last try decides
            if attempt == 2:
                raise
            RETRIED.append(f"language switch to {lang}")
            continue
        return time.perf_counter() - start
    raise AssertionError("unreachable")


def _open(page, title: str) -> float:  # type: ignore[no-untyped-def]
    """Open the page from the top navigation (its section's menu, then its link); seconds
    from the click on the link until its script is done and its title drawn.

    A click that a busy browser took before the menu was live (the page never changes) is
    made again, up to three times; the time is the answered click's."""
    link = page.get_by_role("menuitem", name=title, exact=True)  # in its section's menu
    for attempt in range(3):
        _settled(page)
        for section in page.get_by_test_id("stTopNavSection").all():
            section.click()
            if link.first.is_visible():
                break
            page.keyboard.press("Escape")
        path = link.first.get_attribute("href") or ""
        start = time.perf_counter()
        link.first.click()
        try:
            page.wait_for_function(
                """path => location.pathname.endsWith(path.split('/').pop())
                    && document.querySelector('[data-testid="stApp"]')
                         .getAttribute('data-test-script-state') === 'notRunning'
                    && document.querySelector('h1') !== null""",
                arg=path,
                polling="raf",
                timeout=30_000,
            )
        except Exception as err:  # noqa: BLE001 - playwright's timeout; the last try decides
            if attempt == 2:
                raise SystemExit(f"{title}: not drawn 30 s after three clicks ({err})") from err
            RETRIED.append(title)
            page.keyboard.press("Escape")
            continue
        seconds = time.perf_counter() - start
        if page.get_by_test_id("stException").count():
            raise SystemExit(f"{title}: the page shows an exception")
        return seconds
    raise AssertionError("unreachable")


def script_times(env: dict[str, str], lang: str = "en") -> dict[str, float]:
    """Warm median seconds of each page script in AppTest (no browser), in ``lang``."""
    from streamlit.testing.v1 import AppTest

    os.environ.update(env)
    times = {}
    for title, page in page_titles().items():
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.query_params["lang"] = lang
        at.session_state["authentication_status"] = True
        at.session_state["username"] = "boss"
        at.run()
        at.switch_page(page).run()  # warm: caches filled
        runs = []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            at.run()
            runs.append(time.perf_counter() - start)
        if at.exception or not at.title:
            raise SystemExit(f"{page} did not render: {[e.value for e in at.exception]}")
        times[title] = statistics.median(runs)
    return times


def adaptation(data: Path, work: Path) -> tuple[float, float]:
    """The first full computation of the similarities (encoder load included), and the
    encoder's throughput in texts per second once loaded."""
    from koed_core.dialogues.adaptation import UseEncoder, pair_similarities, unique_texts
    from koed_core.dialogues.dataset import load_dataset

    dataset = load_dataset(data)
    if SIMILARITIES is not None:  # a smoke run: the first dialogues only
        dataset = replace(
            dataset, dialogues=dataset.dialogues[:SIMILARITIES], sha256=f"first-{SIMILARITIES}"
        )
    encoder = UseEncoder()
    start = time.perf_counter()
    pair_similarities(dataset, encoder, work / "fresh-cache")
    total = time.perf_counter() - start
    texts = unique_texts(dataset.dialogues)  # the encoder is loaded now
    count = min(2000, len(texts))  # the sample has fewer
    start = time.perf_counter()
    for begin in range(0, count, 64):
        encoder.encode(texts[begin : min(begin + 64, count)])
    return total, count / (time.perf_counter() - start)


def _name(kind: str, title: str) -> str:
    """page_gap_s, page_gap_ko_s (the same page in Korean), page_language_switch_s."""
    if title in ("language switch", "first load", "full reload", "full reload max"):
        return f"{kind}_{title.replace(' ', '_')}_s"
    if title.endswith(" (first)"):  # first_gap_s: the page's first load after a start
        return f"first_{Path(page_titles()[title.removesuffix(' (first)')]).stem}_s"
    if title.endswith(" (reload)"):  # reload_gap_s: a full reload (F5) of that page
        return f"reload_{Path(page_titles()[title.removesuffix(' (reload)')]).stem}_s"
    korean = title.endswith(" (ko)")
    stem = Path(page_titles()[title.removesuffix(" (ko)")]).stem
    return f"{kind}_{stem}{'_ko' if korean else ''}_s"


def main() -> None:
    global ROUNDS, WARM_UP, DIALOGUES, PAGES, SIMILARITIES, LAUNCHER
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    smoke = "--smoke" in sys.argv[1:]
    if "--cold" in sys.argv[1:]:
        LAUNCHER = ("streamlit",)
        print("# --cold: plain `streamlit run`, nothing warmed before the first browser")
    data = Path(args[0]) if args else SAMPLE_FILE if smoke else OFFICIAL
    if smoke:
        ROUNDS, WARM_UP, DIALOGUES, PAGES, SIMILARITIES = 1, False, 2, SMOKE_PAGES, 4
        print("# smoke: a small size; the figures are not the benchmark's")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        start = time.perf_counter()
        env = seed(data, work)
        seconds = time.perf_counter() - start
        print(f"# seeded 3 runs x {2 * DIALOGUES} answers, judged, 3 raters in {seconds:.0f} s")
        if "--script-only" not in sys.argv:
            for title, seconds in browser_times(env, work).items():
                print(f"{_name('page', title)}: {seconds:.3f}  # {title}, Chromium")
            print(f"page_clicks_retried: {len(RETRIED)}  # {', '.join(RETRIED) or 'none'}")
        for lang in ("en", "ko"):
            for title, seconds in script_times(env, lang).items():
                name = _name("script", title if lang == "en" else f"{title} (ko)")
                print(f"{name}: {seconds:.3f}  # {title}, AppTest, {lang}")
        seconds, rate = adaptation(data, work)  # a fresh cache: the first computation
        print(f"adaptation_s: {seconds:.1f}")
        print(f"adaptation_texts_per_s: {rate:.0f}")


if __name__ == "__main__":
    main()
