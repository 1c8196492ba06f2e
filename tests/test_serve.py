"""`koed serve` and `koed db backup/restore` (issue 53): the app served as a crowd study needs
it, on Caddy and supervisord, and backups taken while the app writes."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from websockets.sync.client import connect as ws_connect

from fixtures.rating import SCORES, rater, seeded_store, study
from koed_core.cli import main
from koed_core.cli.serving import ServePlan, free_ports, supervisord_conf
from koed_core.db import Store
from koed_core.db.backup import BackupError, backup, check_file, restore, rotate, stamped_name
from koed_core.db.migrations import MIGRATIONS, TABLE
from tests.conftest import wait_until

ROOT = Path(__file__).resolve().parents[1]
OLD_DB = Path(__file__).parent / "data" / "koed-0.1.0.db"


# Backups -------------------------------------------------------------------------------------


def test_a_backup_is_owner_only_checked_and_never_overwrites(tmp_path: Path) -> None:
    store, _ = seeded_store(tmp_path / "koed.db", dialogues=2)
    out = tmp_path / "b.db"
    info = backup(Path(store.path), out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert info.migrations == len(MIGRATIONS)
    assert not list(tmp_path.glob("b.db*-*")) and not list(tmp_path.glob("*.part"))
    with pytest.raises(BackupError, match="already exists"):
        backup(Path(store.path), out)


def test_a_backup_under_load_holds_every_rating_acknowledged_before_it(tmp_path: Path) -> None:
    db = tmp_path / "koed.db"
    store, run_id = seeded_store(db, dialogues=6)
    ratings, study_id = study(store, run_id, overlap=3, attention_checks=0)
    names = [f"r{i}" for i in range(3)]
    for name in names:
        rater(ratings, name)
    acknowledged: list[tuple[float, str, str]] = []
    done = threading.Event()

    def rate(name: str) -> None:
        from koed_core.rating.studies import StudyRules

        mine = StudyRules(Store(db))  # a session of its own, as each app process has
        while not done.is_set():
            item = mine.next_item(study_id, name)
            if item is None:
                return
            mine.save_rating(item.assignment_id, name, SCORES)
            acknowledged.append((time.monotonic(), item.assignment_id, name))

    threads = [threading.Thread(target=rate, args=(n,)) for n in names]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(acknowledged) >= 5, "five ratings acknowledged", timeout=60)
    began = time.monotonic()
    before = {(a, n) for t, a, n in list(acknowledged) if t < began}
    info = backup(db, tmp_path / "under-load.db")
    done.set()
    for thread in threads:
        thread.join(30)
    with sqlite3.connect(info.path) as conn:
        kept = set(
            conn.execute(
                "select distinct a.id, r.username from ratings r join assignments a "
                "on a.item_id = r.item_id and a.username = r.username"
            ).fetchall()
        )
    assert before and before <= kept
    # restored into a fresh place, it opens and passes the migrations
    restored = tmp_path / "restored" / "koed.db"
    restore(info.path, restored)
    again = Store(restored)
    assert {row["name"] for row in again.rows(f"select name from [{TABLE}]")} == {
        name for name, _ in MIGRATIONS
    }


def test_restore_refuses_a_live_database_without_force(tmp_path: Path) -> None:
    store, _ = seeded_store(tmp_path / "koed.db", dialogues=1)
    copy = backup(Path(store.path), tmp_path / "copy.db").path
    with pytest.raises(BackupError, match="--force"):
        restore(copy, Path(store.path))
    assert restore(copy, Path(store.path), force=True).migrations == len(MIGRATIONS)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"not a database at all", "not an SQLite database"),
        (b"SQLite format 3\x00" + b"\x00" * 200, "not a usable SQLite database"),
    ],
)
def test_restore_checks_the_file_first(tmp_path: Path, content: bytes, said: str) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(content)
    target = tmp_path / "koed.db"
    with pytest.raises(BackupError, match=said):
        restore(bad, target)
    assert not target.exists()


def test_restore_refuses_a_database_of_a_newer_release(tmp_path: Path) -> None:
    store, _ = seeded_store(tmp_path / "koed.db", dialogues=1)
    copy = backup(Path(store.path), tmp_path / "copy.db").path
    with sqlite3.connect(copy) as conn:
        conn.execute(f"insert into [{TABLE}] (name) values ('m999_future')")
    with pytest.raises(BackupError, match="newer KoED Studio"):
        check_file(copy)


def test_an_old_release_backup_restores_and_upgrades(tmp_path: Path) -> None:
    target = tmp_path / "koed.db"
    assert main(["db", "restore", str(OLD_DB), "--db", str(target)]) == 0
    names = [r["name"] for r in Store(target).rows(f"select name from [{TABLE}] order by rowid")]
    assert names == [name for name, _ in MIGRATIONS]


def _timed(folder: Path, when: datetime, content: bytes = b"SQLite format 3\x00") -> Path:
    """A file as the backup loop leaves it: the time in its name, and as its own time."""
    path = folder / stamped_name(when)
    path.write_bytes(content)
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def test_rotation_keeps_the_newest_and_their_keys(tmp_path: Path) -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    for minutes in range(5):
        made = _timed(tmp_path, start + timedelta(minutes=minutes))
        made.with_name(made.name + ".key").write_text("k")
    gone = rotate(tmp_path, keep=2, now=start + timedelta(minutes=5))
    assert len(gone) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "koed-20261201-000300.db",
        "koed-20261201-000300.db.key",
        "koed-20261201-000400.db",
        "koed-20261201-000400.db.key",
    ]


def test_rotation_never_counts_or_touches_files_it_did_not_write(tmp_path: Path) -> None:
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    future = [_timed(tmp_path, datetime(2099, 1, 1, h, tzinfo=UTC)) for h in (1, 2)]  # junk
    for path in future:  # their own time agrees, but lies in the future
        os.utime(path, (now.timestamp(), now.timestamp()))
    renamed = _timed(tmp_path, now - timedelta(days=30))
    os.utime(renamed, (now.timestamp(), now.timestamp()))  # name and file time disagree
    not_sqlite = _timed(tmp_path, now - timedelta(minutes=9), b"notes")
    real = [_timed(tmp_path, now - timedelta(minutes=m)) for m in (3, 2, 1)]
    gone = rotate(tmp_path, keep=2, now=now)
    assert gone == [real[0]]
    assert all(p.exists() for p in [*future, renamed, not_sqlite, *real[1:]])


def test_every_refuses_nan_and_inf_before_a_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = seeded_store(tmp_path / "koed.db", dialogues=1)
    for every in ("nan", "inf", "0"):
        argv = ["db", "backup", "--db", store.path, "--every", every, "--dir", str(tmp_path / "b")]
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert "--every" in err and "Traceback" not in err and err.count("\n") == 1, err
    assert not (tmp_path / "b").exists()


# What a restore lets in -----------------------------------------------------------------------


def test_restore_drops_a_trigger_no_migration_made_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, _ = seeded_store(tmp_path / "koed.db", dialogues=1)
    copy = backup(Path(store.path), tmp_path / "copy.db").path
    with sqlite3.connect(copy) as conn:
        conn.execute("create trigger wipe after insert on ratings begin delete from ratings; end")
        conn.execute("create view everyone as select * from ratings")
    target = tmp_path / "restored.db"
    assert main(["db", "restore", str(copy), "--db", str(target)]) == 0
    out = capsys.readouterr().out
    assert "trigger wipe" in out and "view everyone" in out and "dropped" in out
    with sqlite3.connect(target) as conn:
        names = {r[0] for r in conn.execute("select name from sqlite_master")}
    assert not {"wipe", "everyone"} & names


def test_a_ratings_view_is_refused_at_once(tmp_path: Path) -> None:
    store, _ = seeded_store(tmp_path / "koed.db", dialogues=1)
    copy = backup(Path(store.path), tmp_path / "copy.db").path
    with sqlite3.connect(copy) as conn:
        conn.execute("drop table ratings")
        conn.execute(
            "create view ratings as with recursive n(i) as (select 1 union all "
            "select i + 1 from n) select i from n"
        )
    with pytest.raises(BackupError, match="ratings is a view where the migrations make a table"):
        restore(copy, tmp_path / "restored.db")
    assert not (tmp_path / "restored.db").exists()


def test_every_check_is_bounded_in_time(tmp_path: Path) -> None:
    from koed_core.db.schema_check import SchemaError, deadline

    conn = sqlite3.connect(":memory:")
    endless = (
        "with recursive n(i) as (select 1 union all select i + 1 from n) select count(*) from n"
    )
    with pytest.raises(SchemaError, match="took longer than"), deadline(conn, 0.2):
        conn.execute(endless).fetchone()


def test_the_server_key_travels_with_the_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from koed_core.rating.server_key import key_file, server_key

    monkeypatch.delenv("KOED_SECRET_KEY", raising=False)
    monkeypatch.setattr("koed_core.config.read_secrets", lambda: {})
    store, _ = seeded_store(tmp_path / "koed.db", dialogues=1)
    key = server_key(None, Path(store.path))
    out = tmp_path / "b.db"
    assert main(["db", "backup", "--db", store.path, str(out)]) == 0
    carried = out.with_name("b.db.key")
    assert stat.S_IMODE(carried.stat().st_mode) == 0o600 and carried.read_bytes() == key
    moved = tmp_path / "new-machine" / "koed.db"
    assert main(["db", "restore", str(out), "--db", str(moved)]) == 0
    assert server_key(None, moved) == key and "is in place" in capsys.readouterr().out
    # without the key beside it, the restore says what breaks
    carried.unlink()
    elsewhere = tmp_path / "third" / "koed.db"
    assert main(["db", "restore", str(out), "--db", str(elsewhere)]) == 0
    said = capsys.readouterr().out
    assert "invite links" in said and str(key_file(elsewhere)) in said


def test_the_cli_says_one_sentence_for_a_bad_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "backup", "--db", str(tmp_path / "none.db"), str(tmp_path / "o.db")]) == 1
    err = capsys.readouterr().err
    assert "no database to back up" in err and "Traceback" not in err


# The configuration ---------------------------------------------------------------------------


def _plan(tmp_path: Path, **kwargs: object) -> ServePlan:
    options: dict[str, object] = {
        "db": tmp_path / "koed.db",
        "run_dir": tmp_path / "run",
        "app_ports": (9001, 9002),
        "port": 8080,
    }
    options.update(kwargs)
    return ServePlan(**options)  # type: ignore[arg-type]


def test_supervisord_runs_the_apps_the_worker_caddy_and_backups(tmp_path: Path) -> None:
    text = supervisord_conf(
        _plan(tmp_path, backup_dir=tmp_path / "b", backup_every_min=5.0), password="pw"
    )
    programs = re.findall(r"^\[program:(.+)\]$", text, re.M)
    assert programs == ["app-0", "app-1", "worker", "caddy", "backup"]
    assert text.count("autorestart=true") == 5
    assert "--server.port=9001" in text and "--server.address=127.0.0.1" in text
    # each app process imports its pages and reads the dataset before its first browser
    assert text.count("-m components.core.warm_start run ") == 2


# The whole thing, running --------------------------------------------------------------------


def _status(run_dir: Path) -> dict[str, tuple[str, int | None]]:
    out = subprocess.run(
        [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(run_dir / "supervisord.conf"),
         "status"],
        capture_output=True, text=True,
    ).stdout  # fmt: skip
    found: dict[str, tuple[str, int | None]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            pid = re.search(r"pid (\d+)", line)
            found[parts[0]] = (parts[1], int(pid.group(1)) if pid else None)
    return found


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, Path, list[str]]]:
    port = free_ports(1)[0]
    db = tmp_path / "koed.db"
    run_dir = tmp_path / "run"
    env = {**os.environ, "KOED_SECRET_KEY": "k" * 40}
    serve = subprocess.Popen(
        [sys.executable, "-m", "koed_core.cli", "serve", "--processes", "2", "--port", str(port),
         "--db", str(db), "--run-dir", str(run_dir), "--backup-every", "0.02", "--keep", "2"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []

    def read() -> None:
        assert serve.stdout is not None
        for line in serve.stdout:
            lines.append(line)

    threading.Thread(target=read, daemon=True).start()
    wait_until(
        lambda: serve.poll() is not None or any(line.startswith("ready:") for line in lines),
        "koed serve saying it is ready",
        timeout=120,
    )
    assert serve.poll() is None, "".join(lines)
    try:
        yield serve, port, run_dir, lines
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGTERM)
            serve.wait(60)


def _get(url: str, jar: CookieJar | None = None) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar or CookieJar()))
    with opener.open(url, timeout=10) as reply:
        return reply.status, reply.read().decode()


@pytest.mark.slow
def test_serve_runs_everything_restarts_a_dead_process_refuses_a_second_and_stops_on_sighup(
    served: tuple[subprocess.Popen[str], int, Path, list[str]],
) -> None:
    serve, port, run_dir, lines = served
    status = _status(run_dir)
    assert {name for name, (state, _) in status.items() if state == "RUNNING"} == {
        "app-0", "app-1", "worker", "caddy", "backup",
    }, status  # fmt: skip
    # two browsers with no cookie are spread over the two processes, each kept on one
    routes: set[str] = set()

    def both_routes() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10) as r:
            assert r.status == 200
            routes.update(c for c in r.headers.get_all("Set-Cookie") or [] if "koed_route=" in c)
        return len(routes) == 2

    # Caddy's own health check may see the second process a second later
    wait_until(both_routes, "new browsers spread over both processes", timeout=30)
    # the database was migrated once, before the apps, and is shared in WAL mode
    with sqlite3.connect(run_dir.parent / "koed.db") as conn:
        assert conn.execute("pragma journal_mode").fetchone()[0] == "wal"
    # a process killed: the proxy keeps answering, supervisord starts it again
    killed = status["app-0"][1]
    assert killed
    os.kill(killed, signal.SIGKILL)
    answered = 0

    def started_again() -> bool:
        nonlocal answered
        answered += _get(f"http://127.0.0.1:{port}/_stcore/health")[0] == 200
        state, pid = _status(run_dir).get("app-0", ("", None))
        return state == "RUNNING" and pid != killed

    wait_until(started_again, "supervisord starting the killed app process again")
    assert answered  # the proxy answered all along
    # backups are taken while it runs, the newest kept
    wait_until(
        lambda: len(list((run_dir.parent / "backups").glob("koed-*.db"))) >= 2,
        "two timed backups",
        timeout=30,
    )
    # a second start, on the same database or the same port, is refused; the first runs on
    config = (run_dir / "caddy.json").read_text()
    other = free_ports(1)[0]
    for db, port_asked in ((run_dir.parent / "koed.db", other), (run_dir.parent / "b.db", port)):
        second = subprocess.run(
            [sys.executable, "-m", "koed_core.cli", "serve", "--processes", "1",
             "--port", str(port_asked), "--db", str(db), "--backup-every", "0"],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 1 and "Traceback" not in second.stderr, second.stderr
        assert f"pid {serve.pid}" in second.stderr or f"port {port}" in second.stderr
    assert (run_dir / "caddy.json").read_text() == config
    assert _get(f"http://127.0.0.1:{port}/_stcore/health")[0] == 200
    # supervisord has nothing to complain about in a configuration we chose
    assert " CRIT " not in (run_dir / "logs" / "supervisord.log").read_text()
    # a closed SSH session (SIGHUP) with a page open stops everything it started
    pids = [pid for _, pid in _status(run_dir).values() if pid]
    with ws_connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"]):
        serve.send_signal(signal.SIGHUP)
        assert serve.wait(60) == 0
    assert any("stopped: every process" in line for line in lines)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_serve_without_caddy_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no caddy anywhere
    assert main(["serve", "--db", str(tmp_path / "koed.db")]) == 1
    err = capsys.readouterr().err
    assert "apt-get install caddy" in err and "Traceback" not in err
