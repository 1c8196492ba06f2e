"""ruff lint and format and strict mypy on the core, run by the one test command.

Each tool runs as ``sys.executable -m TOOL``: the interpreter running pytest is the
project's, so ``venv/bin/python -m pytest`` finds the venv's ruff and mypy without an
activated venv or anything on PATH."""

from __future__ import annotations

import subprocess
import sys
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
    result = subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
