"""`koed serve`'s edges (issue 62): flags checked before a file is written, configuration
that values cannot restructure, one stack per run folder, database and port, Caddy's and
supervisord's complaints as sentences, private folders that never change someone else's.
Fast: nothing here starts the stack (tests/test_serve.py does, marked slow)."""

from __future__ import annotations

import json
import os
import shlex
import socket
import stat
import subprocess
from pathlib import Path

import pytest
from supervisor.options import ClientOptions, ServerOptions

from fixtures.rating import seeded_store
from koed_core.cli import main, serving
from koed_core.cli.serve_ini import ConfigValueError
from koed_core.cli.serve_lock import Holder, StackBusy, check_port, take
from koed_core.cli.serve_watch import LogTail, caddy_said, has_certificate, supervisord_said
from koed_core.cli.serving import ServePlan, caddy_json, supervisord_conf
from koed_core.private_files import FolderError, private_dir


@pytest.fixture
def no_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that fails must stop koed serve before it starts anything."""

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("koed serve started supervisord")

    monkeypatch.setattr(subprocess, "Popen", refuse)


# Flags --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--email", "a@b.c\n\tadmin 0.0.0.0:2019", "--domain", "study.example.org"], "--email"),
        (["--email", "a@b.c, d@e.f", "--domain", "study.example.org"], "--email"),
        (["--domain", "a.example.org b.example.org"], "--domain"),
        (["--domain", "study.example.org {\n}\nevil.example.org"], "--domain"),
        (["--domain", "x.org}{"], "--domain"),
        (["--domain", "https://study.example.org"], "--domain"),
        (["--domain", "10.0.0.1"], "--domain"),
        (["--host", "0.0.0.0\n\tadmin"], "--host"),
        (["--host", "example.org"], "--host"),
        (["--db", "koed\n[program:evil]\ncommand=/bin/sh.db"], "--db"),
        (["--backup-dir", "b\x00"], "--backup-dir"),
        (["--backup-every", "nan"], "--backup-every"),
        (["--backup-every", "inf"], "--backup-every"),
        (["--backup-every", "-1"], "--backup-every"),
        (["--email", "a@example.org"], "--email is for --domain"),
    ],
)
def test_a_bad_flag_is_refused_in_one_sentence_before_anything_is_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_start: None,
    flags: list[str],
    named: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    base = ["serve", "--db", str(work / "koed.db"), "--run-dir", str(work / "run")]
    assert main([*base, *flags]) == 1
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err and err.count("\n") == 1, err
    assert list(work.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def _plan(tmp_path: Path, **kwargs: object) -> ServePlan:
    options: dict[str, object] = {
        "db": tmp_path / "koed.db",
        "run_dir": tmp_path / "run",
        "app_ports": (9001, 9002),
        "port": 8080,
    }
    options.update(kwargs)
    return ServePlan(**options)  # type: ignore[arg-type]


HOSTILE = "a@b.c\n\tadmin 0.0.0.0:2019\n}\nevil.example.org {\n\trespond hi\n"


def test_caddys_json_holds_a_hostile_value_as_data_and_caddy_validates_it(
    tmp_path: Path,
) -> None:
    """Even with the checks bypassed, a value is one JSON string: no admin endpoint, no
    second site, whatever it holds."""
    for plan in (
        _plan(tmp_path, domain="study.example.org", email=HOSTILE),
        _plan(tmp_path, domain=HOSTILE, port=443),
        _plan(tmp_path, run_dir=tmp_path / HOSTILE),
    ):
        path = tmp_path / "caddy.json"
        path.write_text(caddy_json(plan))
        config = json.loads(path.read_text())
        assert config["admin"] == {"disabled": True, "config": {"persist": False}}
        servers = config["apps"]["http"]["servers"]
        assert list(servers) == ["koed"] and len(servers["koed"]["routes"]) == 1
        checked = subprocess.run(
            ["caddy", "validate", "--config", str(path)], capture_output=True, text=True
        )
        # Caddy may refuse the odd name (that is fine); it never reads it as structure
        assert "admin" not in checked.stderr.replace("admin endpoint disabled", "")


def test_caddy_balances_by_cookie_checks_health_and_keeps_to_its_address(
    tmp_path: Path,
) -> None:
    for plan in (_plan(tmp_path), _plan(tmp_path, domain="study.example.org", email="a@b.org")):
        path = tmp_path / "caddy.json"
        path.write_text(caddy_json(plan))
        checked = subprocess.run(
            ["caddy", "validate", "--config", str(path)], capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stderr
    server = json.loads(caddy_json(_plan(tmp_path)))["apps"]["http"]["servers"]["koed"]
    assert server["listen"] == ["127.0.0.1:8080"] and server["automatic_https"]["disable"]
    proxy = server["routes"][0]["handle"][1]
    assert proxy["load_balancing"]["selection_policy"] == {"policy": "cookie", "name": "koed_route"}
    assert proxy["health_checks"]["active"]["uri"] == "/_stcore/health"
    assert [u["dial"] for u in proxy["upstreams"]] == ["127.0.0.1:9001", "127.0.0.1:9002"]
    https = json.loads(caddy_json(_plan(tmp_path, domain="s.example.org", email="a@b.org")))
    policy = https["apps"]["tls"]["automation"]["policies"][0]
    assert policy["subjects"] == ["s.example.org"]
    assert {i["email"] for i in policy["issuers"]} == {"a@b.org"}


HOSTILE_DIRS = [
    "run\n[program:evil]\ncommand=/bin/sh",
    "run ;x",
    "run #x",
    "run%(ENV_HOME)s %%",
    "run\t",
    " lead ; and\n;semi\n #hash\n  spaced",
    "a b 'q' \"x\" 한 \\z",
]


@pytest.mark.parametrize("odd", HOSTILE_DIRS)
def test_supervisord_reads_back_every_path_as_written(tmp_path: Path, odd: str) -> None:
    """A run folder and a backup folder with spaces, ';', '#', '%', newlines, quotes, a
    backslash and Korean: supervisord's own parser reads back every path and argument."""
    where = tmp_path / odd
    plan = _plan(tmp_path, run_dir=where / "run", backup_dir=where / "b", backup_every_min=5.0)
    (where / "run" / "logs").mkdir(parents=True)
    conf = where / "run" / "supervisord.conf"
    conf.write_text(supervisord_conf(plan, "pw"))
    options = ServerOptions()
    options.realize(args=["-c", str(conf)])
    programs = {
        pc.name: pc for group in options.process_group_configs for pc in group.process_configs
    }
    assert sorted(programs) == ["app-0", "app-1", "backup", "caddy", "worker"]
    backup = shlex.split(programs["backup"].command)
    assert backup[backup.index("--dir") + 1] == str(where / "b")
    caddy = ["caddy", "run", "--config", str(where / "run" / "caddy.json")]
    assert shlex.split(programs["caddy"].command) == caddy
    assert programs["app-0"].stdout_logfile == str(where / "run" / "logs" / "app-0.log")
    assert options.logfile == str(where / "run" / "logs" / "supervisord.log")
    assert options.pidfile == str(where / "run" / "supervisord.pid")
    assert options.childlogdir == str(where / "run" / "logs")
    assert options.server_configs[0]["file"] == str(where / "run" / "supervisor.sock")
    assert all(pc.stopwaitsecs <= 5 for pc in programs.values())
    assert programs["caddy"].priority > programs["app-0"].priority  # stopped first
    client = ClientOptions()
    client.realize(args=["-c", str(conf)])
    assert client.serverurl == f"unix://{where / 'run' / 'supervisor.sock'}"


@pytest.mark.parametrize("bad", ["checkout ;x", "checkout ", "checkout\n#x", "checkout\r"])
def test_supervisords_writer_refuses_what_its_format_cannot_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    """The checkout folder (each program's directory) is the one literal path in the file:
    what no quoting keeps in it is refused in one sentence."""
    monkeypatch.setattr(serving, "PROJECT_ROOT", tmp_path / bad)
    with pytest.raises(ConfigValueError, match="cannot hold"):
        supervisord_conf(_plan(tmp_path), "pw")


def test_supervisord_is_told_what_it_would_log_as_crit(tmp_path: Path) -> None:
    text = supervisord_conf(_plan(tmp_path), "pw")
    assert "password=pw" in text.split("[supervisorctl]")[0]  # the socket is guarded
    assert ("user=root" in text) == (os.geteuid() == 0)
    assert "KOED_COOKIE_KEY" not in text and "SECRET" not in text  # secrets: environment only


# One stack at a time ----------------------------------------------------------------------


def test_a_second_lock_is_refused_naming_the_first_stack(tmp_path: Path) -> None:
    first = Holder(1234, "http://127.0.0.1:8080", "/data/koed.db", "/data/koed.db.serve")
    fds = take([tmp_path / "serve.lock"], first)
    try:
        with pytest.raises(StackBusy) as refused:
            take([tmp_path / "other.lock", tmp_path / "serve.lock"], first)
        said = str(refused.value)
        assert "pid 1234" in said and "/data/koed.db" in said and ":8080" in said
        # the refused start let go of the lock it did take
        again = take([tmp_path / "other.lock"], first)
        for fd in again:
            os.close(fd)
    finally:
        for fd in fds:
            os.close(fd)
    for fd in take([tmp_path / "serve.lock"], first):  # free once the first has ended
        os.close(fd)


def test_a_lock_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "serve.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StackBusy, match="symbolic link"):
        take([tmp_path / "serve.lock"], Holder(1, "u", "d", "r"))
    assert not (tmp_path / "elsewhere").exists()


def test_a_port_someone_listens_on_is_refused() -> None:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # as Caddy binds
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(StackBusy, match=f"port {port} on 127.0.0.1 is taken"):
            check_port("127.0.0.1", port)
    check_port("127.0.0.1", port)


# What Caddy and supervisord say -------------------------------------------------------------

# lines from Caddy 2.6.2's log (Debian's caddy), taken on this machine
BIND = (
    "Error: loading initial config: loading new config: http app module: start: listening on "
    "127.0.0.1:18091: listen tcp 127.0.0.1:18091: bind: address already in use"
)
NO_CERT = json.dumps(
    {
        "level": "error",
        "logger": "tls.obtain",
        "msg": "could not get certificate from issuer",
        "identifier": "study.example.org",
        "issuer": "acme-v02.api.letsencrypt.org-directory",
        "error": "registering account [mailto:a@example.org] with server: provisioning client: "
        'performing request: Get "https://acme-v02.api.letsencrypt.org/directory": dial tcp: '
        "lookup acme-v02.api.letsencrypt.org on 10.255.255.53:53: no such host",
    }
)
HEALTH = json.dumps(
    {
        "level": "info",
        "logger": "http.handlers.reverse_proxy.health_checker.active",
        "msg": "HTTP request failed",
        "host": "127.0.0.1:9001",
    }
)


def test_caddys_log_becomes_sentences(tmp_path: Path) -> None:
    plan = _plan(tmp_path, domain="study.example.org", port=443)
    bind = caddy_said(BIND, plan)
    assert bind is not None and bind.fatal
    assert "port 18091" in bind.text and "another program" in bind.text
    cert = caddy_said(NO_CERT, plan)
    assert cert is not None and not cert.fatal
    assert "no certificate for study.example.org" in cert.text and "no such host" in cert.text
    assert caddy_said(HEALTH, plan) is None and caddy_said("not json", plan) is None
    gave_up = supervisord_said("2026-12-06 INFO gave up: caddy entered FATAL state, too many")
    assert gave_up is not None and gave_up.fatal and "logs/caddy.log" in gave_up.text


def test_a_log_is_read_from_where_this_start_began(tmp_path: Path) -> None:
    log = tmp_path / "caddy.log"
    log.write_text(BIND + "\n")  # an earlier run's line
    tail = LogTail.from_end(log)
    assert tail.new_lines() == []
    with log.open("a") as out:
        out.write(NO_CERT + "\n" + HEALTH[:10])
    assert tail.new_lines() == [NO_CERT]
    with log.open("a") as out:
        out.write(HEALTH[10:] + "\n")
    assert tail.new_lines() == [HEALTH]


def test_a_domain_is_ready_only_with_its_certificate(tmp_path: Path) -> None:
    plan = _plan(tmp_path, domain="study.example.org", port=443)
    assert not has_certificate(plan)
    where = tmp_path / "run/caddy/certificates/acme-v02.api.letsencrypt.org-directory"
    (where / "study.example.org").mkdir(parents=True)
    (where / "study.example.org" / "study.example.org.crt").write_text("-----BEGIN")
    assert has_certificate(plan) and has_certificate(_plan(tmp_path))


# Private folders --------------------------------------------------------------------------


def test_a_private_folder_is_made_0700(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "a" / "backups")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert private_dir(made) == made  # ours already: used as it is


def test_a_symlinked_folder_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "shared"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(FolderError, match="symbolic link"):
        private_dir(tmp_path / "link")
    assert stat.S_IMODE(target.stat().st_mode) == 0o755


def test_a_shared_folder_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    with pytest.raises(FolderError, match="open to others") as refused:
        private_dir(shared)
    assert str(shared / "koed") in str(refused.value)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE(private_dir(shared / "koed").stat().st_mode) == 0o700


def test_a_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root can give a folder away; anyone else meets root's /
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 4242, 4242)
    else:
        theirs = Path("/")
    owner = theirs.stat().st_uid
    with pytest.raises(FolderError, match="another user"):
        private_dir(theirs)
    assert theirs.stat().st_uid == owner


def test_the_cli_says_one_sentence_for_a_shared_backup_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def taken(*_args: object) -> None:
        raise AssertionError("a backup was taken into the shared folder")

    monkeypatch.setattr("koed_core.db.backup.backup", taken)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    store, _ = seeded_store(tmp_path / "koed.db", dialogues=1)
    db = Path(store.path)
    assert main(["db", "backup", "--db", str(db), "--every", "1", "--dir", str(shared)]) == 1
    err = capsys.readouterr().err
    assert "open to others (mode 0777)" in err and "Traceback" not in err
    assert stat.S_IMODE(shared.stat().st_mode) == 0o777


# Under systemd --------------------------------------------------------------------------------


def test_print_unit_reads_a_cookie_key_made_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_start: None
) -> None:
    db = tmp_path / "a $HOME" / "koed.db"
    argv = ["serve", "--print-unit", "--db", str(db), "--processes", "2", "--port", "8090"]
    assert main(argv) == 0
    made = capsys.readouterr()
    env = db.with_name("koed.db.env")
    assert stat.S_IMODE(env.stat().st_mode) == 0o600 and "KOED_COOKIE_KEY=" in env.read_text()
    assert f"EnvironmentFile={env}\n" in made.out and "made" in made.err
    exec_start = next(line for line in made.out.splitlines() if line.startswith("ExecStart="))
    assert '"--processes" "2"' in exec_start and '"--port" "8090"' in exec_start
    assert "a $$HOME" in exec_start  # systemd would expand $HOME
    first = env.read_text()
    assert main(argv) == 0
    assert env.read_text() == first and "made" not in capsys.readouterr().err  # kept
    assert not db.exists() and not db.with_name("koed.db.serve").exists()
