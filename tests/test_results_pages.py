"""Judge and Agreement pages through AppTest, on a database rated and judged for real."""

from __future__ import annotations

import io
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from fixtures.fake_openai import FakeOpenAI
from koed_core.db import Store
from koed_core.db.jobs import Jobs
from tests.conftest import stop_workers, wait_for_job
from tests.test_judge import _rated_and_judged

ROOT = Path(__file__).resolve().parents[1]
HANGUL = re.compile("[\uac00-\ud7a3]")


def _page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    return at.switch_page(page).run()


def test_agreement_page_explains_what_is_missing() -> None:
    at = _page("app_pages/results/agreement.py")
    assert not at.exception
    assert at.info[0].value.startswith("No human ratings yet")


@pytest.mark.slow
def test_agreement_page_shows_table_heatmap_and_disagreements(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    _rated_and_judged(tmp_path / "koed.db", fake_openai)  # KOED_DB points here (conftest)
    at = _page("app_pages/results/agreement.py")
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert len(table) == 10 and {"alpha_reading", "judge_kappa_reading"} <= set(table.columns)
    assert at.get("plotly_chart")

    def worst() -> pd.DataFrame:  # found by its columns: the alt-test's table sits between
        return next(d.value for d in at.dataframe if "judge_rationale" in d.value.columns)

    assert len(worst()) > 0 and set(worst()["dimension"]) == {"EX"}  # rubric order: EX first
    next(s for s in at.segmented_control if s.label == "Dimension").set_value("ER").run()
    assert set(worst()["dimension"]) == {"ER"}


@pytest.mark.slow
def test_judge_page_judges_a_run(
    fake_registry: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    run_id = _rated_and_judged(tmp_path / "koed.db", fake_openai)
    at = _page("app_pages/models/judge.py")
    assert at.selectbox[0].value == run_id
    at.selectbox[1].set_value("fake-listener")
    at.radio[0].set_value("strict")
    at.multiselect[0].set_value(["EX"])
    try:
        at.button[-1].click().run()  # queued as a job; the page starts a worker process
        assert not at.exception, [e.value for e in at.exception]
        assert at.success[0].value.startswith("Job #1 queued: judge ")
        wait_for_job(Store(tmp_path / "koed.db"), 1)
    finally:
        stop_workers(tmp_path / "koed.db")
    message = Jobs(Store(tmp_path / "koed.db")).get(1).message or ""
    assert "scored, 0 unscored" in message and "0 failed" in message


@pytest.mark.slow
def test_kept_numbers_follow_a_change_made_by_another_process(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The agreement table is kept between clicks, but a rating changed elsewhere (the
    command line, another server process) is in the next table drawn."""
    _rated_and_judged(tmp_path / "koed.db", fake_openai)
    at = _page("app_pages/results/agreement.py")
    before = at.dataframe[0].value.set_index(["dimension", "group"])["judge_bias"]
    other = sqlite3.connect(tmp_path / "koed.db")
    other.execute("update ratings set score = 1 where dimension = 'EX'")
    other.commit()
    other.close()
    at.run()
    after = at.dataframe[0].value.set_index(["dimension", "group"])["judge_bias"]
    assert (after.loc["EX"] != before.loc["EX"]).all()
    assert after.drop("EX").equals(before.drop("EX"))


@pytest.mark.slow
def test_agreement_readings_are_readable_whole(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    """A grid cuts a long reading at its column's width: one row's readings are
    shown in full beneath it, for the row a reader picks, named in the page's language."""
    _rated_and_judged(tmp_path / "koed.db", fake_openai)
    at = _page("app_pages/results/agreement.py")
    table = at.dataframe[0].value
    picker = next(s for s in at.selectbox if s.label == "Read one row's readings in full")
    picker.set_value(table.index[-1]).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = next(t.value for t in at.text if "alpha among raters" in t.value)
    row = table.iloc[-1]
    assert f"alpha among raters: {row['alpha_reading']}" in shown
    assert f"Length baseline: {row['length_reading']}" in shown


@pytest.mark.slow
def test_agreement_readings_are_in_the_readers_language_and_the_csv_in_english(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Korean reader reads every reading in Korean, even after an English reader had the
    same table computed (the kept table is per language); the CSV a script reads stays
    English."""
    _rated_and_judged(tmp_path / "koed.db", fake_openai)
    english = _page("app_pages/results/agreement.py").dataframe[0].value
    downloads: list[bytes] = []
    real = st.download_button

    def spy(label: str, data: bytes | str, *args: object, **kwargs: object) -> object:
        downloads.append(data.encode() if isinstance(data, str) else data)
        return real(label, data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(st, "download_button", spy)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["lang"] = "ko"
    at.run().switch_page("app_pages/results/agreement.py").run()
    assert not at.exception, [e.value for e in at.exception]
    korean = at.dataframe[0].value
    readings = [c for c in korean.columns if c.endswith("_reading")]
    assert len(readings) == 7
    for column in readings:
        assert korean[column].map(HANGUL.search).all(), korean[column].tolist()
        assert not english[column].map(HANGUL.search).any(), english[column].tolist()
    table_csv = next(d for d in downloads if b"alpha_reading" in d)  # not the artefact CSV
    exported = pd.read_csv(io.BytesIO(table_csv))
    assert exported["alpha_reading"].tolist() == english["alpha_reading"].tolist()


@pytest.mark.slow
def test_the_gap_page_computes_its_perception_table_once(
    fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The perception table (seconds on an admin's database) is kept
    between runs of the Gap page like its other tables, not computed on every click."""
    from koed_core.results import perception

    _rated_and_judged(tmp_path / "koed.db", fake_openai)
    calls: list[object] = []
    real = perception.perception_table

    def counted(*args: object, **kwargs: object) -> pd.DataFrame:
        calls.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(perception, "perception_table", counted)
    at = _page("app_pages/results/gap.py")
    at.run()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(calls) == 1
