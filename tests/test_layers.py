"""The layout cannot rot: which part of the tree may import which.

Pages -> components -> koed_core, and inside koed_core the section packages stack in one
order (a package imports only itself and the packages below it):

    base (errors, paths, redact, csv_safe, config, tomlfile)
    < dialogues < db < models < judge < rating < annotation < results < jobs < cli

koed_core never imports Streamlit, so notebooks and the CLI can use it; bench/ never
imports tests/ (what both need lives in fixtures/).
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import koed_core

ROOT = Path(__file__).resolve().parents[1]
LAYERS = [
    "base",
    "dialogues",
    "db",
    "models",
    "judge",
    "rating",
    "annotation",
    "results",
    "jobs",
    "cli",
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, function-local ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "base"


def _core_files() -> list[Path]:
    return sorted((ROOT / "koed_core").rglob("*.py"))


def test_every_core_module_is_in_a_known_place() -> None:
    stray = [
        _module_name(f)
        for f in _core_files()
        if _layer(_module_name(f)) == "base" and f.parent != ROOT / "koed_core"
    ]
    assert stray == []
    base = {f.stem for f in (ROOT / "koed_core").glob("*.py")}
    assert base == {"__init__", "errors", "paths", "redact", "csv_safe", "config", "tomlfile"}


def test_core_packages_import_only_downward() -> None:
    upward = []
    for path in _core_files():
        me = _module_name(path)
        for line, target in _imports(path):
            if target.startswith("koed_core") and LAYERS.index(_layer(target)) > LAYERS.index(
                _layer(me)
            ):
                upward.append(f"{me}:{line} imports {target}")
    assert upward == []


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("koed_core", ("streamlit", "components", "pages", "fixtures", "tests", "bench")),
        ("components", ("pages", "fixtures", "tests", "bench")),
        ("pages", ("fixtures", "tests", "bench")),
        ("fixtures", ("streamlit", "components", "pages", "tests", "bench")),
        ("bench", ("tests",)),
    ],
)
def test_tree_imports_one_way(folder: str, forbidden: tuple[str, ...]) -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, target in _imports(path)
        if target.split(".")[0] in forbidden
    ]
    assert wrong == []


def test_koed_core_never_imports_streamlit_at_run_time() -> None:
    modules = [
        m.name
        for m in pkgutil.walk_packages(koed_core.__path__, "koed_core.")
        if not m.ispkg and not m.name.endswith("__main__")
    ]
    assert "koed_core.dialogues.dataset" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print('streamlit' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_pages_stay_thin() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "pages").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) >= 120
    }
    assert long == {}
