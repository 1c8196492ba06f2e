"""Issue 57, pages: what a reader meets on the Demo, links, the smaller findings and the
last English on a Korean page (AppTest; each read once settled and again after a rerun)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from tests.test_gaps import _store_with_runs

ROOT = Path(__file__).resolve().parents[1]


def _app(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def _page(page: str, query: dict[str, str] | None = None) -> AppTest:
    at = _app().switch_page(page)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at.run()


def _with_commas(db: Path) -> None:
    """Make the English transcripts what a raw run sent: the file's _comma_ in them."""
    from koed_core.db import Store

    store = Store(db)
    rows = list(store.db.query("select id, context, text from responses where lang = 'en'"))
    for row in rows:
        context = [
            [role, text.replace(",", "_comma_")] for role, text in json.loads(row["context"])
        ]
        context[-1][1] += " I was late_comma_ again"
        store.db.execute(
            "update responses set context = ?, text = ? where id = ?",
            [json.dumps(context), (row["text"] or "") + " Oh_comma_ no.", row["id"]],
        )
    store.db.conn.commit()


@pytest.mark.slow
def test_demo_shows_text_as_read_and_keeps_the_replay_notice_in_talk_mode(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    _store_with_runs(tmp_path / "koed.db", fake_openai)
    _with_commas(tmp_path / "koed.db")
    for talk in ({}, {"talk": "true"}):
        at = _page("pages/results/demo.py", talk)
        at.slider(key="demo.pace").set_value(40)
        at.button(key="demo.play").click().run()
        for _read in (1, 2):  # settled, and again after another run of the page
            assert not at.exception, [e.value for e in at.exception]
            texts = [t.value for t in at.text]
            assert not [t for t in texts if "_comma_" in t], texts
            assert any("I was late, again" in t for t in texts), texts
            assert any("Oh, no." in t for t in texts), texts
            notice = [c for c in at.main.caption if "Replay of stored answers" in c.value]
            assert notice, "the replay notice is on the page"
            folded = [c for e in at.expander for c in e.caption]
            assert not [c for c in folded if "Replay of stored answers" in c.value]
            at.run()
            if _read == 1:
                at.button(key="demo.play").click().run()
