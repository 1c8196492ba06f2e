"""The smaller findings of the crowd audit of release 0.4 (issue 54, item 7), one test each,
each failing on the code before its fix."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.rating import crowd_work, seeded_store, study
from koed_core.cli import main
from koed_core.db import Store, set_clock
from koed_core.rating import crowd
from koed_core.rating.studies import StudyRules

ROOT = Path(__file__).resolve().parents[1]
KEY = b"k" * 32
HANGUL = re.compile(r"[\uac00-\ud7a3]")
PID = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "SESSION_ID": "70bb00000000000000000001"}


@pytest.fixture
def korean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    store, _run = seeded_store(tmp_path / "koed.db")
    return store


def _link(store: Store, langs: tuple[str, ...], **options: object) -> tuple[crowd.Invite, str]:
    run_id = store.rows("select id from runs")[0]["id"]
    _, study_id = study(store, run_id, overlap=1, attention_checks=0, langs=langs)
    settings: dict[str, object] = {
        "platform": "prolific", "days": 7.0, "cap": 1, "batch_size": 2,
        "consent_ko": "동의합니다.", "consent_en": "I agree.", "reward": 2.0,
        "contact": "researcher@example.org",
    }  # fmt: skip
    settings.update(options)
    return crowd.create_invite(store, KEY, study_id, crowd.InviteRequest(**settings))  # type: ignore[arg-type]


def _english_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("components.core.language.browser_language", lambda: "en")


def _visit(token: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["invite"] = token
    for name, value in params.items():
        at.query_params[name] = value
    return at.run()


def test_a_refusal_on_a_korean_only_link_is_korean_whatever_the_browser(
    korean: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _english_browser(monkeypatch)
    invite, token = _link(korean, ("ko",))
    crowd.join(korean, KEY, invite, {**PID, "PROLIFIC_PID": "a" * 24})  # the one place
    at = _visit(token, PID)
    assert not at.exception, [e.value for e in at.exception]
    assert HANGUL.search(at.error[0].value), at.error[0].value  # "full", in Korean
    _both, token_both = _link(korean, ("ko", "en"))
    crowd.join(korean, KEY, _both, {**PID, "PROLIFIC_PID": "b" * 24})
    other = _visit(token_both, PID)
    assert "This study is full" in other.error[0].value  # two languages: the browser's


def test_welcome_back_is_in_the_items_language_and_never_for_someone_finished(
    korean: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _english_browser(monkeypatch)
    invite, token = _link(korean, ("ko",), cap=2)
    worker = crowd.join(korean, KEY, invite, PID)
    crowd.consent(korean, worker, invite)
    langs = crowd.screen(korean, worker, ("ko",), "ko", 0, 0)
    StudyRules(korean).save_profile(crowd.profile_of(worker, "ko", 0, 0, langs))
    back = _visit(token, PID)
    assert not back.exception, [e.value for e in back.exception]
    (toast,) = [t.value for t in back.toast]
    assert HANGUL.search(toast), toast  # a Korean page, a Korean welcome
    StudyRules(korean).mark_calibrated(worker.username)
    worker = crowd.worker_of(korean, worker.username) or worker
    crowd_work(korean, worker, invite, responses=2)
    crowd.finish(korean, worker)
    done = _visit(token, PID)
    assert not done.exception, [e.value for e in done.exception]
    assert [t.value for t in done.toast] == []  # nothing to go on with
    assert invite.completion_code in " ".join(m.value for m in done.markdown)


def test_join_without_an_invite_says_where_it_opens_from(korean: Store) -> None:
    from streamlit.util import calc_hash

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at._page_hash = calc_hash("join")  # the address /join, as a browser asks for it
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "opens from a study's invite link" in " ".join(i.value for i in at.info)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Iterator[Clock]:
    ticking = Clock()
    set_clock(ticking)
    yield ticking
    set_clock(None)


def test_invite_list_names_timed_out_workers_as_timed_out(
    korean: Store, clock: Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    invite, _token = _link(korean, ("ko", "en"), cap=3)
    crowd.join(korean, KEY, invite, PID)
    crowd.join(korean, KEY, invite, {**PID, "PROLIFIC_PID": "c" * 24})
    clock.now += timedelta(minutes=31)  # past the study's 30-minute timeout
    crowd.join(korean, KEY, invite, {**PID, "PROLIFIC_PID": "d" * 24})
    args = ["invite", "list", "--study", str(invite.study_id), "--json", "--db", str(korean.path)]
    assert main(args) == 0
    (link,) = json.loads(capsys.readouterr().out)
    assert link["workers"] == {"timed out": 2, "consent": 1}


def test_an_mturk_end_page_without_mturks_address_says_why_there_is_no_button(
    korean: Store,
) -> None:
    invite, token = _link(korean, ("ko", "en"), platform="mturk")
    ids = {"workerId": "A1B2C3D4E5", "assignmentId": "3AS9XYZ0001", "hitId": "3HIT70000"}
    tampered = {**ids, "turkSubmitTo": "https://evil.example"}
    worker = crowd.join(korean, KEY, invite, ids)
    crowd.remember_submit_to(korean, worker, tampered["turkSubmitTo"])  # ignored
    crowd.consent(korean, worker, invite)
    crowd.screen(korean, worker, ("ko", "en"), "other", 0, 0)  # screened out: a code
    at = _visit(token, {**tampered, "lang": "en"})
    assert not at.exception, [e.value for e in at.exception]
    assert invite.screenout_code in " ".join(m.value for m in at.markdown)
    assert "not opened with MTurk's own return address" in at.warning[0].value


def test_screen_outs_paid_the_reward_are_in_the_pay_figures(korean: Store, clock: Clock) -> None:
    invite, _token = _link(korean, ("ko", "en"), cap=3)
    out = crowd.join(korean, KEY, invite, PID)
    crowd.consent(korean, out, invite)
    clock.now += timedelta(minutes=2)
    crowd.screen(korean, out, ("ko", "en"), "other", 0, 0)
    stopped = crowd.worker_of(korean, out.username) or out
    assert crowd.give_code(korean, stopped, invite) == ("screened_out", invite.screenout_code)
    _rows, summary = crowd.report_rows(korean, invite)
    assert summary["screened_out"] == 1
    assert summary["paid_total"] == 2.0  # the reward, paid to the screen-out too
    assert summary["paid_hourly_pay"] == pytest.approx(2.0 / (2 / 60))
