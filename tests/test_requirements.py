"""Every package the tree imports is named in a requirements file the README installs.

A fresh machine gets only what those files name: a test that imports a package installed
by hand on one machine passes there and stops a newcomer's first `python -m pytest` at
collection. So every import in the tree (app, pages, components, koed_core, tests, bench,
fixtures) that is not the standard library or our own code must resolve to a distribution
that the README's commands install by name, and pyproject.toml's dependencies must name
the same runtime packages as requirements.txt, with ranges its pins satisfy.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
OURS = {"app", "app_pages", "components", "koed_core", "fixtures", "bench", "tests"}
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist"}


def _requirement_lines(path: Path, seen: set[Path] | None = None) -> list[str]:
    """The requirement lines of one file, following `-r other.txt` as pip does."""
    seen = seen if seen is not None else set()
    if path in seen:
        return []
    seen.add(path)
    lines: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            lines += _requirement_lines(path.parent / line.split(maxsplit=1)[1], seen)
        elif line.startswith("-"):
            continue  # -e ., --extra-index-url: not a package name
        else:
            lines.append(line)
    return lines


def _readme_test_files() -> list[Path]:
    """The requirements files named by the README's test command, in its order."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Test it", 1)[1]
    command = re.search(r"```bash\n(.+?)\n```", section, re.S)
    assert command, "README's 'Test it' section has no bash block"
    files = re.findall(r"-r (\S+\.txt)", command.group(1))
    assert files, "README's test command installs no requirements file"
    return [ROOT / name for name in files]


def _listed() -> dict[str, Requirement]:
    found: dict[str, Requirement] = {}
    for path in _readme_test_files():
        for line in _requirement_lines(path):
            requirement = Requirement(line)
            found[canonicalize_name(requirement.name)] = requirement
    return found


def _imports() -> dict[str, set[str]]:
    """Top-level module -> files importing it, for every import outside stdlib and ours."""
    found: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        if SKIP_DIRS & set(path.relative_to(ROOT).parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in OURS or top == "__future__":
                    continue
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


@pytest.mark.slow
def test_the_scan_sees_imports() -> None:
    """The scan itself works: it finds what we know the tree imports."""
    imports = _imports()
    assert {"streamlit", "pandas", "pytest"} <= set(imports)
    assert "json" not in imports and "koed_core" not in imports


@pytest.mark.slow
def test_every_import_is_a_listed_distribution() -> None:
    listed = set(_listed())
    owners = metadata.packages_distributions()
    missing: list[str] = []
    for module, files in sorted(_imports().items()):
        where = ", ".join(sorted(files)[:3])
        dists = {canonicalize_name(d) for d in owners.get(module, [])}
        if not dists:
            missing.append(f"{module} (imported in {where}) is installed by no requirement")
        elif not dists & listed:
            names = ", ".join(sorted(dists))
            missing.append(
                f"{module} (imported in {where}) comes from {names}, "
                "which no requirements file the README installs names"
            )
    assert not missing, "\n".join(missing)


def test_requirements_are_pinned() -> None:
    """Pinned like the rest: one exact version each (openai's major range is the rule)."""
    loose = [
        str(r)
        for name, r in _listed().items()
        if name != "openai" and not any(s.operator == "==" for s in r.specifier)
    ]
    assert not loose, f"not pinned with ==: {loose}"


def test_pyproject_agrees_with_requirements_txt() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {
        canonicalize_name(Requirement(d).name): Requirement(d) for d in project["dependencies"]
    }
    runtime = {
        canonicalize_name(Requirement(line).name): Requirement(line)
        for line in _requirement_lines(ROOT / "requirements.txt")
    }
    assert set(declared) == set(runtime), (
        f"only in pyproject: {sorted(set(declared) - set(runtime))}; "
        f"only in requirements.txt: {sorted(set(runtime) - set(declared))}"
    )
    for name, pin in runtime.items():
        pinned = [s.version for s in pin.specifier if s.operator == "=="]
        for version in pinned:
            assert declared[name].specifier.contains(version, prereleases=True), (
                f"requirements.txt pins {name}=={version}, outside pyproject's {declared[name]}"
            )
