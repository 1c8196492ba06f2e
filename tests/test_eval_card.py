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
    assert items["raters"].value == 4 and "ratings of study" in items["raters"].source.say()
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


def _worker(store, invite, n: int, native: str = "ko", abroad: float = 0):  # type: ignore[no-untyped-def]
    """Someone who joined from Prolific, consented and (a native speaker) passed screening
    and calibration; returns them as they are now."""
    from koed_core.rating import crowd
    from koed_core.rating.studies import StudyRules
    from tests.test_crowd import KEY, PROLIFIC

    ids = {**PROLIFIC, "PROLIFIC_PID": f"{n:024x}", "SESSION_ID": f"{n + 500:024x}"}
    worker = crowd.join(store, KEY, invite, ids)
    crowd.consent(store, worker, invite)
    langs = crowd.screen(store, worker, ("ko", "en"), native, 0, abroad)
    if langs:
        StudyRules(store).save_profile(crowd.profile_of(worker, native, 0, abroad, langs))
        StudyRules(store).mark_calibrated(worker.username)
    return crowd.worker_of(store, worker.username) or worker


def _finished(store, invite, worker, responses: int = 2):  # type: ignore[no-untyped-def]
    from fixtures.rating import crowd_work
    from koed_core.rating import crowd

    crowd_work(store, worker, invite, responses)
    crowd.finish(store, worker)
    crowd.give_code(store, crowd.worker_of(store, worker.username), invite)


def _ended_on_prolific(store, worker, status: str, event: str) -> None:  # type: ignore[no-untyped-def]
    from koed_core.db.crowd import Crowd
    from koed_core.rating.crowd import prolific_hooks

    row = Crowd(store).worker(worker.username) or {}
    body = {
        "event_type": "submission.status.change",
        "resource_id": row["session_ref"],
        "status": status,
        "participant_id": row["worker_id"],
    }
    prolific_hooks.apply(store, event, json.dumps(body).encode())


@pytest.mark.slow
def test_the_card_counts_each_kind_of_exclusion_apart_with_its_reason(tmp_path: Path) -> None:
    """A Prolific study whose workers went every way the crowd flow has: accepted,
    rejected, two told attention checks failed, screened out, calibration failed,
    returned and timed out on Prolific, timed out in the app, one still rating. Each kind
    is counted apart with its reason and its workers' ratings the numbers still hold;
    the accepted and the active worker are not excluded."""
    from datetime import UTC, datetime, timedelta

    from fixtures.rating import crowd_work, seeded_store, study
    from koed_core.db import set_clock
    from koed_core.rating import crowd
    from tests.test_crowd import _invite

    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    moment = [start]
    set_clock(lambda: moment[0])
    try:
        store, run_id = seeded_store(tmp_path / "koed.db")
        _, study_id = study(store, run_id, overlap=9, attention_checks=2, timeout_minutes=30)
        invite, _ = _invite(store, study_id, cap=20, batch_size=8)
        kept, rejected = _worker(store, invite, 1), _worker(store, invite, 2)
        for worker in (kept, rejected):
            _finished(store, invite, worker)
        crowd.decide(store, kept.username, "accept", "boss")
        crowd.decide(store, rejected.username, "reject", "boss", "the same score on every item")
        told = {r["instructed_score"] for r in store.rows("select * from study_items")}
        never = next(s for s in range(1, 6) if s not in told)
        careless = _worker(store, invite, 3, abroad=10)  # rates both: meets a check in each
        crowd_work(store, careless, invite, 8, careful=False, score=never)
        screened = _worker(store, invite, 4, native="fr")
        crowd.decide(store, screened.username, "screen_out", "boss")
        far = _worker(store, invite, 5)
        crowd.check_calibration(store, far, [3.0, 2.5])
        for n, status in ((6, "RETURNED"), (7, "TIMED-OUT")):
            _ended_on_prolific(store, _worker(store, invite, n), status, f"event-{n}")
        idle = _worker(store, invite, 8)
        crowd_work(store, idle, invite, 1)
        moment[0] = start + timedelta(minutes=45)
        active = _worker(store, invite, 9)  # joined just now: under way, not excluded
        items = {i.key: i for i in eval_card.card(store, study_id)}
    finally:
        set_clock(None)
    value = items["exclusions"].value
    assert value["workers"] == 9 and value["excluded"] == 7, value
    found = {(k["kind"], k["reason"]): k for k in value["kinds"]}
    assert set(found) == {
        ("failed_attention", "attention"),
        ("screened_out", "screening"),
        ("rejected", "admin"),
        ("stopped", "calibration"),
        ("returned", "returned_prolific"),
        ("timed_out", "timed_out_prolific"),
        ("timed_out", "timed_out_app"),
    }, found
    assert all(k["workers"] == 1 for k in value["kinds"])
    assert found[("rejected", "admin")]["said"] == "the same score on every item"
    assert found[("rejected", "admin")]["ratings"] > 0  # still in the numbers: said so
    assert found[("screened_out", "screening")]["decision"] == "screen_out"
    assert found[("timed_out", "timed_out_app")]["ratings"] > 0
    assert active.username not in str(value)
    text = eval_card.show_value("exclusions", value)
    assert "rejected (the admin's written reason: “the same score on every item”)" in text
    assert "timed out (inactive past the study's timeout" in text
