"""ruff lint and format and strict mypy on the core, run by the one test command."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["ruff", "check", "."], id="ruff-check"),
        pytest.param(["ruff", "format", "--check", "."], id="ruff-format"),
        pytest.param(["mypy", "koed_core"], id="mypy-strict-core", marks=pytest.mark.slow),
    ],
)
def test_clean(command: list[str]) -> None:
    tool = shutil.which(command[0])
    assert tool, f"{command[0]} is missing: pip install -r requirements-dev.txt"
    result = subprocess.run([tool, *command[1:]], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
