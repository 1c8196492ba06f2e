"""The README's install is CPU-only wherever it runs: PyTorch's CPU index comes first, with
the same torch pin as requirements.txt, in both commands and in CI."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _pin(path: Path, package: str) -> str:
    found = re.findall(rf"^{package}==(\S+)$", path.read_text(encoding="utf-8"), re.M)
    assert len(found) == 1, f"{path.name} pins {package} {len(found)} times"
    return found[0]


def test_torch_comes_from_the_cpu_index_first() -> None:
    cpu = ROOT / "requirements-torch-cpu.txt"
    assert CPU_INDEX in cpu.read_text(encoding="utf-8").split()
    assert _pin(cpu, "torch") == _pin(ROOT / "requirements.txt", "torch")
    commands = re.findall(r"^pip install .*$", (ROOT / "README.md").read_text(), re.M)
    assert len(commands) == 2  # run, test
    for command in commands:
        steps = [s.strip() for s in command.split("&&")]
        first = next(s for s in steps if "requirements" in s)
        assert first.endswith("requirements-torch-cpu.txt"), command


def test_ci_runs_the_readme_commands_in_a_fresh_venv() -> None:
    """CI reads both commands out of README.md (so they cannot drift apart) and runs them in
    a virtual environment it makes afresh, never the machine's own site-packages."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'readme_command "## Run it"' in ci and 'readme_command "## Test it"' in ci
    assert re.search(r"^rm -rf \"\$VENV\"$", ci, re.M)
    assert re.search(r"^python3 -m venv \"\$VENV\"$", ci, re.M)
    assert "--system-site-packages" not in ci
    assert not re.search(r"^\s*pip install", ci, re.M), "CI installs only what the README does"
