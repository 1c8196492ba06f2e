"""Text from a URL, a file or a person reaches the page only through ``md`` (shown literally).

A lint over app_pages/, components/ and app.py: every call that renders Markdown (``st.error``,
``st.warning``, ``st.info``, ``st.success``, ``st.markdown``, ``st.caption``, ``st.toast``
and their container forms) takes a literal string, ``md(...)``, or an f-string whose every
placeholder is ``md(...)``, a number (a format spec such as ``:.2f``, ``len()``,
``int()``...) or one of our own UPPER_CASE constants, or a translation ``_(...)`` of one
of those whose every filled value is safe too; a consent text goes through
``consent_markdown`` (a safe subset) instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RENDERS_MARKDOWN = {"error", "warning", "info", "success", "markdown", "caption", "toast"}
NUMERIC_CALLS = {"len", "int", "float", "round", "sum", "min", "max", "abs"}
SANITISERS = {"md", "consent_markdown"}
TRANSLATORS = {"_", "ngettext"}
LOCALE_FORMATS = {"number", "percent", "moment"}
"""A translated message is ours (the catalog); what fills its placeholders must be safe."""
"""``md`` shows text character for character; ``consent_markdown`` keeps only paragraphs,
lists, bold and http(s) links (tests/test_tables.py checks it)."""


def _safe(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name | ast.Attribute):  # our own CONSTANTS: written by us
        name = node.id if isinstance(node, ast.Name) else node.attr
        return name.isupper()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in TRANSLATORS:  # our own catalog's text, its values each safe
            args = node.args[:2] if node.func.id == "ngettext" else node.args  # n: a count
            return all(_safe(a) for a in args) and all(_safe(k.value) for k in node.keywords)
        return node.func.id in SANITISERS or node.func.id in NUMERIC_CALLS
    if isinstance(node, ast.Subscript):  # an entry of one of our own CONSTANT tables
        return _safe(node.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "i18n"
        and node.func.attr in LOCALE_FORMATS
    ):  # a number or date as Babel writes it: digits and signs only
        return True
    if isinstance(node, ast.JoinedStr):
        return all(_safe_placeholder(v) for v in node.values)
    if isinstance(node, ast.BinOp):  # "a" + md(b), SECONDS // 60
        return _safe(node.left) and _safe(node.right)
    if isinstance(node, ast.IfExp):
        return _safe(node.body) and _safe(node.orelse)
    return False


def _safe_placeholder(value: ast.expr) -> bool:
    if isinstance(value, ast.Constant):
        return True
    assert isinstance(value, ast.FormattedValue)
    if value.format_spec is not None:  # {x:.2f}, {n:,}: a number
        return True
    return _safe(value.value)


def _unsafe_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RENDERS_MARKDOWN
            and node.args
            and not _safe(node.args[0])
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:90]}")
    return found


def test_rendered_text_goes_through_md() -> None:
    files = [ROOT / "app.py", *sorted((ROOT / "app_pages").rglob("*.py"))]
    files += sorted((ROOT / "components").rglob("*.py"))
    unsafe = [line for path in files for line in _unsafe_calls(path)]
    assert unsafe == [], "\n".join(unsafe)


def test_the_lint_catches_an_unescaped_value(tmp_path: Path) -> None:
    page = tmp_path / "page.py"
    page.write_text(
        "st.error(str(err))\n"
        "st.info(f'hello {name}')\n"
        "st.caption(f'{md(name)}: {count:,} rows, {len(rows)} shown')\n"
        "st.warning('plain')\n"
        "st.info(_('Hello {name}', name=name))\n"
        "st.info(_('Hello {name}', name=md(name)))\n"
        "st.toast(_(TABLE[key], n=len(rows)))\n"
        "st.info(ngettext('{n} row', '{n} rows', count, name=name))\n"
        "st.info(ngettext('{n} row', '{n} rows', count))\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        lines = _unsafe_calls(page)
    finally:
        ROOT = saved
    assert [line.split(":")[1] for line in lines] == ["1", "2", "5", "8"]
