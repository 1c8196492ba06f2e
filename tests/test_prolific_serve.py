"""Issue 68, item 4 under `koed serve --domain`: Prolific's POSTs go to the receiver behind
the same Caddy (never to Streamlit), the receiver runs under the same supervisor, and
`--tls internal` takes the certificate from Caddy's own local CA. Fast: nothing is started
(tests/test_serve.py starts the stack)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from koed_core.cli import main
from koed_core.cli.serving import ServePlan, caddy_json, supervisord_conf
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
