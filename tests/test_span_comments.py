"""A comment per span: written in the span's panel or the Change form,
stored in place, shown with the span (its tooltip, the table of spans) character for
character, and found by the project's search. A forged comment message changes nothing."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from components.annotation import span_actions
from components.annotation.span_select import _marks, span_key
from koed_core.annotation.projects import AnnotationRules
from koed_core.annotation.spans import Side, Span
from koed_core.annotation.taxonomy import load_taxonomy
from koed_core.db import Store
from koed_core.dialogues.dataset import load_dataset
from koed_core.paths import SAMPLE_FILE

ROOT = Path(__file__).resolve().parents[1]
DATASET = load_dataset(SAMPLE_FILE)
DIALOGUE = DATASET.dialogues[0]  # 편의점 / convenience store in turn 3
AT = DIALOGUE.turns[2].ko.index("편의점")
PLACE = Span(Side(3, AT, AT + 3, "편의점"), "places", no_counterpart=True)
COMMENT = "**굵게** 아님 <b>x</b> [링크](http://example.com) 야간"
"""Markdown and HTML that must be shown as typed."""


def _project(db: Path | str, spans: list[Span], who: str = "local") -> AnnotationRules:
    store = AnnotationRules(Store(db))
    project = store.create_project("p", DATASET, [DIALOGUE.conv_id], per_item=2)
    store.save(project, DIALOGUE, who, "context_modified", "", spans)
    return store


def _apply(store: AnnotationRules, message: dict[str, Any]) -> str | None:
    own = store.own(1, DIALOGUE.conv_id, "local")
    assert own is not None
    sheet = span_actions.Sheet.of(store, store.project(1), DIALOGUE, "local", load_taxonomy(), own)
    return span_actions.apply({"comment": message}, sheet)


def test_the_panels_comment_is_stored_in_place_and_emptied(tmp_path: Path) -> None:
    other = Span(Side(3, AT, AT + 2, "편의"), "other", no_counterpart=True)
    store = _project(tmp_path / "k.db", [PLACE, other])
    assert _apply(store, {"key": span_key(PLACE), "comment": f"  {COMMENT}\r\n둘째 줄 "}) is None
    own = store.own(1, DIALOGUE.conv_id, "local")
    assert own is not None
    assert [(s.key, s.comment) for s in own.spans] == [
        (PLACE.key, f"{COMMENT}\n둘째 줄"),  # the same span, in its place, with its comment
        (other.key, ""),
    ]
    assert own.category == "context_modified"
    assert _apply(store, {"key": span_key(PLACE), "comment": ""}) is None
    own = store.own(1, DIALOGUE.conv_id, "local")
    assert own is not None and own.spans[0].comment == ""


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ({"key": "3:0:1:food", "comment": "x"}, "no longer there"),
        ({"key": span_key(PLACE), "comment": ["x"]}, "could not be read"),
        ({"key": span_key(PLACE), "comment": "x" * 2001}, "could not be read"),
        ({"key": span_key(PLACE)}, "could not be read"),
    ],
)
def test_a_forged_comment_is_one_sentence_and_changes_nothing(
    tmp_path: Path, message: dict[str, Any], said: str
) -> None:
    store = _project(tmp_path / "k.db", [replace(PLACE, comment="그대로")])
    notice = _apply(store, message)
    assert notice is not None and said in notice
    own = store.own(1, DIALOGUE.conv_id, "local")
    assert own is not None and [s.comment for s in own.spans] == ["그대로"]


def test_the_widget_carries_the_comment_in_the_tooltip_and_to_the_panel() -> None:
    linked = Span(Side(3, AT, AT + 3, "편의점"), "places", en=Side(3, 0, 3, "x"), comment=COMMENT)
    marks = _marks([linked], None, 3, "selected", names={"places": "Place"})
    for mark in (*marks["ko"], *marks["en"]):  # either side opens the same panel
        assert mark["title"] == f"Place\n{COMMENT}"
        assert (mark["label"], mark["comment"]) == ("Place", COMMENT)
    plain = _marks([PLACE], None, 3, "selected", names={"places": "Place"})["ko"][0]
    assert plain["title"] == "Place" and plain["comment"] == ""


def _annotate() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    return at.switch_page("app_pages/annotation/annotate.py").run()


@pytest.mark.slow
def test_the_table_of_spans_shows_the_comment_as_typed_and_the_form_changes_it() -> None:
    store = _project(os.environ["KOED_DB"], [replace(PLACE, comment=COMMENT)])
    at = _annotate()
    for _read in (1, 2):  # settled, and again after another run
        assert not at.exception, [e.value for e in at.exception]
        spans = next(d.value for d in at.dataframe if "comment" in d.value.columns)
        assert list(spans["comment"]) == [COMMENT]
        at.run()
    next(t for t in at.text_area if t.label == "New comment (empty: keep it)").set_value(
        "다시 볼 것"
    )
    next(b for b in at.button if b.label == "Change the span").click().run()
    for _read in (1, 2):
        assert not at.exception and not at.error, [e.value for e in at.error]
        own = store.own(1, DIALOGUE.conv_id, "local")
        assert own is not None and [(s.key, s.comment) for s in own.spans] == [
            (PLACE.key, "다시 볼 것")
        ]
        spans = next(d.value for d in at.dataframe if "comment" in d.value.columns)
        assert list(spans["comment"]) == ["다시 볼 것"]
        at.run()
    next(c for c in at.checkbox if c.label == "Remove its comment").check()
    next(b for b in at.button if b.label == "Change the span").click().run()
    own = store.own(1, DIALOGUE.conv_id, "local")
    assert own is not None and own.spans[0].comment == ""


@pytest.mark.slow
def test_search_finds_a_comment_and_shows_it() -> None:
    store = _project(os.environ["KOED_DB"], [replace(PLACE, comment=COMMENT)], who="kim")
    store.save(1, DIALOGUE, "lee", "simply_transferred", "", [PLACE])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at = at.switch_page("app_pages/annotation/projects.py").run()
    assert not at.exception, [e.value for e in at.exception]
    box = next(t for t in at.text_input if t.label.startswith("Search the annotations"))
    assert "comment" in box.label
    box.set_value("야간").run()  # only in kim's comment
    for _read in (1, 2):
        assert not at.exception, [e.value for e in at.exception]
        found = at.dataframe[-1].value
        assert list(found["annotator"]) == ["kim"], found
        assert list(found["comment"]) == [COMMENT]
        at.run()


@pytest.mark.parametrize(
    "query", ["성차별", "성 차별", " 성  차 별 ", "편의 점", "편의점 앞"], ids=lambda q: q.strip()
)
def test_search_ignores_korean_word_spacing(tmp_path: Path, query: str) -> None:
    """A search for "성 차별" finds what "성차별" finds (spacing ignored): Korean
    word spacing varies between writers, and a span's text keeps the dialogue's."""
    from components.annotation.search import matches

    commented = replace(PLACE, comment="성 차별 아님, 야간 편의점앞 장면")
    store = _project(tmp_path / "koed.db", [commented])
    found = matches(store, 1, load_taxonomy(), query)
    assert list(found["comment"]) == [commented.comment], query
    assert matches(store, 1, load_taxonomy(), "야간 아님").empty  # words still in order
