"""Runs are told apart by one label, the same in every picker, table, job and export.

Two runs per model (single on six dialogues, direct on three): each picker offers four
different labels, and picking each one acts on that run and no other.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from koed_core.db import Runs, Store
from koed_core.db.jobs import JobError, Jobs
from koed_core.dialogues.dataset import load_dataset
from koed_core.models.backends import make_client
from koed_core.models.client import GenerationSettings
from koed_core.models.registry import ModelSpec
from koed_core.models.request import RunRequest
from koed_core.models.runs import run_benchmark, run_labels
from koed_core.paths import SAMPLE_FILE
from koed_core.rating.accounts import add_user

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def four_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, list[str]]:
    """fake-good and fake-bad (the human reference under two names), each run twice."""
    db = tmp_path / "koed.db"
    monkeypatch.setenv("KOED_DB", str(db))
    store = Store(db)
    dataset = load_dataset(SAMPLE_FILE)
    run_ids = []
    for name in ("fake-good", "fake-bad"):
        spec = ModelSpec(name=name, backend="human")
        for protocol, count in (("single", 6), ("direct", 3)):
            report = run_benchmark(
                store,
                make_client(spec),
                spec,
                dataset.dialogues[:count],
                dataset.sha256,
                RunRequest(spec.name, langs=("ko", "en"), protocol=protocol),
            )
            run_ids.append(report.run_id)
    return store, run_ids


def test_every_run_has_its_own_label(four_runs: tuple[Store, list[str]]) -> None:
    store, run_ids = four_runs
    labels = run_labels(store)
    assert sorted(labels) == sorted(run_ids) and len(set(labels.values())) == 4
    good_single = labels[run_ids[0]]
    assert good_single.startswith("fake-good · single · paper prompts · en+ko · 6 dialogues · ")
    assert "fake-bad · direct · native prompts · en+ko · 3 dialogues" in labels[run_ids[3]]


def _judge_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    return at.switch_page("app_pages/models/judge.py").run()


@pytest.mark.slow
def test_the_judge_page_judges_the_run_that_was_picked(
    four_runs: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run_ids = four_runs
    labels = run_labels(store)
    monkeypatch.setattr("components.models.jobs_panel.ensure_worker", lambda store: False)
    at = _judge_page()
    options = at.selectbox[0].options
    assert sorted(options) == sorted(labels.values())  # four labels, no two alike
    for position, run_id in enumerate(reversed(run_ids)):  # newest first
        at = _judge_page()
        at.selectbox[0].set_value(run_id)
        at.selectbox[1].set_value("human")
        start = next(b for b in at.button if b.label == "Start as a background job")
        start.click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, [e.value for e in at.error]
        job = Jobs(store).get(position + 1)
        assert job.params["run_id"] == run_id
        assert labels[run_id] in job.label, (position, job.label)
        assert labels[run_id] in at.success[0].value.replace("\\", "")


@pytest.mark.slow
def test_the_judge_form_asks_the_request_which_template_fits_the_mode(
    four_runs: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Strict mode reads with its own template: the authors' (which has no strict form) is
    refused in the reader's words and nothing is queued; fenced, strict mode's own, is
    queued as asked. The rule is JudgeRequest's, as ``koed judge`` applies it."""
    from components.core import state

    store, run_ids = four_runs
    monkeypatch.setattr("components.models.jobs_panel.ensure_worker", lambda store: False)
    asked = []
    for template in ("authors", "fenced"):
        at = _judge_page()
        at.selectbox[0].set_value(run_ids[0])
        at.selectbox[1].set_value("human")
        at.radio[0].set_value("strict")
        at.selectbox(key=state.JUDGE_TEMPLATE).set_value(template)
        next(b for b in at.button if b.label == "Start as a background job").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        asked.append([w.value for w in at.warning])
    assert asked[0] and "Strict mode has its own template" in asked[0][0], asked
    assert asked[1] == [], asked
    job = Jobs(store).get(1)  # the fenced one only
    assert job.params["mode"] == "strict" and job.params["template"] == "fenced"
    with pytest.raises(JobError):  # and no other
        Jobs(store).get(2)


@pytest.mark.slow
def test_the_studies_page_offers_each_run(
    four_runs: tuple[Store, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = four_runs
    add_user(tmp_path / "users.yaml", "boss", "admin", "Boss", "boss-password")
    monkeypatch.setenv("KOED_USERS", str(tmp_path / "users.yaml"))
    monkeypatch.setenv("KOED_COOKIE_KEY", "c" * 40)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["authentication_status"] = True
    at.session_state["username"] = "boss"
    at.run()
    at.switch_page("app_pages/rating/studies.py").run()
    assert sorted(at.multiselect[0].options) == sorted(run_labels(store).values())


def test_a_run_with_no_answer_yet_names_the_languages_it_asked_for(tmp_path: Path) -> None:
    from koed_core.models.runs import run_config

    store = Store(tmp_path / "koed.db")
    spec = ModelSpec(name="waiting", backend="human")
    config = run_config(spec, "direct", GenerationSettings(), "sha")
    run_id = Runs(store).ensure_run(config, spec.name, ["ko", "en"])
    assert "waiting · direct · native prompts · en+ko · 0 dialogues" in run_labels(store)[run_id]


@pytest.mark.slow
def test_the_judge_form_asks_at_the_temperature_given_or_the_modes(
    four_runs: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge's temperature is a setting of its configuration: the form takes one
    (0.3 here) and, left empty, says the mode's and asks at it (stored as None)."""
    from components.core import state

    store, run_ids = four_runs
    monkeypatch.setattr("components.models.jobs_panel.ensure_worker", lambda store: False)
    for position, temperature in enumerate((0.3, None)):
        at = _judge_page()
        at.selectbox[0].set_value(run_ids[position])
        at.selectbox[1].set_value("human")
        box = at.number_input(key=state.JUDGE_TEMPERATURE)
        assert box.value is None and "paper mode" in (box.placeholder or "")
        box.set_value(temperature)
        next(b for b in at.button if b.label == "Start as a background job").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert Jobs(store).get(position + 1).params["temperature"] == temperature
    assert "T=0.3" in Jobs(store).get(1).label
