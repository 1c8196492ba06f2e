"""Chart images are drawn in a child process with a deadline: a Kaleido whose Chromium
never answers (seen once on a clean-clone run, the suite waiting for ever) is ended with
the processes it started, tried once more, then said in one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from koed_core.results import image_export
from tests.conftest import wait_until


def test_a_drawing_that_never_answers_is_ended_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    hang = (
        "import os, subprocess, sys, time\n"
        "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'a').write(f'{{kid.pid}}\\n')\n"
        "time.sleep(600)\n"
    )
    monkeypatch.setattr(image_export, "_CHILD", hang)
    with pytest.raises(image_export.ImageExportError, match="gave no answer within 0.5 s"):
        image_export.write_images([], [tmp_path / "a.png"], width=10, height=10, deadline_s=0.5)
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2  # tried twice
    for pid in started:  # the grandchild (Chromium's place) ended with its group
        wait_until(lambda pid=pid: _ended(pid), f"process {pid} ends", timeout=10)


def _ended(pid: int) -> bool:
    """Gone, or a zombie its new parent has not reaped yet: it runs no more."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_failed_drawing_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_export, "_CHILD", "raise SystemExit('no browser found')")
    with pytest.raises(image_export.ImageExportError, match="a.png.*no browser found"):
        image_export.write_images([], [tmp_path / "a.png"], width=10, height=10)
