"""The layout cannot rot: which part of the tree may import which, and how big a room gets.

The import rules are import-linter contracts in pyproject.toml (`lint-imports` runs them
by hand): pages -> components -> koed_core; koed_core's sections stack in one order
(shared modules < dialogues < db < models < judge < rating < annotation < results < jobs
< cli); component sections never import each other and shared never imports a section; a
page section uses only its own components and the shared ones; koed_core never imports
Streamlit; bench never imports tests. This file runs them and checks what a static import
graph cannot say: app.py (a module, not a package), Streamlit at run time, that every
section folder is named by a contract, and the size of pages and modules.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import koed_core

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_PAGE_LINES = 120


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def _sections(folder: str) -> set[str]:
    return {
        p.name for p in (ROOT / folder).iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }


def test_the_import_contracts_hold() -> None:
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command as c; c()",
            "--no-cache",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, found.stdout[-4000:] + found.stderr[-2000:]
    assert f"{len(_contracts())} kept, 0 broken" in found.stdout


def test_every_section_folder_is_named_by_a_contract() -> None:
    """A new component section, page section or koed_core package cannot slip past the
    rules by being left out of them."""
    by_name = {str(c["name"]): c for c in _contracts()}
    components = next(c for c in by_name.values() if c.get("containers") == ["components"])
    named = {n.strip() for layer in components["layers"] for n in str(layer).split("|")}  # type: ignore[attr-defined]
    assert named == _sections("components")
    page_rules = {
        str(c["source_modules"][0]).removeprefix("app_pages.")  # type: ignore[index]
        for c in by_name.values()
        if str(c.get("source_modules", [""])[0]).startswith("app_pages.")  # type: ignore[index]
    }
    assert page_rules == _sections("app_pages") == _sections("components") - {"shared", "core"}
    core = next(c for c in by_name.values() if c.get("containers") == ["koed_core"])
    assert core["exhaustive"] is True  # every package and module of koed_core is placed


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, function-local ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def test_the_router_imports_no_page_and_no_test_double() -> None:
    wrong = [
        f"app.py:{line} imports {target}"
        for line, target in _imports(ROOT / "app.py")
        if target.split(".")[0] in ("app_pages", "fixtures", "tests", "bench")
    ]
    assert wrong == []


@pytest.mark.slow
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


def _lines(folder: str, limit: int) -> dict[str, int]:
    return {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit
    }


def test_pages_stay_thin() -> None:
    assert _lines("app_pages", MAX_PAGE_LINES - 1) == {}


def test_no_module_grows_past_500_lines() -> None:
    """Past about 500 lines a module holds several concerns: split it by concern."""
    assert {**_lines("koed_core", MAX_MODULE_LINES), **_lines("components", MAX_MODULE_LINES)} == {}


MAX_FLAT_MODULES = 10


def test_koed_core_keeps_at_most_10_modules_beside_its_packages() -> None:
    """Shared modules that grow in number want a package (``text/`` took four)."""
    flat = sorted(p.name for p in (ROOT / "koed_core").glob("*.py") if p.name != "__init__.py")
    assert len(flat) <= MAX_FLAT_MODULES, flat


def _documented_layout() -> set[str]:
    """The packages the tree in docs/development.md names, as paths."""
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    tree = text.split("<!-- layout: begin -->", 1)[1].split("<!-- layout: end -->", 1)[0]
    found, stack = set(), []
    for line in tree.strip().strip("`").splitlines():
        name = line.strip().split(" ", 1)[0] if line.strip() else ""
        if not name.endswith("/") and name != "app.py":
            continue  # a continued description, or the fence
        depth = (len(line) - len(line.lstrip())) // 2
        stack[depth:] = [name.rstrip("/")]
        found.add("/".join(stack))
    return found


def test_the_documented_layout_is_the_code_s() -> None:
    packages = {
        str(init.parent.relative_to(ROOT))
        for top in ("app_pages", "components", "koed_core")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert _documented_layout() == packages | {"app.py"}
