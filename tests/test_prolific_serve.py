"""Issue 68, item 4 under `koed serve --domain`: Prolific's POSTs go to the receiver behind
the same Caddy (never to Streamlit), the receiver runs under the same supervisor, and
`--tls internal` takes the certificate from Caddy's own local CA. Fast: nothing is started
(tests/test_serve.py starts the stack)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fixtures.fake_prolific import FakeProlific
from koed_core.cli import main
from koed_core.cli.serving import ServePlan, caddy_json, supervisord_conf
from koed_core.paths import PROJECT_ROOT as ROOT
from koed_core.rating.crowd.prolific_hooks import HOOK_PATH


def _plan(tmp_path: Path, **kwargs: object) -> ServePlan:
    options: dict[str, object] = {
        "db": tmp_path / "koed.db",
        "run_dir": tmp_path / "run",
        "app_ports": (9001, 9002),
        "port": 443,
        "domain": "study.example.org",
        "hooks_port": 9100,
    }
    options.update(kwargs)
    return ServePlan(**options)  # type: ignore[arg-type]


def test_prolifics_events_go_to_the_receiver_and_internal_tls_validates(tmp_path: Path) -> None:
    path = tmp_path / "caddy.json"
    path.write_text(caddy_json(_plan(tmp_path, tls="internal")))
    checked = subprocess.run(
        ["caddy", "validate", "--config", str(path)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr
    config = json.loads(path.read_text())
    hooks, app = config["apps"]["http"]["servers"]["koed"]["routes"]
    assert hooks["match"] == [{"host": ["study.example.org"], "path": [HOOK_PATH]}]
    assert [u["dial"] for u in hooks["handle"][0]["upstreams"]] == ["127.0.0.1:9100"]
    assert hooks["terminal"] and app["match"] == [{"host": ["study.example.org"]}]
    (policy,) = config["apps"]["tls"]["automation"]["policies"]
    assert policy == {"subjects": ["study.example.org"], "issuers": [{"module": "internal"}]}
    assert config["apps"]["pki"]["certificate_authorities"]["local"]["install_trust"] is False
    plain = json.loads(caddy_json(_plan(tmp_path, domain=None, hooks_port=None, port=8080)))
    assert len(plain["apps"]["http"]["servers"]["koed"]["routes"]) == 1  # no address: polling


def test_the_receiver_runs_under_the_same_supervisor(tmp_path: Path) -> None:
    conf = supervisord_conf(_plan(tmp_path), password="x")
    block = conf.split("[program:hooks]\n", 1)[1].split("\n\n", 1)[0]
    assert "-m koed_core.cli prolific receive --port 9100" in block
    assert "autorestart=true" in block
    assert "[program:hooks]" not in supervisord_conf(_plan(tmp_path, hooks_port=None), "x")


def test_tls_internal_without_a_domain_is_one_sentence_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("koed serve started supervisord")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    work = tmp_path / "work"
    work.mkdir()
    args = ["serve", "--db", str(work / "koed.db"), "--run-dir", str(work / "run")]
    assert main([*args, "--tls", "internal"]) == 1
    err = capsys.readouterr().err
    assert "--tls internal is for --domain" in err and err.count("\n") == 1
    assert list(work.iterdir()) == []


@pytest.mark.slow
def test_the_whole_path_runs_offline_with_caddys_local_ca(tmp_path: Path) -> None:
    """`koed serve --domain koed.test --tls internal`: ready with a certificate from Caddy's
    own CA, subscribed at start, and a signed event through Caddy's HTTPS to the receiver
    is applied; a forged one is refused there too."""
    fake = FakeProlific(token="serve-token").start()
    env = {
        **os.environ,
        "KOED_SECRET_KEY": "k" * 40,
        "PROLIFIC_API_TOKEN": "serve-token",
        "PROLIFIC_API_URL": fake.base_url,
        "PROLIFIC_WORKSPACE_ID": "ab" * 12,
    }
    run_dir, db = tmp_path / "run", tmp_path / "koed.db"
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "koed_core.cli",
            "serve",
            "--processes",
            "1",
            "--domain",
            "koed.test",
            "--tls",
            "internal",
            "--db",
            str(db),
            "--run-dir",
            str(run_dir),
            "--backup-every",
            "0",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(serve.stdout or []), daemon=True).start()
    try:
        _until(lambda: any(line.startswith("ready:") for line in lines), serve, lines)
        _until(lambda: sum("subscribed and confirmed" in line for line in lines) == 2, serve, lines)
        root = run_dir / "caddy" / "pki" / "authorities" / "local" / "root.crt"
        body = json.dumps(
            {"resource_id": "ab" * 12, "event_type": "study.status.change", "status": "PAUSED"}
        ).encode()
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "X-Event-ID": "e1" * 12,
            "X-Prolific-Request-Timestamp": stamp,
            "X-Prolific-Request-Signature": fake.signed("ab" * 12, body, stamp),
        }
        assert _post_https(root, body, headers) == 200
        forged = {**headers, "X-Event-ID": "e2" * 12, "X-Prolific-Request-Signature": "QUFB"}
        assert _post_https(root, body, forged) == 401
        with sqlite3.connect(db) as conn:
            rows = conn.execute("select event_id, status from prolific_events").fetchall()
        assert rows == [("e1" * 12, "PAUSED")]
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)
        fake.stop()


def _until(done: Callable[[], bool], serve: subprocess.Popen[str], lines: list[str]) -> None:
    deadline = time.monotonic() + 120
    while not done():
        assert serve.poll() is None and time.monotonic() < deadline, "".join(lines)
        with contextlib.suppress(subprocess.TimeoutExpired):
            serve.wait(timeout=0.2)  # returns at once if it ends


def _post_https(root: Path, body: bytes, headers: dict[str, str]) -> int:
    """POST to https://koed.test/prolific/hooks on 127.0.0.1:443, checked against Caddy's
    local root (the name koed.test, as Prolific would reach it)."""
    context = ssl.create_default_context(cafile=str(root))
    raw = socket.create_connection(("127.0.0.1", 443), timeout=10)
    conn = http.client.HTTPSConnection("koed.test", 443, context=context, timeout=10)
    conn.sock = context.wrap_socket(raw, server_hostname="koed.test")
    conn.request("POST", HOOK_PATH, body=body, headers=headers)
    status = conn.getresponse().status
    conn.close()
    return int(status)
