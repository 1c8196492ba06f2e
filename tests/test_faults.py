"""Bad luck and bad input meeting the server: its key, settings, file modes, a full disk,
the worker's arguments. Each case is replayed as it happens (real processes, a real
full file system), not simulated."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from koed_core.config import Settings, SettingsError
from koed_core.db import Store
from koed_core.db.jobs import Jobs
from koed_core.jobs.kinds import Environment, enqueue
from koed_core.jobs.worker import Worker
from koed_core.models.passes import PassHooks
from koed_core.models.request import RunRequest
from koed_core.paths import SAMPLE_FILE
from koed_core.rating.server_key import ServerKeyError, key_file, server_key
from tests.conftest import wait_for_job, wait_until

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB file system of our own (tmpfs, as root), so "disk full" is the real thing."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path) -> Path:
    """Write until the file system says ENOSPC; returns the file to delete to make room."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"x" * 65536)
    except OSError:
        pass
    try:
        while True:
            os.write(fd, b"x")
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


# The server key ------------------------------------------------------------------------------

RACE = (
    "import sys, time; from pathlib import Path\n"
    "from koed_core.rating.server_key import server_key\n"
    "start = float(sys.argv[2])\n"
    "while time.time() < start: pass\n"
    "print(server_key(None, Path(sys.argv[1])).decode())\n"
)


@pytest.mark.slow
def test_processes_starting_together_all_get_the_same_whole_key(tmp_path: Path) -> None:
    for round_ in range(3):
        db = tmp_path / f"r{round_}" / "koed.db"
        start = time.time() + 1.0
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", RACE, str(db), str(start)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        outs = [p.communicate(timeout=60) for p in procs]
        assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
        keys = {out.strip() for out, _ in outs}
        assert len(keys) == 1 and len(keys.pop()) == 64
        assert stat.S_IMODE(key_file(db).stat().st_mode) == 0o600
        assert [f.name for f in db.parent.iterdir()] == ["koed.db.key"]  # no temp file left


@pytest.mark.parametrize(("content", "word"), [("", "empty"), ("abc123", "too short")])
def test_an_empty_or_short_key_file_is_refused(tmp_path: Path, content: str, word: str) -> None:
    db = tmp_path / "koed.db"
    key_file(db).write_text(content)
    with pytest.raises(ServerKeyError, match=word) as caught:
        server_key(None, db)
    assert "cannot be verified" in str(caught.value)  # what a lost key costs, said plainly
    assert "delete the file" in str(caught.value)


def test_a_short_configured_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ServerKeyError, match="at least 32"):
        server_key("short", tmp_path / "koed.db")
    assert server_key("s" * 32, tmp_path / "koed.db") == b"s" * 32


def test_a_full_disk_leaves_no_empty_key_behind(small_disk: Path) -> None:
    db = small_disk / "koed.db"
    filler = _fill(small_disk)
    with pytest.raises(ServerKeyError, match="could not create the server key"):
        server_key(None, db)
    assert not key_file(db).exists()  # nothing half-written for the next process to use
    filler.unlink()
    assert len(server_key(None, db)) == 64


# Settings ------------------------------------------------------------------------------------


def test_bad_numeric_settings_are_one_message_naming_each(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_sources({"KOED_CALLS_PER_HOUR": "abc", "KOED_BATCH_POLL_S": "-1"})
    message = str(caught.value)
    assert "KOED_CALLS_PER_HOUR must be a whole number from 0 to" in message
    assert "KOED_BATCH_POLL_S must be a number of seconds from" in message
    for bad in ("nan", "inf", "0"):
        with pytest.raises(SettingsError, match="KOED_BATCH_POLL_S"):
            Settings.from_sources({"KOED_BATCH_POLL_S": bad})


@pytest.mark.parametrize("setting", ["KOED_CALLS_PER_HOUR=abc", "KOED_BATCH_POLL_S=-1"])
def test_a_bad_setting_is_a_message_on_every_page_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    name, value = setting.split("=")
    monkeypatch.setenv(name, value)
    for query in ({}, {"invite": "x.y"}):  # a visitor's page, and a crowd worker's link
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        for key, val in query.items():
            at.query_params[key] = val
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert name.replace("_", "\\_") in at.error[0].value and "from" in at.error[0].value
        assert str(ROOT) not in at.error[0].value


# The database file ---------------------------------------------------------------------------


def test_an_old_world_readable_database_is_made_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    Store(db).db.conn.close()
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if path.exists():
            path.chmod(0o644)
    store = Store(db)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert any("644 -> 600" in line for line in store.tightened)
    assert Store(db).tightened == []  # said once


def test_database_errors_do_not_name_the_folder(tmp_path: Path) -> None:
    bad = tmp_path / "secret-folder" / "koed.db"
    bad.parent.mkdir()
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(Exception) as caught:
        Store(bad)
    assert "koed.db" in str(caught.value) and "secret-folder" not in str(caught.value)


# A full disk during a worker's job -----------------------------------------------------------


@pytest.mark.slow
def test_a_job_that_fills_the_disk_ends_failed_with_the_reason(small_disk: Path) -> None:
    server = FakeOpenAI().start()
    try:
        db = small_disk / "koed.db"
        store = Store(db)
        settings = Settings(db_path=db, cache_dir=small_disk)
        env = Environment(settings, env={"OPENAI_BASE_URL": server.base_url}, secrets={})
        job_id = enqueue(store, RunRequest(model="openai:fake", data=str(SAMPLE_FILE)), "tester")
        worker = Worker(
            store, env, idle_exit_s=0.5, tick_s=0.05, record_for_s=60, record_retry_s=0.1
        )
        thread = threading.Thread(target=worker.serve, daemon=True)
        thread.start()
        wait_until(lambda: store.count("responses") >= 5, "five answers stored")
        filler = _fill(small_disk)  # the disk fills while the job writes its answers
        time.sleep(1.5)  # time is the subject: 1.5 s into a full disk, the job still runs
        assert Jobs(store).get(job_id).state == "running"  # its end could not be written yet
        filler.unlink()  # room again
        thread.join(60)
        assert not thread.is_alive()
        job = Jobs(store).get(job_id)
        assert job.state == "failed" and "the disk is full" in (job.reason or "")
    finally:
        server.stop()


# The worker's arguments ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "-1", "inf", "0"])
def test_idle_exit_must_be_a_real_number_of_seconds(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from koed_core.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["worker", "--idle-exit", value])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--idle-exit" in err and "Traceback" not in err


@pytest.mark.slow
def test_the_app_starts_a_worker_for_a_database_whose_name_starts_with_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from koed_core.jobs.worker import ensure_worker

    monkeypatch.chdir(tmp_path)
    store = Store("-koed.db")
    job_id = enqueue(store, RunRequest(model="human", data=str(SAMPLE_FILE), limit=1), "tester")
    assert ensure_worker(store, cwd=tmp_path)
    wait_for_job(store, job_id)
    log = (tmp_path / "-koed.db.worker.log").read_text()
    assert "error" not in log.lower()


# A database lock held past the busy timeout (finding 31.8) --------------------------------


class _HeldLock:
    """Another process's long write: a second connection holding the write lock."""

    def __init__(self, path: str) -> None:
        import sqlite3

        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.close()


def test_a_write_past_the_busy_timeout_is_one_sentence(tmp_path: Path) -> None:
    import sqlite3

    from koed_core.db.store import StoreUnavailable
    from koed_core.errors import KoedError

    store = Store(tmp_path / "koed.db")
    store.db.execute("PRAGMA busy_timeout = 100")
    held = _HeldLock(store.path)
    try:
        with pytest.raises(StoreUnavailable) as caught, store.write():
            store.db.execute("insert into job_workers (id, heartbeat) values ('w', 0)")
    finally:
        held.release()
    err = caught.value
    assert isinstance(err, KoedError) and isinstance(err, sqlite3.OperationalError)
    assert err.kind == "busy" and str(err).startswith("koed.db: the database is busy")
    assert str(tmp_path) not in str(err)  # the file's name, never its folder
    with store.write():  # released: the same write goes through
        store.db.execute("insert into job_workers (id, heartbeat) values ('w', 0)")
    assert store.count("job_workers") == 1


def test_a_run_waits_out_a_long_lock_and_stores_every_answer(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """The CLI stopped a run at 36/120 with an OperationalError when another process held
    the database for over 30 s. The answers already paid for now wait for the database
    (up to SAVE_PATIENCE_S) and the run goes on."""
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.models.backends import make_client
    from koed_core.models.registry import ModelSpec
    from koed_core.models.runs import run_benchmark

    store = Store(tmp_path / "koed.db")
    store.db.execute("PRAGMA busy_timeout = 100")  # so the lock outlasts it at once
    dataset = load_dataset(SAMPLE_FILE)
    spec = ModelSpec(name="fake", backend="openai", model="m", base_url=fake_openai.base_url)
    held: list[_HeldLock] = []

    def progress(done: int, total: int) -> None:
        if done == 2 and not held:  # mid-run: another process takes the lock for 2.5 s
            held.append(_HeldLock(store.path))
            threading.Timer(2.5, held[0].release).start()

    report = run_benchmark(
        store,
        make_client(spec, "k"),
        spec,
        dataset.dialogues,
        dataset.sha256,
        RunRequest(
            spec.name, langs=("ko",), protocol="single", max_retries=0, limit=6, concurrency=1
        ),
        hooks=PassHooks(progress=progress),
    )
    assert held, "the lock was never taken"
    assert (report.succeeded, report.failed) == (6, 0), report.errors
    assert store.count("responses") == 6
