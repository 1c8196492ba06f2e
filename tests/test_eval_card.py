"""The human-evaluation card (issue 64 item 5): every item from the database with where
it came from, "not recorded" where it holds nothing, in the export and on the dashboard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.planted import planted_store
from koed_core.results import eval_card
from koed_core.results.eval_card_export import write_cards


@pytest.mark.slow
def test_the_card_says_what_is_recorded_and_where_it_came_from(tmp_path: Path) -> None:
    planted = planted_store(tmp_path / "koed.db", dialogues=30, fraction=0.3)
    items = {i.key: i for i in eval_card.card(planted.store, planted.study_id)}
    assert items["raters"].value == 4 and "ratings of study" in items["raters"].source
    assert items["languages"].value["native_korean"] == 2
    assert items["languages"].value["median_years_korea"] == 5.0
    assert items["agreement"].value and "ci_low" in items["agreement"].value[0]
    assert items["judge"].value["judge_model"] == planted.judge.model
    for key in ("consent", "platform", "pay", "ethics", "attention", "exclusions"):
        assert not items[key].recorded, key  # no crowd link, no checks: nothing invented
    readme = tmp_path / "README.md"
    readme.write_text("| file | what |\n", encoding="utf-8")
    written = write_cards(planted.store, tmp_path)
    text = (tmp_path / "human_evaluation.md").read_text(encoding="utf-8")
    assert "| Ethics review | not recorded |" in text and "ARR D4" in text
    cards = json.loads((tmp_path / "human_evaluation.json").read_text(encoding="utf-8"))
    assert cards[0]["study_id"] == planted.study_id
    assert {i["key"]: i["recorded"] for i in cards[0]["items"]}["platform"] is False
    assert all(p.name in readme.read_text(encoding="utf-8") for p in written)


def _card_page(db: str) -> None:
    from unittest import mock

    from components.rating import eval_card_view
    from koed_core.db import Store

    with mock.patch("components.core.resources.store", return_value=Store(db)):
        eval_card_view.render_card(1)


@pytest.mark.slow
def test_the_dashboard_panel_shows_the_card(tmp_path: Path) -> None:
    planted = planted_store(tmp_path / "koed.db", dialogues=30, fraction=0.3)
    at = AppTest.from_function(
        _card_page, kwargs={"db": str(tmp_path / "koed.db")}, default_timeout=60
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    frame = at.dataframe[0].value
    assert len(frame) == len(eval_card.card(planted.store, planted.study_id))
    assert "not recorded" in set(frame["Value"])
