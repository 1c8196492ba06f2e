"""The models' notes from models.toml in the reader's language: Babel
extracts them from the registry (babel.cfg, koed_core/text/toml_messages.py), the catalog has
them in Korean, and a Korean page shows the Korean one; a note of one's own as written."""

from __future__ import annotations

import io
from pathlib import Path

from streamlit.testing.v1 import AppTest

from koed_core import i18n
from koed_core.models.registry import load_registry
from koed_core.paths import DEFAULT_REGISTRY
from koed_core.text.toml_messages import extract_notes, notes_of

ROOT = Path(__file__).resolve().parents[1]


def test_every_shipped_note_is_extracted_from_its_line() -> None:
    text = DEFAULT_REGISTRY.read_text(encoding="utf-8")
    found = list(notes_of(text))
    wanted = [s.notes for s in load_registry(DEFAULT_REGISTRY).values() if s.notes]
    assert [note for _line, note in found] == wanted
    lines = text.splitlines()
    for line, _note in found:
        assert lines[line - 1].startswith("notes = "), (line, lines[line - 1])
    extracted = list(extract_notes(io.BytesIO(text.encode()), ["_"], [], {}))
    assert [(m[1], m[2]) for m in extracted] == [("_", n) for n in wanted]


def test_every_shipped_note_reads_in_korean_and_an_own_note_as_written() -> None:
    with i18n.speaking("ko"):
        for spec in load_registry(DEFAULT_REGISTRY).values():
            if spec.notes:
                assert i18n._(spec.notes) != spec.notes, spec.name
        assert i18n._("My own server, no key.") == "My own server, no key."


def test_the_korean_chat_page_shows_the_offline_models_note_in_korean() -> None:
    note = load_registry(DEFAULT_REGISTRY)["smollm2"].notes
    with i18n.speaking("ko"):
        korean = i18n._(note)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "ko"
    at.run().switch_page("app_pages/models/chat.py").run()
    for _read in (1, 2):  # settled, and again after another run
        assert not at.exception, [e.value for e in at.exception]
        captions = [c.value.replace("\\", "") for c in at.caption]
        assert korean in captions and note not in captions, captions
        at.run()
