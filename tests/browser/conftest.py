"""Real-browser tests: `streamlit run` and Debian's Chromium through Playwright.

One Chromium per test session (an xdist worker is a session) and one shared app server
on a seeded site (accounts, a study, a run of the fake model); each test gets its own
browser context (cookies, storage) and its own accounts on that site, made for it. The
shared site's database is the server's: a test reads only what it wrote or what the seed
holds. Two kinds of test start a server of their own with :func:`serve`, still in the
shared Chromium: those whose subject is a fresh server (the first request after a start,
the offline default, a job that outlives a server restart, a crowd link's own study), and
those whose pages chart whatever the database holds (the explorer's walk ending on the
Gap page, talk mode's default chart), which another test's runs or ratings would change.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fixtures.fake_openai import FakeOpenAI
from fixtures.rating import rater, seeded_store, study
from fixtures.serve import free_port, wait_healthy
from koed_core.db import Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.models.backends import make_client
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark
from koed_core.paths import SAMPLE_FILE
from koed_core.rating import accounts as users
from koed_core.rating.studies import StudyRules
from tests.conftest import registry_file

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
COOKIE_KEY = "c" * 40
RATER_PASSWORD = "mina-password-1"
ADMIN_PASSWORD = "boss-password-1"
KO_REPLY = "정말 속상했겠다. 괜찮으면 무슨 일이 있었는지 더 얘기해 줄래?"
EN_REPLY = "That sounds really hard. Do you want to tell me more about it?"
HUMAN_EN = "Smart move. Call me next time and we can talk while you walk."


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder drives a browser (`-m "not browser"` leaves them out)."""
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.browser)


def serve(folder: Path, extra: dict[str, str]) -> Iterator[str]:
    """Start `streamlit run app.py` on a free port with the app's files in ``folder``;
    yields the URL, stops the server when closed."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("KOED_MODELS", "KOED_USERS")},
        "KOED_CACHE_DIR": str(folder),
        "KOED_DB": str(folder / "koed.db"),
        **extra,
    }
    log = (folder / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless=true",
            f"--server.port={port}",
            "--browser.gatherUsageStats=false",
            "--server.fileWatcherType=none",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_healthy(url, proc):
            raise RuntimeError((folder / "streamlit.log").read_text())
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def seed_site(folder: Path, fake: FakeOpenAI) -> dict[str, str]:
    """What an admin sets up before anyone visits: accounts (admin boss, rater mina), a
    study of the human reference waiting for mina, and a run of the fake model in both
    languages (so the Gap page has something to chart). Returns the server's settings."""
    users.add_user(folder / "accounts.yaml", "mina", "rater", "Mina", RATER_PASSWORD)
    users.add_user(folder / "accounts.yaml", "boss", "admin", "Boss", ADMIN_PASSWORD)
    store, run_id = seeded_store(folder / "koed.db")
    ratings, _ = study(store, run_id, attention_checks=1)
    rater(ratings, "mina")
    listener = ModelSpec(
        name="fake-listener",
        backend="openai",
        model="fake-model",
        base_url=fake.base_url,
        provenance="korean-centric",
    )
    dataset = load_dataset(SAMPLE_FILE)
    run_benchmark(
        store,
        make_client(listener),
        listener,
        dataset.dialogues[:6],
        dataset.sha256,
        RunRequest(listener.name, langs=("ko", "en"), protocol="single"),
    )
    return {
        "KOED_DATA": str(SAMPLE_FILE),  # dialogues we wrote: no ../shared needed
        "KOED_MODELS": str(registry_file(folder, fake)),
        "KOED_USERS": str(folder / "accounts.yaml"),
        "KOED_COOKIE_KEY": COOKIE_KEY,
    }


def login_cookie(url: str, username: str) -> dict[str, Any]:
    """The login cookie an earlier visit left (signed with the site's cookie key)."""
    import jwt

    token = jwt.encode(
        {"username": username, "exp_date": time.time() + 86400}, COOKIE_KEY, algorithm="HS256"
    )
    host = url.split("//", 1)[1].split(":")[0]
    return {"name": "koed_studio_auth", "value": token, "domain": host, "path": "/"}


@dataclass(frozen=True)
class Site:
    """The shared app server and its files."""

    url: str
    folder: Path
    fake: FakeOpenAI

    @property
    def db(self) -> Path:
        return self.folder / "koed.db"

    @property
    def accounts(self) -> Path:
        return self.folder / "accounts.yaml"


@dataclass(frozen=True)
class Visit:
    """One test's place on the shared site: its own admin and rater (display names Boss
    and Mina, passwords as the seed's), so a lockout or a logout in one test never
    reaches another."""

    site: Site
    admin: str
    rater: str

    @property
    def url(self) -> str:
        return self.site.url

    def cookie(self, username: str | None = None) -> dict[str, Any]:
        return login_cookie(self.url, username or self.admin)


@pytest.fixture
def fresh_site(tmp_path: Path, fake_openai: FakeOpenAI) -> Iterator[str]:
    """The seeded site on a server of its own that has served nothing yet (boss and mina;\n    what this test stores never meets another test's)."""
    yield from serve(tmp_path, seed_site(tmp_path, fake_openai))


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One Chromium for the session; tests open their own contexts in it."""
    from playwright.sync_api import expect, sync_playwright

    assert CHROMIUM.exists(), "Debian's chromium is needed: apt-get install chromium"
    ARTIFACTS.mkdir(exist_ok=True)
    expect.set_options(timeout=30_000)  # a busy CI machine renders slower than 5 s at times
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    """The shared Chromium, with every context a test opened closed after it (and the
    default timeout back, for a test that raised it)."""
    from playwright.sync_api import expect

    before = set(chromium.contexts)
    yield chromium
    for context in set(chromium.contexts) - before:
        context.close()
    expect.set_options(timeout=30_000)


@pytest.fixture(scope="session")
def session_fake() -> Iterator[FakeOpenAI]:
    """The scripted OpenAI-compatible server behind the shared site."""
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def shared_site(
    tmp_path_factory: pytest.TempPathFactory, session_fake: FakeOpenAI
) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("site")
    settings = seed_site(folder, session_fake)
    server = serve(folder, settings)
    url = next(server)
    yield Site(url, folder, session_fake)
    server.close()


_visits = itertools.count(1)


@pytest.fixture
def site(shared_site: Site) -> Visit:
    """This test's own admin and rater (with the seed's study to rate) on the shared site."""
    n = next(_visits)
    admin, rating = f"boss{n}", f"mina{n}"
    users.add_user(shared_site.accounts, admin, "admin", "Boss", ADMIN_PASSWORD)
    users.add_user(shared_site.accounts, rating, "rater", "Mina", RATER_PASSWORD)
    rater(StudyRules(Store(shared_site.db)), rating)
    return Visit(shared_site, admin, rating)
