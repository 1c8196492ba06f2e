"""Shared fixtures: paths, an isolated cache, a local file server, cleared Streamlit caches."""

from __future__ import annotations

import contextlib
import fcntl
import http.server
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from fixtures.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[1]
OFFICIAL_FILE = ROOT.parent / "shared" / "data" / "KoED.json"

# Compiled modules are kept for the next process. With PYTHONDONTWRITEBYTECODE set (some
# containers set it), every process of the suite (each worker, each `koed` and Streamlit
# subprocess) compiled the project and pytest rewrote every test module's asserts again:
# about 5 s of CPU a worker at collection alone, 14 s of the fast lane in one process.
# Lifted here, before any worker or subprocess starts, so they inherit it; the .pyc files
# go to __pycache__ folders git ignores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many workers `-n auto` (pyproject's addopts) starts on the two-core machine:
    three when browser tests may run (they mostly wait, and a third worker fills the
    time), two when the selection leaves them out (the fast lane computes all the time,
    and a third worker only adds its own start and collection)."""
    return 2 if "not browser" in (config.getoption("markexpr") or "") else 3


@pytest.hookimpl(trylast=True)  # after tests/browser/conftest.py has marked its tests
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Heaviest files first, each file's tests kept together and in order: the two
    workers (whole files each) then start the browser and slow files while the queue is
    long, and end on short files instead of one waiting for the other's last long test."""

    rank: dict[str, int] = {}
    size: dict[str, int] = {}
    first: dict[str, int] = {}
    for n, item in enumerate(items):
        path = str(item.path)
        heavy = (
            0 if item.get_closest_marker("browser") else 1 if item.get_closest_marker("slow") else 2
        )
        rank[path] = min(rank.get(path, 2), heavy)
        size[path] = size.get(path, 0) + 1
        first.setdefault(path, n)
    # browser files first, the ones with most tests (servers to start) before the others
    items.sort(
        key=lambda i: (
            rank[str(i.path)],
            -size[str(i.path)] if rank[str(i.path)] == 0 else 0,
            first[str(i.path)],
        )
    )


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache folder and no user dataset unless it sets one."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("KOED_CACHE_DIR", str(cache))
    monkeypatch.delenv("KOED_DATA", raising=False)
    monkeypatch.delenv("KOED_DATA_URL", raising=False)
    monkeypatch.setenv("KOED_DB", str(tmp_path / "koed.db"))
    # a shared table (components/core/shared_compute.py) is drawn in the run that asked
    # for it, however loaded the machine: a test of its progress bar sets 0
    monkeypatch.setenv("KOED_SHARED_WAIT_S", "120")
    for name in ("KOED_MODELS", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return cache


@pytest.fixture(scope="session", autouse=True)
def component_scan_once() -> Iterator[None]:
    """Scan the installed packages for Streamlit components once per session, not once per
    AppTest: each new AppTest reads the metadata of every installed distribution (about
    0.75 s of CPU here, three quarters of a page test), and the installed packages do not
    change while the tests run. Only where a test module has imported Streamlit: a run
    of tests that never touch it does not pay for importing it."""
    import sys

    if "streamlit" not in sys.modules:
        yield
        return
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    found = scan()
    manifest_scanner.scan_component_manifests = lambda max_workers=None: list(found)
    yield
    manifest_scanner.scan_component_manifests = scan


@pytest.fixture(scope="session", autouse=True)
def databases_start_migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A new database file a test opens starts as a copy of one every migration made, once
    per session: running all the migrations on an empty file costs about 0.03 s of CPU,
    and the fast lane opens about 340 new databases. The copy is what `Store` itself made;
    `Store` then checks it and finds no migration pending, as it would. Only new files in
    this process: a database a test builds as an older release would have it (the
    migration tests) still runs every migration, and so does a `koed` subprocess. A test
    that changes or breaks a migration and needs a new file to run it sets
    `Store.__init__` back to `Store.__init__.__wrapped__` (monkeypatch)."""
    from koed_core.db import store as store_module

    made = tmp_path_factory.mktemp("migrated") / "template.db"
    template = store_module.Store(made)
    template.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    template.db.conn.close()
    image = made.read_bytes()
    original = store_module.Store.__init__

    def start_migrated(self: Any, path: Path | str) -> None:
        file = Path(path)
        if str(path) != ":memory:" and file.parent.is_dir() and not file.exists():
            # whole or not at all: another thread opening the same new file at once must
            # never read half a copy (written aside, then linked in if still absent)
            aside = file.with_name(f".{file.name}.{os.getpid()}.{threading.get_ident()}")
            fd = os.open(aside, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(image)
            try:
                os.link(aside, file)
            except FileExistsError:
                pass
            finally:
                aside.unlink()
        original(self, path)

    start_migrated.__wrapped__ = original  # type: ignore[attr-defined]
    patch = pytest.MonkeyPatch()
    patch.setattr(store_module.Store, "__init__", start_migrated)
    yield
    patch.undo()


@pytest.fixture(scope="session", autouse=True)
def passwords_hashed_once() -> Iterator[None]:
    """Each test password is bcrypt-hashed once per session, not for every account made
    with it: a hash costs about 0.3 s of CPU by design (bcrypt's work factor), and the
    tests make hundreds of accounts from a dozen passwords. The hash is still bcrypt's own
    (logins check it as always); only its salt is shared by accounts with one password,
    in this process alone (a `koed` subprocess hashes as it always does)."""
    from functools import cache

    from koed_core.rating import accounts

    patch = pytest.MonkeyPatch()
    patch.setattr(accounts, "hash_password", cache(accounts.hash_password))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def clear_streamlit_caches() -> Iterator[None]:
    """cache_resource outlives an AppTest run; without this, state leaks between tests."""
    yield
    import sys

    if "streamlit" in sys.modules:
        import streamlit as st

        st.cache_data.clear()
        st.cache_resource.clear()


@pytest.fixture(scope="session")
def official_file() -> Path:
    """The official KoED file, for the extra checks on real data (never a copy inside the
    project): KOED_OFFICIAL_FILE, else ../shared/data/KoED.json, else the file that
    `koed data download` cached. Missing, these checks fail and say how to get it: they
    never vanish silently."""
    import os

    from koed_core.dialogues.sources import official_cache_path

    candidates = [
        Path(os.environ["KOED_OFFICIAL_FILE"]) if os.environ.get("KOED_OFFICIAL_FILE") else None,
        OFFICIAL_FILE,
        official_cache_path(Path.home() / ".cache" / "koed-studio"),
    ]
    for path in candidates:
        if path is not None and path.is_file():
            return path
    pytest.fail(
        "the official KoED file is needed for the checks on real data: run "
        "`koed data download` (or set KOED_OFFICIAL_FILE to a copy)",
        pytrace=False,
    )


@pytest.fixture
def generated_release(monkeypatch: pytest.MonkeyPatch) -> bytes:
    """The official-release constant pointed at bytes we wrote (the shipped sample), so the
    download and checksum paths run without ../shared; returns those bytes."""
    import hashlib

    from koed_core.dialogues import sources
    from koed_core.paths import SAMPLE_FILE

    data = SAMPLE_FILE.read_bytes()
    release = sources.OfficialRelease(
        "koed-studio/test-release",
        "0123456789ab" + "0" * 28,
        "data/KoED.json",
        hashlib.sha256(data).hexdigest(),
        len(data),
    )
    monkeypatch.setattr(sources, "OFFICIAL", release)
    return data


def wait_until(condition: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    """Wait for something another process or thread makes true (a row stored, a process
    gone), asking ``condition`` again and again through tenacity (every 20 ms at first,
    every 0.5 s at most); fail naming ``what`` did not happen in ``timeout`` seconds.
    The wait is on the condition: a busy machine only makes it take longer."""
    from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_exponential

    asking = Retrying(
        retry=retry_if_result(lambda seen: not seen),
        stop=stop_after_delay(timeout),
        wait=wait_exponential(multiplier=0.01, min=0.02, max=0.5),
    )
    try:
        asking(condition)
    except RetryError:
        pytest.fail(f"{what}: not within {timeout:g} s", pytrace=False)


def process_gone(pid: int) -> bool:
    """The process has ended (no longer listed, or a zombie waiting for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_for_job(store: object, job_id: int, timeout: float = 90.0) -> None:
    """Wait until a background job has ended; fail with its state if it does not."""
    from koed_core.db.jobs import Jobs

    jobs = Jobs(store)  # type: ignore[arg-type]
    wait_until(lambda: not jobs.get(job_id).active, f"job {job_id} ended", timeout)
    assert jobs.get(job_id).state == "finished", jobs.get(job_id).reason


def stop_workers(db: Path) -> None:
    """Stop the worker processes the app started for this database (they outlive tests,
    by design): every process whose command line is a worker of this file."""
    import os
    import signal

    wanted = ["-m", "koed_core.cli", "worker", "--db", str(db)]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if argv[1:6] == wanted:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGTERM)


def stored_responses(db: Path) -> int:
    """Responses in a database another process is writing (0 until its tables exist: the
    file is created first, owner-only, and the schema follows in one transaction)."""
    import sqlite3

    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("select count(*) from responses").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


@pytest.fixture(scope="session")
def site_accounts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The accounts file of :func:`site` (admin boss, rater mina), written once per session:
    each password is a bcrypt hash, about 0.3 s of CPU by design, and a test that adds an
    account changes its own copy only."""
    from koed_core.rating import accounts

    path = tmp_path_factory.mktemp("site_accounts") / "accounts.yaml"
    accounts.add_user(path, "boss", "admin", "Boss", "boss-password-1")
    accounts.add_user(path, "mina", "rater", "Mina", "mina-password-1")
    return path


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site_accounts: Path) -> Path:
    """Accounts (admin boss, rater mina) and a copy of the 0.1.0 database, upgraded on
    open, with its study still open: the app as an operator and two users meet it."""
    import shutil

    path = tmp_path / "accounts.yaml"
    shutil.copy(site_accounts, path)
    monkeypatch.setenv("KOED_USERS", str(path))
    monkeypatch.setenv("KOED_COOKIE_KEY", "k" * 40)
    db = tmp_path / "koed.db"
    shutil.copy(ROOT / "tests" / "data" / "koed-0.1.0.db", db)
    monkeypatch.setenv("KOED_DB", str(db))
    return db


class FileServer:
    """A stdlib HTTP server on localhost serving one folder: the far side of a download."""

    def __init__(self, folder: Path) -> None:
        handler = partial(_QuietHandler, directory=str(folder))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[tuple[FileServer, Path]]:
    """A running local server and the folder it serves."""
    folder = tmp_path / "served"
    folder.mkdir()
    server = FileServer(folder)
    server.thread.start()
    yield server, folder
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """The scripted OpenAI-compatible server, running for one test."""
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def fake_registry(tmp_path: Path, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A models.toml with one model on the fake server, used by the app through KOED_MODELS."""
    path = registry_file(tmp_path, fake_openai)
    monkeypatch.setenv("KOED_MODELS", str(path))
    return path


def registry_file(folder: Path, fake: FakeOpenAI) -> Path:
    """models.toml in ``folder``: one model on the fake server and the human reference."""
    path = folder / "models.toml"
    path.write_text(
        "[models.fake-listener]\n"
        'backend = "openai"\n'
        'model = "fake-model"\n'
        f'base_url = "{fake.base_url}"\n'
        'provenance = "korean-centric"\n'
        "[models.human]\n"
        'backend = "human"\n'
    )
    return path


@pytest.fixture(scope="session", autouse=True)
def model_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of converted GGUF models for the whole run, shared by both xdist workers
    and inherited by every server a test starts (KOED_MODEL_CACHE_DIR), so SmolLM2's half
    minute of GGUF reading is paid once per run, not by each process that loads it."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "models"
    folder.mkdir(exist_ok=True)
    os.environ["KOED_MODEL_CACHE_DIR"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def embedded_copy(model_cache_dir: Path) -> dict[str, bool]:
    """Convert the embedded SmolLM2 once per run, under a lock the other workers wait on,
    and compare the copy read back from disk with the GGUF it came from. Tests that use
    the embedded model ask for this first, so they (and their servers) load the copy; the
    comparison is kept beside it for whichever process did not convert."""
    from koed_core.models.backends.local import (
        CONVERTED_WEIGHTS,
        EMBEDDED_GGUF,
        _converted_folder,
        _from_pretrained,
        _save_converted,
        embedded_model_dir,
    )

    source = str(embedded_model_dir())
    folder = _converted_folder(source, EMBEDDED_GGUF)
    assert folder is not None
    verdict = folder.parent / f"{folder.name}.compared.json"
    with (model_cache_dir / ".converting.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not verdict.exists():
            import torch

            tokenizer, model = _from_pretrained(source, {"gguf_file": EMBEDDED_GGUF})
            _save_converted(tokenizer, model, folder)
            assert (folder / CONVERTED_WEIGHTS).is_file()
            copy_tokenizer, copy = _from_pretrained(str(folder), {})
            original, copied = model.state_dict(), copy.state_dict()
            text = "정이 들었어요. I miss my grandmother's kimchi."
            compared = {
                "same_tensor_names": original.keys() == copied.keys(),
                "same_weights": all(torch.equal(original[k], copied.get(k)) for k in original),
                "same_tokens": tokenizer(text)["input_ids"] == copy_tokenizer(text)["input_ids"],
                "same_chat_template": tokenizer.chat_template == copy_tokenizer.chat_template,
                "plain_config": "quantization_config" not in copy.config.to_dict(),
            }
            verdict.write_text(json.dumps(compared), encoding="utf-8")
    result: dict[str, bool] = json.loads(verdict.read_text(encoding="utf-8"))
    return result


@pytest.fixture(scope="session")
def sample_dataset() -> Any:
    """The shipped sample dialogues, read once per session (a frozen Dataset)."""
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE

    return load_dataset(SAMPLE_FILE)


def place_span(dataset: Any) -> tuple[Any, Any]:
    """The first sample dialogue and a span on its convenience store (turn 3)."""
    from koed_core.annotation.spans import Span, side_at

    dialogue = dataset.dialogues[0]
    start = dialogue.turns[2].ko.index("편의점")
    return dialogue, Span(side_at(dialogue, "ko", 3, start, start + 3), "places", None, True)
