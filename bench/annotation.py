"""Annotation at the official file's size: a project of all 1,360 dialogues, each
annotated by two people with two spans, then what the pages compute from it.

Prints the seconds to save one annotation (the draft written on every "Add span"), to
list a project's items (the Annotate page's picker), to read the final answers (the gap
breakdown), the agreement table (kappa with its bootstrap, span F1) and the export.
Uses ../shared/data/KoED.json when present, else the built-in sample.

Then, in Chromium at 1366x768 on the Annotate page (the built-in sample's first dialogue),
the span panel as a person meets it, median of five: ``drag_to_panel_s`` from the mouse
released over "편의점" to the panel on screen naming it, ``enter_to_span_s`` from Enter
to the new span drawn in the text (a round trip to the server: the add is checked and
stored, the page rerun), and ``bare_rerun_s``, a button click in a one-button Streamlit
app to its script done, printed beside them with their ratio to it. Goal: under 0.3 s
each.

    python bench/annotation.py [--no-browser] [--smoke]

``--smoke``: the built-in sample's 34 dialogues, and one round in Chromium after the cold
one, in seconds; the test suite runs it to see the bench still works, and its figures
are not the benchmark's.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from koed_core.annotation.agreement import agreement_table  # noqa: E402
from koed_core.annotation.exchange import export_lines  # noqa: E402
from koed_core.annotation.projects import AnnotationRules  # noqa: E402
from koed_core.annotation.spans import Span, side_at  # noqa: E402
from koed_core.db import Store  # noqa: E402
from koed_core.dialogues.dataset import load_dataset  # noqa: E402
from koed_core.paths import SAMPLE_FILE  # noqa: E402

OFFICIAL = ROOT.parent / "shared" / "data" / "KoED.json"


def _spans(dialogue, shift: int) -> list[Span]:  # type: ignore[no-untyped-def]
    turn = next(t for t in dialogue.turns if len(t.ko) > 6)
    return [
        Span(side_at(dialogue, "ko", turn.position, 0, 2 + shift), "food", None, True),
        Span(side_at(dialogue, "ko", turn.position, 3, 5), "places", None, True),
    ]


def main(smoke: bool = False) -> None:
    dataset = load_dataset(OFFICIAL if OFFICIAL.is_file() and not smoke else SAMPLE_FILE)
    with tempfile.TemporaryDirectory() as work:
        annotations = AnnotationRules(Store(Path(work) / "koed.db"))
        ids = [d.conv_id for d in dataset.dialogues]
        project = annotations.create_project("bench", dataset, ids, annotators=["a", "b"])
        saves = []
        for i, dialogue in enumerate(dataset.dialogues):
            category = (
                None
                if dialogue.korean_emotion
                else ("context_modified" if i % 3 else "simply_transferred")
            )
            for who, shift in (("a", 0), ("b", i % 2)):
                start = time.perf_counter()
                annotations.save(
                    project, dialogue, who, category, "", _spans(dialogue, shift), submit=True
                )
                saves.append(time.perf_counter() - start)
        print(f"dialogues: {len(ids)}")
        print(f"save_median_s: {statistics.median(saves):.4f}")
        for name, work_fn in (
            ("items_s", lambda: annotations.items(project, "a")),
            ("final_s", lambda: annotations.final(project, dataset)),
            (
                "agreement_s",
                lambda: agreement_table(
                    annotations.annotations(project), annotations.project(project)
                ),
            ),
            ("export_s", lambda: export_lines(annotations, project, dataset, b"k" * 32)),
        ):
            start = time.perf_counter()
            work_fn()
            print(f"{name}: {time.perf_counter() - start:.3f}")


ROUNDS = 5
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
BARE_APP = """import streamlit as st
st.title("bare")
if st.button("again"):
    st.write("clicked")
"""


def _serve(script: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``streamlit run script``; wait for it with :func:`_healthy`."""
    from fixtures.serve import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless=true",
         f"--server.port={port}", "--browser.gatherUsageStats=false",
         "--server.fileWatcherType=none"],
        cwd=ROOT, env={**os.environ, **env}, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    return proc, f"http://127.0.0.1:{port}"


def _healthy(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    from fixtures.serve import wait_healthy

    if not wait_healthy(url, proc, timeout_s=90):
        raise SystemExit(f"the Streamlit server did not start (see {log})")


def _settled(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function(
        """() => document.querySelector('[data-testid="stApp"]')
                 ?.getAttribute('data-test-script-state') === 'notRunning'""",
        polling="raf",
    )


def panel_times(work: Path) -> dict[str, float]:
    """Median seconds: a drag to the panel shown, Enter to the span drawn, a bare rerun."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from fixtures.span_at import SPAN_AT
    from koed_core.rating.accounts import add_user

    dataset = load_dataset(SAMPLE_FILE)
    add_user(work / "users.yaml", "ann", "annotator", "Ann", "bench-password")
    store = AnnotationRules(Store(work / "panel.db"))
    project = store.create_project("panel", dataset, [dataset.dialogues[0].conv_id], 1, ["ann"])
    env = {
        "KOED_DATA": str(SAMPLE_FILE),
        "KOED_DB": str(work / "panel.db"),
        "KOED_CACHE_DIR": str(work),
        "KOED_USERS": str(work / "users.yaml"),
        "KOED_COOKIE_KEY": "b" * 40,
    }
    bare_script = work / "bare.py"
    bare_script.write_text(BARE_APP)
    app, url = _serve(ROOT / "app.py", env, work / "app.log")  # both start at once
    bare, bare_url = _serve(bare_script, env, work / "bare.log")
    drags, enters, reruns = [], [], []
    try:
        _healthy(app, url, work / "app.log")
        _healthy(bare, bare_url, work / "bare.log")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            page.set_default_timeout(60_000)
            page.goto(bare_url)
            _settled(page)
            for _ in range(ROUNDS + 1):  # the first is cold
                start = time.perf_counter()
                page.get_by_role("button", name="again").click()
                page.wait_for_timeout(0)
                _settled(page)
                reruns.append(time.perf_counter() - start)
            page.goto(url + "/login")
            logged_in = page.get_by_text("Logged in as Ann")
            for attempt in (1, 2):  # a click that lands while the login page redraws is lost
                _settled(page)
                if logged_in.count():
                    break
                page.get_by_label("Username").fill("ann")
                page.get_by_role("textbox", name="Password").fill("bench-password")
                page.get_by_role("button", name="Log in").click()
                try:
                    logged_in.wait_for(timeout=15_000 * attempt)
                    break
                except PlaywrightTimeout:
                    if attempt == 2:
                        raise
            page.goto(url + "/annotate")
            _settled(page)
            panel = page.get_by_role("dialog", name="New span")
            count = 0
            for _round in range(ROUNDS + 1):
                # the selector's text drawn (its script mounts after the page settles)
                box = page.wait_for_function(SPAN_AT, arg=["ko", 3, "편의점"]).json_value()
                x0, y0, x1, y1 = box
                page.mouse.move(x0, y0)
                page.mouse.down()
                page.mouse.move(x1, y1, steps=4)
                start = time.perf_counter()
                page.mouse.up()
                panel.get_by_text("Korean: 편의점", exact=True).wait_for()
                drags.append(time.perf_counter() - start)
                page.keyboard.press("7" if count else "6")  # another type: a new span
                panel.get_by_text("No English counterpart").click()
                start = time.perf_counter()
                page.keyboard.press("Enter")
                count += 1
                page.get_by_text(f"Your spans ({count})").wait_for()
                _settled(page)
                enters.append(time.perf_counter() - start)
                if count == 2:  # take both back: each round adds to the same short list
                    for left in (1, 0):
                        page.keyboard.press("Control+z")
                        page.get_by_text(f"Your spans ({left})").wait_for()
                        _settled(page)
                    count = 0
            browser.close()
        del project
    finally:
        for proc in (app, bare):
            proc.terminate()
            proc.wait(timeout=20)
    return {
        "drag_to_panel_s": statistics.median(drags[1:]),
        "enter_to_span_s": statistics.median(enters[1:]),
        "bare_rerun_s": statistics.median(reruns[1:]),
    }


if __name__ == "__main__":
    if "--smoke" in sys.argv[1:]:
        ROUNDS = 1
        print("# smoke: a small size; the figures are not the benchmark's")
    main(smoke="--smoke" in sys.argv[1:])
    if "--no-browser" not in sys.argv:
        with tempfile.TemporaryDirectory() as folder:
            times = panel_times(Path(folder))
        bare = times["bare_rerun_s"]
        for name, seconds in times.items():
            print(f"{name}: {seconds:.3f}  # {seconds / bare:.2f} x a bare rerun")
