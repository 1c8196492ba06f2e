"""Every page file under app_pages/, found on disk, rendered for a visitor, a rater and an admin.

The database is a copy of the 0.1.0 fixture, upgraded on open, so every results page has
real rows to show. A page a role may not open is absent from that role's navigation and,
run on its own, stops with a message before showing anything.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
PAGE_FILES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "app_pages").glob("*/*.py")
    if p.name != "__init__.py"
)
ROLES = {"visitor": None, "rater": "mina", "admin": "boss"}
ADMIN_ONLY = {"Runs", "LLM judge", "Studies", "Study dashboard"}


def _session(script: Path, username: str | None) -> AppTest:
    at = AppTest.from_file(str(script), default_timeout=60)
    if username:
        at.session_state["authentication_status"] = True
        at.session_state["username"] = username
        at.session_state["name"] = username
    return at


def test_pages_live_in_section_folders_and_no_pages_folder_comes_back() -> None:
    """Every page script is registered in app.py. No folder named ``pages/`` sits beside
    app.py: Streamlit reads one as its old multipage mode until st.navigation has run,
    and a first deep link after a start met "Page not found"
    (tests/browser/test_first_visit_browser.py)."""
    source = (ROOT / "app.py").read_text()
    assert PAGE_FILES and all(f'"{page}"' in source for page in PAGE_FILES)
    assert not (ROOT / "pages").exists()
    assert not [p for p in (ROOT / "app_pages").glob("*.py") if p.name != "__init__.py"]


SERVER_PATH = re.compile(r"(?<![\w.:/~])/(?:[^\s/'\"`\\]+/)+[^\s/'\"`\\]+")
HEX_RUN = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{16,}(?![0-9a-fA-F])")


def _shown(at: AppTest) -> list[str]:
    """Every text on the screen a person can read: elements, labels, options, and the
    cells of a table's visible columns."""
    import json

    texts: list[str] = []
    kinds = ("title", "header", "subheader", "caption", "markdown", "text", "info", "warning")
    for kind in (*kinds, "error", "success", "toast", "code", "latex"):
        texts += [str(e.value) for e in getattr(at, kind)]
    for kind in ("button", "checkbox", "toggle", "number_input", "text_input", "text_area"):
        texts += [str(e.label) for e in getattr(at, kind)]
    for kind in ("radio", "selectbox", "multiselect", "select_slider"):
        for widget in getattr(at, kind):
            texts += [str(widget.label), *(str(o) for o in widget.options)]
    texts += [str(e.label) for e in at.expander] + [str(m.label) for m in at.get("metric")]
    texts += [str(m.proto.body) for m in at.get("metric")]
    for frame in at.dataframe:
        config = json.loads(frame.proto.columns or "{}")
        for column in frame.value.columns:
            if not config.get(str(column), {}).get("hidden"):
                texts += [str(column), *(str(v) for v in frame.value[column].tolist())]
    return texts


@pytest.mark.slow
@pytest.mark.parametrize("role", list(ROLES))
@pytest.mark.parametrize("page", PAGE_FILES)
def test_every_page_for_every_role(
    site: Path, page: str, role: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each page for each role; a visitor and a rater never read a path of the server (the
    data is a file the operator named by its absolute path) or a hex id."""
    from koed_core.paths import SAMPLE_FILE

    data = tmp_path / "deep" / "operator" / "folder" / "koed_data.json"
    data.parent.mkdir(parents=True)
    data.write_bytes(SAMPLE_FILE.read_bytes())
    monkeypatch.setenv("KOED_DATA", str(data))
    at = _session(ROOT / "app.py", ROLES[role]).run()
    try:
        at.switch_page(page)
    except ValueError as err:
        assert "Could not find a navigation page" in str(err)
        alone = _session(ROOT / page, ROLES[role]).run()
        assert not alone.exception, [e.value for e in alone.exception]
        refusals = [m.value for m in [*alone.info, *alone.error]]
        assert any(
            "Log in first" in m or "admins only" in m or "annotators only" in m for m in refusals
        ), refusals
        assert not alone.dataframe and not alone.button
        return
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page} shows no title for a {role}"
    title = at.title[0].value
    if role != "admin":
        assert title not in ADMIN_ONLY, f"a {role} opened {page}"
        shown = _shown(at)
        assert any("koed_data.json" in text for text in shown) or "dialogues" not in page
        paths = [m.group(0) for text in shown for m in SERVER_PATH.finditer(text)]
        assert not paths, f"a {role} reads the server's paths on {page}: {paths}"
        ids = [m.group(0) for text in shown for m in HEX_RUN.finditer(text)]
        assert not ids, f"a {role} reads hex ids on {page}: {ids}"
