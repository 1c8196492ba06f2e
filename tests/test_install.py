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
    commands += re.findall(r"^pip install .*$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert len(commands) == 3  # run, test, CI
    for command in commands:
        steps = [s.strip() for s in command.split("&&")]
        first = next(s for s in steps if "requirements" in s)
        assert first.endswith("requirements-torch-cpu.txt"), command
