"""The heavy result tables computed once for every visitor and server process (issue 66,
item 4): one job per table, inputs and change stamp, its progress seen by every visitor,
its result kept in the database."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from koed_core.db import Store
from koed_core.db.jobs import Jobs
from tests.conftest import wait_for_job
from tests.test_judge import _rated_and_judged

ROOT = Path(__file__).resolve().parents[1]
GAP = "app_pages/results/gap.py"
PERCEPTION = "Perception or response: the gap where the emotion was recognised"


def _visitor() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    return at.switch_page(GAP).run()


def _bars(at: AppTest) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


@pytest.mark.slow
def test_two_visitors_share_one_perception_compute(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first visitor's page starts the computation and shows its bar; a second visitor
    meanwhile sees the same job's bar, not a second start; once kept, both read it and a
    third visitor computes nothing."""
    from koed_core.results import perception

    _rated_and_judged(tmp_path / "koed.db", fake_openai)
    monkeypatch.setenv("KOED_SHARED_WAIT_S", "0")  # the bar, not the table, in the first run
    gate = threading.Event()
    calls: list[object] = []
    real = perception.perception_table

    def held(*args: object, **kwargs: object) -> pd.DataFrame:
        calls.append(args)
        gate.wait(timeout=20)  # the computation is under way while the second visitor comes
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(perception, "perception_table", held)
    first = _visitor()
    assert not first.exception, [e.value for e in first.exception]
    assert any("perception split" in bar for bar in _bars(first)), _bars(first)
    second = _visitor()
    assert not second.exception, [e.value for e in second.exception]
    assert any("perception split" in bar for bar in _bars(second)), _bars(second)
    store = Store(tmp_path / "koed.db")
    jobs = [j for j in Jobs(store).active_of("table") if j.params["name"] == "perception"]
    assert len(jobs) == 1 and len(calls) == 1  # one computation for both
    gate.set()
    from koed_core.db.computed_results import ComputedResults

    wait_for_job(store, jobs[0].id)
    assert ComputedResults(store).last_seconds("perception") is not None  # the next estimate
    for visitor in (second.run(), _visitor()):
        assert not visitor.exception, [e.value for e in visitor.exception]
        assert PERCEPTION in [e.label for e in visitor.expander]
        assert not [bar for bar in _bars(visitor) if "perception split" in bar]
    assert len(calls) == 1


@pytest.mark.slow
def test_a_breakdown_is_kept_once_and_equals_the_direct_computation(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The per-label gap, asked on the Gap page, is computed by one table job and kept;
    what the page reads back is the table computed directly, row for row."""
    from koed_core.db.computed_results import ComputedResults
    from koed_core.dialogues.dataset import load_dataset
    from koed_core.paths import SAMPLE_FILE
    from koed_core.results import gaps, shared_tables

    _rated_and_judged(tmp_path / "koed.db", fake_openai)
    at = _visitor()
    at.selectbox(key="gap.breakdown").set_value("per emotion label").run()
    assert not at.exception, [e.value for e in at.exception]
    store = Store(tmp_path / "koed.db")
    ended = [j for j in Jobs(store).recent() if j.kind == "table"]
    breakdown = [j for j in ended if j.params["name"] == "gap_breakdown"]
    assert len(breakdown) == 1 and breakdown[0].state == "finished", breakdown
    params = breakdown[0].params
    judge = shared_tables.judge_of(params["inputs"]["judge"])  # the page's default judge
    assert judge is not None and params["inputs"]["sources"] == ["judge"]
    frame = gaps.score_frame(store, judge, params["inputs"]["study"])  # no accounts: all seen
    frame = frame[frame["source"] == "judge"]
    groups = gaps.label_groups(load_dataset(SAMPLE_FILE).dialogues)
    expected = gaps.gap_table(frame, groups, "label")
    kept = ComputedResults(store).get(
        shared_tables.key("gap_breakdown", params["stamp"], params["inputs"])
    )
    assert kept is not None
    pd.testing.assert_frame_equal(shared_tables.decode(kept), expected)
    at.run()  # read back, not computed again
    assert len([j for j in Jobs(store).recent() if j.params.get("name") == "gap_breakdown"]) == 1


@pytest.mark.slow
def test_the_gap_three_ways_comes_back_as_it_was_kept(tmp_path: Path) -> None:
    """What a page reads back from the database is what was computed: both frames, the
    study's design, the refusal (a sentence) and the provenance, none of it pickled."""
    from fixtures.planted import planted_store
    from koed_core.results import ppi_table, shared_tables

    planted = planted_store(tmp_path / "koed.db", dialogues=30, fraction=0.5)
    inputs = {
        "study": planted.study_id,
        "judge": shared_tables.judge_inputs(planted.judge),
        "hidden": [],
        "lang": "en",
    }
    computed = shared_tables.compute("gap_estimates", planted.store, inputs)
    assert isinstance(computed, ppi_table.GapEstimates)
    payload = shared_tables.encode(computed)
    assert b"pickle" not in payload and not payload.startswith(b"\x80")
    back = shared_tables.decode(payload)
    assert isinstance(back, ppi_table.GapEstimates)
    pd.testing.assert_frame_equal(back.estimates, computed.estimates)
    pd.testing.assert_frame_equal(back.artefact, computed.artefact)
    assert (back.sampling, back.refusal) == (computed.sampling, computed.refusal)
    # the provenance is JSON for the export: equal as JSON (a tuple reads back as a list)
    assert json.dumps(back.provenance) == json.dumps(computed.provenance)


@pytest.mark.slow
def test_a_failed_computation_is_said_and_asked_again_by_a_press(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A computation that fails is said with its reason and a button; the next visitor
    meets the same sentence, not a second computation (no retry loop); the button asks
    again."""
    from koed_core.results import perception

    _rated_and_judged(tmp_path / "koed.db", fake_openai)
    real = perception.perception_table
    broken = {"on": True}

    def flaky(*args: object, **kwargs: object) -> pd.DataFrame:
        if broken["on"]:
            raise RuntimeError("the bootstrap ran out of memory")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(perception, "perception_table", flaky)
    first = _visitor()
    assert not first.exception, [e.value for e in first.exception]
    said = [e.value for e in first.main.error]  # the sidebar's jobs panel lists it too
    assert any("ran out of memory" in text for text in said), said
    second = _visitor()
    assert any("ran out of memory" in e.value for e in second.main.error)
    store = Store(tmp_path / "koed.db")
    tables = [j for j in Jobs(store).recent() if j.params.get("name") == "perception"]
    assert [j.state for j in tables] == ["failed"]  # one try, not one per visitor
    broken["on"] = False
    again = next(b for b in second.button if b.label == "Compute it again")
    again.click().run()
    assert not second.exception, [e.value for e in second.exception]
    assert PERCEPTION in [e.label for e in second.expander]
    assert not [e.value for e in second.main.error if "ran out of memory" in e.value]
