"""Every SQL statement lives in koed_core/db, as its first line and docs/development.md say.

A query written beside the rules that use it drifts from the table it reads: a renamed
column or table (a migration) is then found by a user, not by the tests of the package
that owns the schema. This scans the app's code (koed_core outside db, components,
app_pages, app.py) for the three ways SQL gets in: a string that reads as a statement,
a call of ``Store``'s raw query methods (``rows``, ``frame``), and the sqlite handle
under it (``store.db``, ``.conn``, ``.execute``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

STATEMENT = re.compile(
    r"^\s*(select\s[\s\S]*\sfrom\s+\w|insert\s+(or\s+\w+\s+)?into\s+\w|update\s+\w+\s+set\s"
    r"|delete\s+from\s+\w|create\s+(table|index|view|trigger)\s|pragma\s+\w"
    r"|with\s+\w+\s+as\s*\()",
    re.IGNORECASE,
)
"""The opening of a statement (prose that begins "select the text ..." does not match)."""

RAW = {"rows", "frame", "execute", "executemany", "executescript"}
"""Methods that take SQL text: ``Store.rows``/``Store.frame`` and sqlite's own."""

HANDLE = {"conn"}
"""Attributes that reach the sqlite connection itself."""


def _files() -> list[Path]:
    found = [ROOT / "app.py"]
    for top in ("koed_core", "components", "app_pages"):
        found += sorted((ROOT / top).rglob("*.py"))
    return [p for p in found if p.relative_to(ROOT).parts[:2] != ("koed_core", "db")]


def _prose(tree: ast.AST) -> set[int]:
    """The ids of string nodes that are prose: docstrings and what ``_()``/``N_()`` take
    (a sentence about selecting text is not a query)."""
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            ids.add(id(body[0].value))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("_", "N_"):
            ids.update(id(a) for a in node.args)
    return ids


def _store_db(node: ast.Attribute) -> bool:
    """``<store>.db``: the sqlite-utils database under a ``Store`` (``args.db`` is a path)."""
    inner = node.value
    name = inner.attr if isinstance(inner, ast.Attribute) else getattr(inner, "id", "")
    return node.attr == "db" and "store" in str(name)


def sql_in(text: str, where: str) -> list[str]:
    """``where:line what`` for each statement, raw query call or handle in ``text``."""
    tree = ast.parse(text)
    prose = _prose(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            if STATEMENT.match(node.value):
                found.append(f"{where}:{node.lineno} SQL text {node.value.split()[0]!r}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RAW
            and node.args
        ):
            found.append(f"{where}:{node.lineno} .{node.func.attr}(...)")
        if isinstance(node, ast.Attribute) and (node.attr in HANDLE or _store_db(node)):
            found.append(f"{where}:{node.lineno} .{node.attr}")
    return found


def test_the_scan_finds_each_way_sql_gets_in() -> None:
    planted = (
        "def f(store, other, args):\n"
        '    """select the text from the list: prose, not a query."""\n'
        '    store.rows("select closed from studies where id = ?", [1])\n'
        "    store.frame(SQL)\n"
        "    store.db.conn.close()\n"
        '    other.execute("update runs set kind = 1")\n'
        '    return "insert into ratings values (1)", _("select the words from a turn")\n'
        "    return args.db, frame.count(), store.stamp()\n"
    )
    lines = sorted(int(hit.split(":")[1].split()[0]) for hit in sql_in(planted, "planted"))
    assert lines == [3, 3, 4, 5, 5, 6, 6, 7]


@pytest.mark.slow  # scans the code (about 2 s of CPU)
def test_no_sql_outside_koed_core_db() -> None:
    found = [
        hit
        for path in _files()
        for hit in sql_in(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert found == []
