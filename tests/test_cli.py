"""The ``koed`` console command, run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from koed_core.dialogues.sources import OFFICIAL


def koed(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "koed_core.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


@pytest.mark.slow
def test_check_prints_the_figures(official_file: Path) -> None:
    result = koed("data", "check", str(official_file))
    assert result.returncode == 0, result.stderr
    assert "dialogues: 1360" in result.stdout
    assert "distinct label sets: 285" in result.stdout
    assert "Korean-only turns: 1816" in result.stdout
    assert "repeated_label: 10" in result.stdout


@pytest.mark.slow
def test_check_json(official_file: Path) -> None:
    result = koed("data", "check", str(official_file), "--json")
    figures = json.loads(result.stdout)
    assert figures["ok"] and figures["turns"] == 7820 and figures["sha256"] == OFFICIAL.sha256
    assert figures["warnings"]["utter_idx_order"] == 13


@pytest.mark.slow
def test_check_fails_with_the_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        '[{"conv_id": "x", "emotion": "joy", "situation": "", "ko_situation": "", '
        '"dialogue": [{"ko_utter": "가"}]}]'
    )
    result = koed("data", "check", str(bad))
    assert result.returncode == 1
    assert f"{bad}" in result.stderr and "conv_id 'x'" in result.stderr
    assert "unknown label 'joy'" in result.stderr
    as_json = json.loads(koed("data", "check", str(bad), "--json").stdout)
    assert as_json["ok"] is False and "unknown label" in as_json["error"]


def test_download_to_a_folder(
    file_server, generated_release: bytes, tmp_path: Path, monkeypatch, capsys
) -> None:
    from koed_core import cli

    server, folder = file_server
    (folder / "KoED.json").write_bytes(generated_release)
    dest = tmp_path / "out"
    monkeypatch.setenv("KOED_DATA_URL", server.url("KoED.json"))
    assert cli.main(["data", "download", "--dest", str(dest)]) == 0
    assert "verified" in capsys.readouterr().out
    assert (dest / "KoED.json").read_bytes() == generated_release
    monkeypatch.setenv("KOED_DATA_URL", server.url("nothing-here.json"))
    assert cli.main(["data", "download", "--dest", str(dest)]) == 1
    assert "404" in capsys.readouterr().err
    assert (dest / "KoED.json").read_bytes() == generated_release


def _koed_here(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """`koed ARGS` in this process (exit code, stderr): argparse's own refusals exit 2."""
    from koed_core import cli

    try:
        code = cli.main(list(args))
    except SystemExit as stop:
        code = int(stop.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.slow
def test_bad_arguments_are_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "k.db"
    result = koed("run", "--model", "human", "--limit", "0", "--db", str(db))  # the real command
    assert result.returncode == 2 and "--limit: must be at least 1" in result.stderr
    for args, word in (
        (("run", "--model", "human", "--limit", "0"), "--limit: must be at least 1"),
        (("run", "--model", "human", "--limit", "-3"), "--limit: must be at least 1"),
        (("run", "--model", "human", "--concurrency", "0"), "--concurrency: must be at least 1"),
        (("run", "--model", "human", "--temperature", "9"), "between 0 and 2"),
        (("judge", "--run", "x", "--samples", "0"), "--samples: must be at least 1"),
        (("run", "--model", "human", "--family", "claude"), "family is for openai:MODEL_ID"),
        (("judge", "--run", "x", "--parse", "nosuch"), "invalid choice: 'nosuch'"),
    ):
        code, err = _koed_here(capsys, *args, "--db", str(db))
        assert code == 2 and word in err, (args, err)
        assert "Traceback" not in err
    assert not db.exists()


@pytest.mark.slow
def test_a_corrupt_database_is_reported_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    db.write_bytes(b"\x00garbage" * 512)
    for args in (
        ("judges",),
        ("export", "--out", str(tmp_path / "out"), "--no-images"),
        ("agreement",),
    ):
        result = koed(*args, env={"KOED_DB": str(db)})
        assert result.returncode == 1, (args, result.stderr)
        assert "not a usable SQLite database" in result.stderr and "Traceback" not in result.stderr
    result = koed("run", "--model", "human", "--limit", "1", "--db", str(db))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert db.read_bytes() == b"\x00garbage" * 512
