"""A crowd study in the middle, one finding at a time: each test
replays what broke while workers were under way, and fails on the code before the fix.
The state machine in test_crowd_machine.py walks the same rules at random; what it found
is kept here as plain tests."""

# ruff: noqa: F811 - the clock fixture comes from fixtures/clock.py, as pytest finds it

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from fixtures.clock import START, Clock, clock  # noqa: F401 - the fixture is used by name
from fixtures.rating import crowd_work, seeded_store, study
from koed_core.cli import main
from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.judge.rubric import codes
from koed_core.rating import crowd
from koed_core.rating.report import rater_report
from koed_core.rating.studies import StudyRules
from tests.test_crowd import KEY, PROLIFIC, _invite


@pytest.fixture
def crowd_study(tmp_path: Path) -> tuple[Store, int]:
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=1, attention_checks=1, timeout_minutes=30)
    return store, study_id


def _pid(n: int) -> dict[str, str]:
    return {**PROLIFIC, "PROLIFIC_PID": f"{n:024x}", "SESSION_ID": f"{n + 500:024x}"}


def _in(
    store: Store, invite: crowd.Invite, n: int, native: str = "ko", at: datetime | None = None
) -> crowd.Worker:
    """Someone who joined, consented, passed screening and calibration."""
    worker = crowd.join(store, KEY, invite, _pid(n), at=at)
    crowd.consent(store, worker, invite)
    langs = crowd.screen(store, worker, ("ko", "en"), native, 0, 0)
    if langs:
        StudyRules(store).save_profile(crowd.profile_of(worker, native, 0, 0, langs))
        StudyRules(store).mark_calibrated(worker.username)
    return crowd.worker_of(store, worker.username) or worker


def _row(store: Store, invite: crowd.Invite, worker: crowd.Worker) -> dict[str, object]:
    rows, _ = crowd.report_rows(store, invite)
    return next(r for r in rows if r["username"] == worker.username)


def test_no_code_for_attention_checks_alone(crowd_study: tuple[Store, int]) -> None:
    """Finding 2: with every Korean response taken and English ones open, a Korean worker
    was let in, handed a batch of checks only and given the completion code. Now the
    languages they can rate are checked after screening: stopped there with the
    screen-out code (not their doing), before calibration holds a place."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=4)
    first = _in(store, invite, 1)  # a Korean speaker takes every Korean response
    assert crowd_work(store, first, invite, responses=10).count("response") >= 2
    assert not StudyRules(store).room_for_newcomer(study_id, ("ko",))
    assert StudyRules(store).room_for_newcomer(study_id, ("en",))
    late = _in(store, invite, 2)  # Korean too: the English items are not theirs
    assert late.status == "stopped" and late.stop_reason == crowd.NO_ITEMS
    assert crowd.give_code(store, late, invite) == ("screened_out", invite.screenout_code)
    assert crowd.next_item(store, late, invite) is None
    assert _row(store, invite, late)["suggested"] == "screen_out"


def test_checks_are_not_work_anywhere(crowd_study: tuple[Store, int]) -> None:
    """Finding 2: a worker who rated checks only (every response then went to others)
    ends with no completion code; the progress line, the report and the suggestion
    count responses alone."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=4)
    worker = _in(store, invite, 1, native="en")
    rules = StudyRules(store)
    check = rules.next_item(study_id, worker.username, want="attention")  # as before
    assert check is not None and check.instructed_score is not None
    rules.save_rating(
        check.assignment_id, worker.username, dict.fromkeys(codes(), check.instructed_score)
    )
    other = _in(store, invite, 2, native="en")
    crowd_work(store, other, invite, responses=10)  # takes every English response
    assert crowd.next_item(store, worker, invite) is None
    assert crowd.batch_state(store, worker, invite).done == 0
    crowd.finish(store, worker)
    ended = crowd.worker_of(store, worker.username)
    assert ended is not None and ended.status == "stopped"
    assert crowd.give_code(store, ended, invite) != ("completed", invite.completion_code)
    row = _row(store, invite, worker)
    assert (row["rated"], row["checks"]) == (0, 1) and row["suggested"] != "accept"


def test_a_place_comes_back_after_the_timeout_at_any_step(
    crowd_study: tuple[Store, int], clock: Clock
) -> None:
    """Finding 3: someone idle at screening, calibration or rating for hours kept their
    place and replacements were told "This study is full". Prolific: past the maximum
    time "their place will open up to a new participant"; the one who left may go on
    only if not replaced meanwhile."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=2, batch_size=2)
    at_screening = crowd.join(store, KEY, invite, _pid(1))
    crowd.consent(store, at_screening, invite)
    at_calibration = crowd.join(store, KEY, invite, _pid(2))
    crowd.consent(store, at_calibration, invite)
    crowd.screen(store, at_calibration, ("ko", "en"), "ko", 0, 0)
    clock.now += timedelta(minutes=29)
    with pytest.raises(crowd.CrowdError, match="all 2 places are taken"):
        crowd.join(store, KEY, invite, _pid(3))
    clock.now = four_hours = START + timedelta(hours=4)
    frame, _ = crowd.pay_report(store, invite)
    assert set(frame["status"]) == {"timed out"} and set(frame["suggested"]) == {"timed out"}
    assert (frame["idle_min"] >= 239).all() and frame["last_activity"].notna().all()
    assert crowd.places(store, invite).used == 0
    replacement = crowd.join(store, KEY, invite, _pid(3))
    assert not replacement.resumed
    back = crowd.returning(store, invite, _pid(1))  # one place still free: theirs again
    assert back is not None and back.username == at_screening.username
    with pytest.raises(crowd.CrowdError, match="place went to someone else"):
        crowd.returning(store, invite, _pid(2))  # and now none
    held = crowd.worker_of(store, at_screening.username, invite)
    assert held is not None and crowd.places(store, invite).used == 2
    assert four_hours == clock.now


def test_pay_per_hour_is_over_completions_only(crowd_study: tuple[Store, int]) -> None:
    """Finding 4: screen-outs and stops pulled the median down and the pay per hour up
    (71% above the completions-only figure). Prolific pays the reward for completions;
    screen-outs are paid apart, so they are reported apart."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=1, reward=3.0)
    finished = _in(store, invite, 1)
    crowd_work(store, finished, invite, responses=1)
    crowd.finish(store, finished)
    screened = _in(store, invite, 2, native="other")
    for worker in (finished, screened):
        crowd.give_code(store, crowd.worker_of(store, worker.username), invite)  # type: ignore[arg-type]
    minutes = {finished.username: 30, screened.username: 2}
    for username, spent in minutes.items():
        store.db.execute(
            "update crowd_workers set created = ?, completed_at = ? where username = ?",
            [START.isoformat(), (START + timedelta(minutes=spent)).isoformat(), username],
        )
    store.db.conn.commit()
    _, summary = crowd.pay_report(store, invite)
    assert summary["median_min"] == 30 and summary["hourly_pay"] == pytest.approx(6.0)
    assert summary["screened_out"] == 1 and summary["screenout_median_min"] == 2


def test_a_screen_out_is_paid_never_asked_to_return(crowd_study: tuple[Store, int]) -> None:
    """Finding 5: screened-out workers were suggested "replace" and put on the
    return-request list, which asks them to return unpaid. Prolific: a participant
    screened out "will be rewarded for your time to answer screening questions"."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=1)
    screened = _in(store, invite, 1, native="other")
    assert _row(store, invite, screened)["suggested"] == "screen_out"
    assert crowd.accept_suggested(store, invite, "boss") == 1
    files = crowd.decision_files(store, invite)
    assert files["prolific_screen-out.txt"].split() == [_pid(1)["PROLIFIC_PID"]]
    assert files["prolific_return-request.txt"] == ""
    decided = pd.read_csv(io.StringIO(crowd.platform_csv(store, invite)))
    assert decided["decision"].tolist() == ["SCREEN-OUT"]


def test_recording_the_suggestions_again_decides_the_newcomers(
    crowd_study: tuple[Store, int],
) -> None:
    """Found by the state machine: once some workers were decided, the report's decision
    column mixed text and gaps, which pandas 3 reads as NaN (not None), and a second
    "Record all suggested" decided nobody new."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=1)
    _in(store, invite, 1, native="other")
    assert crowd.accept_suggested(store, invite, "boss") == 1
    _in(store, invite, 2, native="other")
    assert crowd.accept_suggested(store, invite, "boss") == 1
    assert len(crowd.decision_files(store, invite)["prolific_screen-out.txt"].split()) == 2


def test_a_straight_liner_fails_the_checks_and_is_flagged(tmp_path: Path) -> None:
    """Finding 6: every check said "choose 2", so answering 2 everywhere passed them all;
    the dashboard and the rater report used two rules. Now the checks ask for different
    scores, one rule decides a check everywhere, and one score everywhere is flagged."""
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=2, timeout_minutes=30)
    invite, _ = _invite(store, study_id, cap=9, batch_size=3, batches=2)
    asked = [
        r["instructed_score"]
        for r in store.rows(
            "select instructed_score from study_items where kind = 'attention' order by id"
        )
    ]
    assert len(set(asked)) > 1 and all(a is not None for a in asked)
    liner = _in(store, invite, 1, native="en")
    crowd_work(store, liner, invite, responses=6, careful=False, score=2)
    careful = _in(store, invite, 2, native="en")
    crowd_work(store, careful, invite, responses=6)
    bad, good = _row(store, invite, liner), _row(store, invite, careful)
    assert bad["straight_lined"] and bad["suggested"] in ("review", "reject")
    assert bad["attention_failed"] >= 1
    assert not good["straight_lined"] and good["attention_failed"] == 0
    report = rater_report(StudyRules(store), study_id).set_index("username")
    checks = store.rows(
        "select count(distinct a.item_id) as n from assignments a join study_items i on "
        "i.id = a.item_id where a.username = ? and i.kind = 'attention' and a.status = 'done'",
        [liner.username],
    )[0]["n"]
    passed = report.loc[liner.username, "attention_pass_rate"]
    assert passed == pytest.approx(1 - bad["attention_failed"] / checks)  # the same rule
    assert report.loc[careful.username, "attention_pass_rate"] == 1.0


def test_a_prolific_attempt_needs_its_session(crowd_study: tuple[Store, int]) -> None:
    """Finding 7: a Prolific join without SESSION_ID later resumed under any SESSION_ID."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=1)
    with pytest.raises(crowd.CrowdError, match="no SESSION_ID"):
        crowd.platform_ids(invite, {**_pid(1), "SESSION_ID": ""})
    # a worker stored without a session (an older link) is matched by no session at all
    worker = crowd.join(store, KEY, invite, {**_pid(2), "SESSION_ID": ""})
    assert worker.username
    with pytest.raises(crowd.CrowdError, match="another Prolific session"):
        crowd.returning(store, invite, _pid(2))


def test_the_command_line_sets_what_the_form_sets(
    crowd_study: tuple[Store, int],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding 8: the CLI could not set the codes, calibration attempts, a live link's cap
    or a study's timeout, and stored a link for a study that does not exist."""
    store, study_id = crowd_study
    db = str(store.path)
    monkeypatch.setenv("KOED_PUBLIC_URL", "https://koed.example")  # a link needs an address
    before = store.count("invites")
    assert main(["invite", "create", "--study", "9", "--platform", "prolific", "--contact", "researcher@example.org",
                 "--places", "3", "--batch-size", "2", "--db", db]) != 0  # fmt: skip
    assert "no study 9" in capsys.readouterr().err
    assert store.count("invites") == before
    assert main(["invite", "create", "--study", str(study_id), "--platform", "prolific", "--contact", "researcher@example.org",
                 "--places", "3", "--batch-size", "2", "--codes", "DONE2026,SCREEN26,FAIL2026",
                 "--calibration-attempts", "3", "--json", "--db", db]) == 0  # fmt: skip
    made = json.loads(capsys.readouterr().out)
    assert made["codes"] == {
        "completed": "DONE2026",
        "screened_out": "SCREEN26",
        "failed_checks": "FAIL2026",
    }
    row = Crowd(store).invite(made["invite"])
    assert row is not None and row["calibration_attempts"] == 3
    # an id never starts like an option ("-Ia..." broke `--invite ID` now and then)
    drawn = iter(["-IaH2VUyuMJy", "_xH2VUyuMJyA", "Q1aH2VUyuMJy"])
    with monkeypatch.context() as patched:
        patched.setattr(crowd.links.secrets, "token_urlsafe", lambda n: next(drawn))
        made_id = crowd.create_invite(
            store,
            KEY,
            study_id,
            crowd.InviteRequest(
                platform="none",
                days=1.0,
                cap=1,
                batch_size=1,
                consent_ko="가",
                consent_en="a",
                contact="researcher@example.org",
            ),
        )[0].id
    assert made_id == "Q1aH2VUyuMJy"
    assert main(["invite", "cap", "--invite", made["invite"], "7", "--db", db]) == 0
    assert "places: 0 / 7" in capsys.readouterr().out
    assert main(["invite", "cap", "--invite", "nope", "7", "--db", db]) != 0
    assert "no invite link 'nope'" in capsys.readouterr().err
    assert main(["invite", "create", "--study", str(study_id), "--platform", "prolific", "--contact", "researcher@example.org",
                 "--places", "3", "--batch-size", "2", "--codes", "ONLY1", "--db", db]) != 0  # fmt: skip
    assert "three codes" in capsys.readouterr().err
    run_id = store.rows("select id from runs")[0]["id"]
    assert main(["study", "create", "--name", "timed", "--runs", run_id, "--timeout-minutes",
                 "90", "--json", "--db", db]) == 0  # fmt: skip
    made_study = json.loads(capsys.readouterr().out)["study"]
    assert StudyRules(store).config(made_study).timeout_minutes == 90


def _page_worker(
    store: Store, study_id: int, monkeypatch: pytest.MonkeyPatch, calibrated: bool = True
) -> tuple[crowd.Invite, str, crowd.Worker]:
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    invite, token = _invite(store, study_id, cap=5, batch_size=3)
    worker = crowd.join(store, KEY, invite, crowd.platform_ids(invite, PROLIFIC))
    crowd.consent(store, worker, invite)
    langs = crowd.screen(store, worker, ("ko", "en"), "ko", 0, 0)
    StudyRules(store).save_profile(crowd.profile_of(worker, "ko", 0, 0, langs))
    if calibrated:
        StudyRules(store).mark_calibrated(worker.username)
    return invite, token, worker


def _open(store: Store, username: str) -> str:
    rows = store.rows(
        "select id from assignments where username = ? and status = 'assigned'", [username]
    )
    return str(rows[0]["id"])


def test_a_second_tabs_submit_is_never_dropped_silently(
    crowd_study: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 8: a worker with two tabs rated the item in one; the other tab's Submit
    then went nowhere and the page moved on without a word. Now that tab says its item
    was finished elsewhere and nothing from it was saved."""
    from tests.test_crowd import _join_page

    store, study_id = crowd_study
    _, token, worker = _page_worker(store, study_id, monkeypatch)
    first = _join_page(store, token, **PROLIFIC)
    second = _join_page(store, token, **PROLIFIC)  # another tab, the same item
    shown = _open(store, worker.username)
    for code in codes():
        second.radio(key=f"crowd.{shown}.{code}").set_value(3)
    second.button[0].click().run()
    assert not second.exception
    assert not any("finished in another tab" in w.value for w in second.warning)
    for code in codes():
        first.radio(key=f"crowd.{shown}.{code}").set_value(5)
    first.button[0].click().run()
    assert not first.exception, [e.value for e in first.exception]
    assert any("finished in another tab" in w.value for w in first.warning)
    kept = store.rows(
        "select distinct score from ratings where username = ? and item_id = "
        "(select item_id from assignments where id = ?)",
        [worker.username, shown],
    )
    assert [r["score"] for r in kept] == [3]  # the first Submit's scores, not overwritten
    first.run()  # the next rerun: the notice was said once
    assert not any("finished in another tab" in w.value for w in first.warning)


def test_calibration_feedback_survives_a_reload(
    crowd_study: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 8: a reload after scoring a calibration item skipped its feedback (the
    comparison with the reference scores). It is stored until the worker clicks Next."""
    from tests.test_crowd import _join_page

    store, study_id = crowd_study
    _, token, worker = _page_worker(store, study_id, monkeypatch, calibrated=False)
    page = _join_page(store, token, **PROLIFIC)
    assert page.subheader[0].value.startswith("Calibration 1 of")
    form = [r for r in page.radio if r.key and r.key.startswith("calibration.")]
    for radio in form:
        radio.set_value(3)
    page.button[0].click().run()
    assert page.dataframe and any(b.label == "Next" for b in page.button)  # the feedback
    reloaded = _join_page(store, token, **PROLIFIC)
    assert not reloaded.exception, [e.value for e in reloaded.exception]
    assert reloaded.subheader[0].value.startswith("Calibration 1 of")
    assert reloaded.dataframe and any(b.label == "Next" for b in reloaded.button)
    next(b for b in reloaded.button if b.label == "Next").click().run()
    assert reloaded.subheader[0].value.startswith("Calibration 2 of")
    again = _join_page(store, token, **PROLIFIC)  # a reload after Next: item 2, no feedback
    assert again.subheader[0].value.startswith("Calibration 2 of") and not again.dataframe
    assert crowd.stored_calibration(store, worker)[0] and worker.username
