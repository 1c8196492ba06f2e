"""Every page file under pages/, found on disk, rendered for a visitor, a rater and an admin.

The database is a copy of the 0.1.0 fixture, upgraded on open, so every results page has
real rows to show. A page a role may not open is absent from that role's navigation and,
run on its own, stops with a message before showing anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
PAGE_FILES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "pages").glob("*/*.py")
    if p.name != "__init__.py"
)
STAND_INS = sorted(p.name for p in (ROOT / "pages").glob("*.py") if p.name != "__init__.py")
ROLES = {"visitor": None, "rater": "mina", "admin": "boss"}
ADMIN_ONLY = {"Runs", "LLM judge", "Studies", "Study dashboard"}


def _session(script: Path, username: str | None) -> AppTest:
    at = AppTest.from_file(str(script), default_timeout=60)
    if username:
        at.session_state["authentication_status"] = True
        at.session_state["username"] = username
        at.session_state["name"] = username
    return at


def test_pages_live_in_section_folders_with_a_stand_in_each() -> None:
    # Directly in pages/ only stand-ins that hand over to app.py: the first deep link
    # after a server start then opens the real page (components/shared/first_visit.py).
    source = (ROOT / "app.py").read_text()
    assert PAGE_FILES and all(f'"{page}"' in source for page in PAGE_FILES)
    assert sorted(Path(page).name for page in PAGE_FILES) == STAND_INS
    for name in STAND_INS:
        body = (ROOT / "pages" / name).read_text()
        assert "hand_over_to_app()" in body and "import streamlit" not in body, name


@pytest.mark.slow
@pytest.mark.parametrize("name", STAND_INS)
def test_a_stand_in_opens_the_app_not_a_page_of_its_own(site: Path, name: str) -> None:
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    # app.py ran: its sidebar frame and its navigation, with the explorer as the default
    assert any("KoED Studio" in c.value for c in at.sidebar.caption)


@pytest.mark.parametrize("role", list(ROLES))
@pytest.mark.parametrize("page", PAGE_FILES)
def test_every_page_for_every_role(site: Path, page: str, role: str) -> None:
    at = _session(ROOT / "app.py", ROLES[role]).run()
    try:
        at.switch_page(page)
    except ValueError as err:
        assert "Could not find a navigation page" in str(err)
        alone = _session(ROOT / page, ROLES[role]).run()
        assert not alone.exception, [e.value for e in alone.exception]
        refusals = [m.value for m in [*alone.info, *alone.error]]
        assert any("Log in first" in m or "admins only" in m for m in refusals), refusals
        assert not alone.dataframe and not alone.button
        return
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title, f"{page} shows no title for a {role}"
    title = at.title[0].value
    if role != "admin":
        assert title not in ADMIN_ONLY, f"a {role} opened {page}"
