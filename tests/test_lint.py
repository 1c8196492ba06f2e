"""ruff lint and format and strict mypy on the core, run by the one test command."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy", "koed_core"]],
    ids=["ruff-check", "ruff-format", "mypy-strict-core"],
)
def test_clean(command: list[str]) -> None:
    tool = shutil.which(command[0])
    assert tool, f"{command[0]} is missing: pip install -r requirements-dev.txt"
    result = subprocess.run([tool, *command[1:]], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
