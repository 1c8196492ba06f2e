"""Do the stand-ins directly in pages/ still earn their place? A fresh server, a deep link
as its very first request, with the stand-ins and, in a copy of the app, without them.

DESIGN.md (Layout) names the trap: until ``st.navigation`` has run once in the process,
Streamlit 1.x treats the files directly inside ``pages/`` beside the entry script as pages
of its old multipage mode, so the first deep link after a start met "Page not found" (the
real pages live in section folders) and the stand-ins (components/core/first_visit.py)
hand such a link over to app.py. With Streamlit 1.67 the trap is still there: without
the stand-ins the first deep link draws its page under "Page not found". So they stay
(docs/development.md says so), and this test tells the day a Streamlit upgrade fixes it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.serve import free_port, wait_healthy
from koed_core.paths import SAMPLE_FILE
from tests.browser.conftest import ARTIFACTS, ROOT

APP_FILES = ["app.py", "pages", "components", "koed_core", "data", "locale", ".streamlit"]
LINKS = [("/overview", "Label overview"), ("/agreement", "Judge-human agreement")]


def _app_copy(folder: Path, stand_ins: bool) -> Path:
    """The app's files in ``folder``, the stand-ins directly in pages/ kept or removed."""
    root = folder / "app"
    for name in APP_FILES:
        source = ROOT / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.db", "*.db-*")
            shutil.copytree(source, root / name, ignore=ignore)
        else:
            root.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, root / name)
    if not stand_ins:
        for script in (root / "pages").glob("*.py"):
            if script.name != "__init__.py":
                script.unlink()
    return root


def _serve(root: Path, folder: Path) -> Iterator[str]:
    """`streamlit run app.py` in ``root`` on a free port: no accounts, the sample data."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("KOED_MODELS", "KOED_USERS")},
        "KOED_CACHE_DIR": str(folder),
        "KOED_DB": str(folder / "koed.db"),
        "KOED_DATA": str(SAMPLE_FILE),
        "PYTHONPATH": str(root),
    }
    log = (folder / "streamlit.log").open("w")
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true"]
    command += [f"--server.port={port}", "--browser.gatherUsageStats=false"]
    command += ["--server.fileWatcherType=none"]
    proc = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_healthy(url, proc):
            raise RuntimeError((folder / "streamlit.log").read_text())
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def _first_visit(browser: Any, url: str, heading: str, shot: str) -> dict[str, Any]:
    """Open ``url`` as the server's first request; what the visitor meets."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(url)
    expect(page.get_by_role("heading", name=heading)).to_be_visible()
    page.wait_for_timeout(2000)  # a "Page not found" modal comes after the page draws
    seen = {
        "not_found": page.get_by_text("Page not found").count(),
        "menu": page.get_by_test_id("stTopNav").count(),
        "exception": page.get_by_test_id("stException").count(),
    }
    page.screenshot(path=str(ARTIFACTS / f"stand_ins_{shot}.png"))
    page.close()
    return seen


@pytest.mark.parametrize("stand_ins", [True, False], ids=["with", "without"])
@pytest.mark.parametrize("link, heading", LINKS, ids=["overview", "agreement"])
def test_a_first_deep_link_needs_the_stand_ins(
    tmp_path: Path, browser: Any, stand_ins: bool, link: str, heading: str
) -> None:
    """With the stand-ins the page opens clean; without them (Streamlit 1.67) the page
    draws under a "Page not found" modal that makes it inert. The day the second case
    fails, Streamlit has fixed the trap: delete the stand-ins and this case."""
    root = _app_copy(tmp_path, stand_ins)
    for url in _serve(root, tmp_path):
        seen = _first_visit(
            browser, url + link, heading, f"{link[1:]}_{'with' if stand_ins else 'without'}"
        )
        assert seen["exception"] == 0
        assert seen["menu"] == 1  # app.py's navigation along the top, not a file list
        assert seen["not_found"] == (0 if stand_ins else 1)
