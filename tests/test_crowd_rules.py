"""A crowd study that runs to the end unattended, by the platforms' own rules.

Each test replays what went wrong when a real Prolific or MTurk study met ours: places
that never came back, one person as several raters, codes for nothing, the MTurk path.
"""

from __future__ import annotations

import io
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from fixtures.rating import crowd_work, seeded_store, study
from koed_core.cli import main
from koed_core.db import Runs, Store
from koed_core.db.crowd import Crowd
from koed_core.judge.rubric import codes
from koed_core.rating import crowd
from koed_core.rating.studies import StudyConfig, StudyRules
from tests.test_crowd import KEY, PROLIFIC, _invite, _rate_batch

CODES = codes()


@pytest.fixture
def crowd_study(tmp_path: Path) -> tuple[Store, int]:
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=1, timeout_minutes=30)
    return store, study_id


def _pid(n: int) -> dict[str, str]:
    return {**PROLIFIC, "PROLIFIC_PID": f"{n:024x}", "SESSION_ID": f"{n + 500:024x}"}


def test_places_come_back_from_everyone_not_under_way(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=2)
    start = datetime.now(UTC)
    screened = crowd.join(store, KEY, invite, _pid(1), at=start)
    crowd.screen(store, screened, ("ko", "en"), "other", 0, 0)  # qualifies for nothing
    left = crowd.join(store, KEY, invite, _pid(2), at=start)  # opens consent, walks away
    working = crowd.join(store, KEY, invite, _pid(3), at=start)
    crowd.screen(store, working, ("ko", "en"), "ko", 30, 0)
    with pytest.raises(crowd.CrowdError, match="all 2 places are taken"):
        crowd.join(store, KEY, invite, _pid(4), at=start)
    crowd.seen(store, working, at=start + timedelta(minutes=20))  # still at work
    later = start + timedelta(minutes=31)  # the study's timeout: the consent page was left
    assert str(crowd.places(store, invite, at=later)) == "places: 1 / 2 (2 freed)"
    newcomer = crowd.join(store, KEY, invite, _pid(4), at=later)
    assert not newcomer.resumed
    with pytest.raises(crowd.CrowdError, match="place went to someone else"):  # too late
        crowd.join(store, KEY, invite, _pid(2), at=later)
    crowd.decide(store, working.username, "replace", "boss")  # returned on the platform
    assert crowd.join(store, KEY, invite, _pid(2), at=later).username == left.username
    crowd.set_cap(store, crowd.Invite.from_row(Crowd(store).invite(invite.id) or {}), 3)
    raised = crowd.Invite.from_row(Crowd(store).invite(invite.id) or {})
    assert crowd.places(store, raised, at=later).cap == 3
    crowd.join(store, KEY, raised, _pid(5), at=later)
    with pytest.raises(crowd.CrowdError, match="between 1 and 100,000"):
        crowd.set_cap(store, raised, 0)


def test_ids_are_checked_as_the_platforms_issue_them(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, prolific_study_id=PROLIFIC["STUDY_ID"])
    with pytest.raises(crowd.CrowdError, match="PROLIFIC_PID is not a Prolific id"):
        crowd.platform_ids(invite, {**PROLIFIC, "PROLIFIC_PID": "worker42"})
    with pytest.raises(crowd.CrowdError, match="another Prolific study"):
        crowd.platform_ids(invite, {**PROLIFIC, "STUDY_ID": "61" * 12})
    ids = crowd.platform_ids(invite, PROLIFIC)
    first = crowd.join(store, KEY, invite, ids)
    assert crowd.join(store, KEY, invite, ids).username == first.username  # same session
    with pytest.raises(crowd.CrowdError, match="another Prolific session"):
        crowd.join(store, KEY, invite, {**ids, "SESSION_ID": "72" * 12})
    with pytest.raises(crowd.CrowdError, match="another Prolific session"):
        crowd.returning(store, invite, {**ids, "SESSION_ID": ""})
    with pytest.raises(crowd.CrowdError, match="24 hexadecimal"):
        _invite(store, study_id, prolific_study_id="my-study")

    turk, _ = _invite(store, study_id, platform="mturk")
    hit = {"workerId": "A1WORKER0001", "assignmentId": "3ASSIGN000001", "hitId": "3HIT0001"}
    crowd.join(store, KEY, turk, crowd.platform_ids(turk, hit))
    with pytest.raises(crowd.CrowdError, match="another HIT assignment"):
        crowd.join(store, KEY, turk, {**hit, "assignmentId": "3ASSIGN000002"})
    preview = {**hit, "assignmentId": crowd.MTURK_PREVIEW}
    assert crowd.mturk_preview(turk, preview) and not crowd.mturk_preview(invite, preview)
    assert crowd.mturk_submit("https://workersandbox.mturk.com/") == (
        "https://workersandbox.mturk.com/mturk/externalSubmit"
    )
    assert crowd.mturk_submit("https://evil.example/mturk") is None


def test_a_researchers_own_list_gives_each_person_their_own_link(
    crowd_study: tuple[Store, int],
) -> None:
    store, study_id = crowd_study
    invite, token = _invite(store, study_id, platform="none")
    links = crowd.personal_links(KEY, invite, token, ["p01", "p02", ""])
    assert list(links) == ["p01", "p02"]
    mine = dict(pair.split("=", 1) for pair in links["p01"].split("&"))
    assert crowd.platform_ids(invite, mine, KEY) == {"worker": "p01"}
    for forged in ({**mine, "worker": "p02"}, {"worker": "p03"}, {**mine, "sig": "0" * 16}):
        with pytest.raises(crowd.CrowdError, match="This link is personal"):
            crowd.platform_ids(invite, forged, KEY)
    with pytest.raises(crowd.CrowdError, match="ids repeat"):
        crowd.personal_links(KEY, invite, token, ["p01", "p01"])
    with pytest.raises(crowd.CrowdError, match="characters ids do not use"):
        crowd.personal_links(KEY, invite, token, ["=cmd|x"])


def test_nothing_is_paid_for_nothing(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=2)
    rules = StudyRules(store)
    flagger = crowd.join(store, KEY, invite, _pid(1))
    crowd.consent(store, flagger, invite)
    langs = crowd.screen(store, flagger, ("ko", "en"), "ko", 30, 0)
    rules.save_profile(crowd.profile_of(flagger, "ko", 30, 0, langs))
    rules.mark_calibrated(flagger.username)
    while (item := rules.next_item(study_id, flagger.username)) is not None:
        rules.set_aside(item.assignment_id, flagger.username, "flagged", "broken")
    crowd.finish(store, flagger)
    ended = crowd.worker_of(store, flagger.username)
    assert ended is not None and ended.status == "stopped"
    # flagging everything is no work, and not the study's doing either: no completion
    # code and no paid screen-out, but the failed-checks code and a person's review
    assert crowd.give_code(store, ended, invite) == ("failed_checks", invite.failed_code)
    frame, _ = crowd.pay_report(store, invite)
    row = frame.set_index("username").loc[flagger.username]
    assert row["rated"] == 0 and row["flag_share"] == 1.0 and row["suggested"] == "review"
    assert row["code_given"] == invite.failed_code != invite.completion_code

    full, _ = _invite(store, study_id, cap=50, batch_size=20)
    for n in range(2, 5):  # three raters fill every item up to the overlap of 3
        worker = crowd.join(store, KEY, full, _pid(n))
        langs = crowd.screen(store, worker, ("ko", "en"), "ko", 30, 30)
        rules.save_profile(crowd.profile_of(worker, "ko", 30, 30, langs))
        while (item := rules.next_item(study_id, worker.username)) is not None:
            rules.save_rating(item.assignment_id, worker.username, dict.fromkeys(CODES, 1))
    assert not rules.room_for_newcomer(study_id)
    joined = Crowd(store).joined(full.id)
    with pytest.raises(crowd.CrowdError, match="nothing left for you to rate"):
        crowd.join(store, KEY, full, _pid(9))
    assert Crowd(store).joined(full.id) == joined  # told before consent: no place taken


def test_each_outcome_has_its_own_code(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=1)
    assert len({invite.completion_code, invite.screenout_code, invite.failed_code}) == 3
    screened = crowd.join(store, KEY, invite, _pid(1))
    crowd.screen(store, screened, ("ko", "en"), "other", 0, 0)
    far = crowd.join(store, KEY, invite, _pid(2))
    crowd.check_calibration(store, far, [3.0, 3.0])
    done = crowd.join(store, KEY, invite, _pid(3))
    langs = crowd.screen(store, done, ("ko", "en"), "ko", 30, 0)
    StudyRules(store).save_profile(crowd.profile_of(done, "ko", 30, 0, langs))
    _rate_batch(store, done, invite, 1)
    crowd.finish(store, done)
    shown = {
        w.username: crowd.give_code(store, crowd.worker_of(store, w.username), invite)  # type: ignore[arg-type]
        for w in (screened, far, done)
    }
    assert shown == {
        screened.username: ("screened_out", invite.screenout_code),
        far.username: ("failed_checks", invite.failed_code),
        done.username: ("completed", invite.completion_code),
    }
    frame, _ = crowd.pay_report(store, invite)
    assert dict(zip(frame["username"], frame["code_kind"], strict=True)) == {
        u: kind for u, (kind, _) in shown.items()
    }
    with pytest.raises(crowd.CrowdError, match="must differ"):
        _invite(store, study_id, completion_code="SAME1", screenout_code="SAME1")
    with pytest.raises(crowd.CrowdError, match="upper-case letters"):
        _invite(store, study_id, completion_code="<b>x</b>")


def test_decisions_in_each_platforms_bulk_format(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=9, batch_size=1)
    good, bad, gone = (crowd.join(store, KEY, invite, _pid(n)) for n in (1, 2, 3))
    for worker in (good, bad):
        langs = crowd.screen(store, worker, ("ko", "en"), "ko", 30, 0)
        StudyRules(store).save_profile(crowd.profile_of(worker, "ko", 30, 0, langs))
        _rate_batch(store, worker, invite, 1)
        crowd.finish(store, worker)
    crowd.screen(store, gone, ("ko", "en"), "other", 0, 0)
    assert crowd.accept_suggested(store, invite, "boss") == 3  # accept, accept, screen out
    crowd.decide(store, bad.username, "reject", "boss", "Rated the check item 5 on all")
    files = crowd.decision_files(store, invite)
    assert files["prolific_approve.txt"].split() == [_pid(1)["PROLIFIC_PID"]]
    assert files["prolific_reject.txt"].split() == [_pid(2)["PROLIFIC_PID"]]
    # screened out is paid (the screen-out code's action), never asked to return unpaid
    assert files["prolific_screen-out.txt"].split() == [_pid(3)["PROLIFIC_PID"]]
    assert files["prolific_return-request.txt"].split() == []
    reasons = pd.read_csv(io.StringIO(files["prolific_reject_reasons.csv"]))
    assert reasons["reason"].tolist() == ["Rated the check item 5 on all"]

    turk, _ = _invite(store, study_id, platform="mturk", cap=3)
    hit = {"workerId": "A1WORKER0001", "assignmentId": "3ASSIGN000001", "hitId": "3HIT0001"}
    worker = crowd.join(store, KEY, turk, hit)
    crowd.decide(store, worker.username, "reject", "boss", "Answered before reading")
    results = pd.read_csv(io.StringIO(crowd.decision_files(store, turk)["mturk_results.csv"]))
    assert list(results.columns) == ["AssignmentId", "WorkerId", "Approve", "Reject"]
    assert results.iloc[0].fillna("").tolist() == [
        "3ASSIGN000001",
        "A1WORKER0001",
        "",
        "Answered before reading",
    ]


def test_a_crowd_study_from_the_command_line(
    crowd_study: tuple[Store, int],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, _ = crowd_study
    run_id = Runs(store).runs()["run_id"].iloc[0]
    db = ["--db", store.path]
    monkeypatch.setenv("KOED_PUBLIC_URL", "https://koed.example")  # a link needs an address
    assert main(["study", "create", "--name", "cli", "--runs", run_id, "--json", *db]) == 0, (
        capsys.readouterr().err
    )
    study_id = json.loads(capsys.readouterr().out)["study"]
    made_config = StudyRules(store).config(study_id)
    assert made_config.name == "cli"
    for name in ("overlap", "attention_checks", "timeout_minutes", "seed"):  # one default each
        assert getattr(made_config, name) == StudyConfig.default(name), name
    assert main(["study", "create", "--name", "x", "--runs", "nope", *db]) == 1
    assert "no stored run 'nope'" in capsys.readouterr().err
    made = [
        "invite", "create", "--study", str(study_id), "--platform", "prolific", "--contact", "researcher@example.org",
        "--places", "4", "--batch-size", "2", "--reward", "1.5", "--json", *db,
    ]  # fmt: skip
    assert main(made) == 0
    out = json.loads(capsys.readouterr().out)
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in out["url"] and set(out["codes"]) == set(
        crowd.OUTCOMES
    )
    minutes = out["estimate"]["minutes"]
    listed = math.ceil(minutes)  # a Prolific link's hourly rate is Prolific's: whole minutes
    assert 2 < minutes < 60 and out["estimate"]["hourly_pay"] == pytest.approx(1.5 / (listed / 60))
    invite = crowd.Invite.from_row(Crowd(store).invite(out["invite"]) or {})
    crowd.join(store, KEY, invite, _pid(1))
    assert main(["invite", "list", "--study", str(study_id), "--json", *db]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert (
        listed[0]["used"] == 1 and listed[0]["cap"] == 4 and listed[0]["workers"] == {"consent": 1}
    )
    people = tmp_path / "people.txt"
    people.write_text("p01\np02\n")
    personal = ["invite", "create", "--study", str(study_id), "--platform", "none", "--contact", "researcher@example.org",
                "--places", "2", "--batch-size", "2", "--people", str(people), "--json", *db]  # fmt: skip
    assert main(personal) == 0
    assert set(json.loads(capsys.readouterr().out)["links"]) == {"p01", "p02"}
    crowd.decide(store, crowd.worker_name(KEY, study_id, "prolific", _pid(1)["PROLIFIC_PID"]),
                 "accept", "boss")  # fmt: skip
    out_dir = tmp_path / "decisions"
    decisions = ["crowd", "decisions", "--study", str(study_id), "--format", "prolific"]
    assert main([*decisions, "--out", str(out_dir), *db]) == 0
    approve = next(out_dir.glob("*-prolific_approve.txt")).read_text().split()
    assert approve == [_pid(1)["PROLIFIC_PID"]]
    assert main([*decisions[:-1], "mturk", "--out", str(out_dir), *db]) == 1
    assert "no mturk invite link" in capsys.readouterr().err


def _calibrate(at: object, score: int) -> None:
    """Score one calibration item on every dimension, then go to the next."""
    for radio in at.radio:  # type: ignore[attr-defined]
        radio.set_value(score)
    at.button[0].click().run()  # type: ignore[attr-defined]
    next(b for b in at.button if b.label == "Next").click().run()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_calibration_counts_its_attempts_and_a_reload_is_not_one(
    crowd_study: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_crowd import _join_page

    store, study_id = crowd_study
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    invite, token = _invite(store, study_id, calibration_attempts=2, batch_size=1)
    ids = _pid(7)
    worker = crowd.join(store, KEY, invite, ids)
    crowd.consent(store, worker, invite)
    crowd.screen(store, worker, ("ko", "en"), "en", 0, 30)  # English items only
    at = _join_page(store, token, **ids)
    assert at.subheader[0].value == "Calibration 1 of 2"
    _calibrate(at, 3)  # the references are 5/4/4/5/5 and 1/1/1/1/2: 3 is far from both
    reloaded = _join_page(store, token, **ids)  # a new browser session: no fresh attempt
    assert reloaded.subheader[0].value == "Calibration 2 of 2"
    _calibrate(reloaded, 3)
    assert not reloaded.exception, [e.value for e in reloaded.exception]
    assert crowd.stored_calibration(store, worker) == ([], 1)  # attempt 1 failed: one more
    assert reloaded.subheader[0].value == "Calibration 1 of 2"
    assert "calibration again" in reloaded.info[0].value
    _calibrate(reloaded, 3)
    _calibrate(reloaded, 3)
    ended = crowd.worker_of(store, worker.username)
    assert ended is not None and ended.status == "stopped"
    assert invite.failed_code in " ".join(m.value for m in reloaded.markdown)


def test_only_a_check_that_said_what_to_do_can_reject(crowd_study: tuple[Store, int]) -> None:
    """An attention item tells the rater what to choose, in Korean and English; not doing
    it is a failure; an older check that said nothing is a reason to review at most."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=5, batch_size=14)
    rules = StudyRules(store)
    worker = crowd.join(store, KEY, invite, _pid(1))
    langs = crowd.screen(store, worker, ("ko", "en"), "ko", 30, 30)  # both languages
    rules.save_profile(crowd.profile_of(worker, "ko", 30, 30, langs))
    seen = []
    while (item := rules.next_item(study_id, worker.username)) is not None:
        seen.append((item.instruction, item.instructed_score))
        rules.save_rating(item.assignment_id, worker.username, dict.fromkeys(CODES, 5))
    told = [(text, score) for text, score in seen if text]
    assert told and all(
        f"모든 항목에 {score}점을" in text and f"choose {score} on every dimension" in text
        for text, score in told
    )
    asked = [score for _, score in told]  # the asked scores vary: 5 everywhere fails some
    assert len(set(asked)) == len(asked) > 1
    failed = crowd.attention_failures(store, study_id, worker.username)
    assert failed == len(asked) - asked.count(5)
    store.db.execute("update study_items set instruction = null where kind = 'attention'")
    store.db.conn.commit()  # as a study built before checks said what to do
    assert crowd.attention_failures(store, study_id, worker.username) == 0
    assert crowd.untold_failures(store, study_id, worker.username) == len(told)
    frame, _ = crowd.pay_report(store, invite)
    assert frame["suggested"].tolist() == ["review"]  # never "reject" on an untold check


def test_the_pay_estimate_grows_with_the_work(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    small, _ = _invite(store, study_id, batch_size=2, reward=2.0)
    large, _ = _invite(store, study_id, batch_size=4, batches=2, reward=2.0)
    one, eight = crowd.estimate(store, small), crowd.estimate(store, large)
    assert one["minutes"] is not None and eight["minutes"] is not None
    per_item = (eight["minutes"] - one["minutes"]) / 6  # six more items
    assert 0.6 < per_item < 3  # reading a short dialogue and scoring five dimensions
    assert one["minutes"] > crowd.SETUP_MIN + 4 * 0.5  # calibration is part of the visit
    assert eight["hourly_pay"] < one["hourly_pay"]  # the same reward for more work


def test_the_visit_cookie_is_signed_and_ends_with_the_visit(
    crowd_study: tuple[Store, int],
) -> None:
    store, study_id = crowd_study
    invite, token = _invite(store, study_id)
    worker = crowd.join(store, KEY, invite, _pid(1))
    cookie = crowd.visit_cookie(KEY, worker.username, token)
    assert crowd.read_visit_cookie(store, KEY, cookie) == (worker.username, token)
    other = crowd.visit_cookie(KEY, "crowd-000000000000", token)
    flipped = cookie[:-1] + ("1" if cookie.endswith("0") else "0")
    for forged in (flipped, other.replace("crowd-000000000000", worker.username), ""):
        assert crowd.read_visit_cookie(store, KEY, forged) is None
    assert crowd.read_visit_cookie(store, b"x" * 32, cookie) is None  # another server's key
    crowd.screen(store, worker, ("ko", "en"), "other", 0, 0)  # the visit ends
    assert crowd.read_visit_cookie(store, KEY, cookie) is None  # the app opens again


def test_every_batch_holds_its_attention_checks(tmp_path: Path) -> None:
    """One check per language in the study, three batches of two responses: each batch
    has a check in it, on top of its two responses (new checks, not the same one again,
    and never the last item of a batch: a batch ends on real work)."""
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=1, langs=("en",))
    invite, _ = _invite(store, study_id, cap=3, batch_size=2, batches=3)
    assert store.count("study_items") == 6 + 3  # six answers, a check per batch
    rules = StudyRules(store)
    worker = crowd.join(store, KEY, invite, _pid(1))
    langs = crowd.screen(store, worker, ("en",), "en", 0, 30)
    rules.save_profile(crowd.profile_of(worker, "en", 0, 30, langs))
    kinds = crowd_work(store, worker, invite, responses=6)
    assert crowd.batch_state(store, worker, invite).finished
    assert kinds == ["response", "attention", "response"] * 3, kinds
    checks = store.rows(
        "select distinct a.item_id from assignments a join study_items i on i.id = a.item_id "
        "where a.username = ? and i.kind = 'attention'",
        [worker.username],
    )
    assert len(checks) == 3


def test_a_batch_larger_than_the_study_ends_with_what_there_is(
    crowd_study: tuple[Store, int],
) -> None:
    """Batches of 20 in a study with a few Korean answers and a check: the worker is told
    "n of m" with m what there is for them, not 20, and is done (with the completion
    code) after the last."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, batch_size=20)
    rules = StudyRules(store)
    worker = crowd.join(store, KEY, invite, _pid(1))
    langs = crowd.screen(store, worker, ("ko", "en"), "ko", 30, 0)  # Korean items only
    rules.save_profile(crowd.profile_of(worker, "ko", 30, 0, langs))
    there = store.rows(
        "select count(*) as n from study_items where study_id = ? and lang = 'ko'", [study_id]
    )[0]["n"]
    responses = store.rows(
        "select count(*) as n from study_items where study_id = ? and lang = 'ko' and "
        "kind = 'response'",
        [study_id],
    )[0]["n"]
    assert there > responses > 1  # the study has a Korean check too, which is not work
    assert crowd.batch_state(store, worker, invite).batch_size == responses
    crowd_work(store, worker, invite, responses=20)
    state = crowd.batch_state(store, worker, invite)
    assert (state.in_batch, state.batch_size, state.finished) == (responses, responses, True)
    crowd.finish(store, worker)
    ended = crowd.worker_of(store, worker.username)
    assert crowd.give_code(store, ended, invite) == ("completed", invite.completion_code)  # type: ignore[arg-type]


def test_a_study_is_built_by_name_never_by_position() -> None:
    """Eleven values in a row were read by position: one moved (the seed before the
    timeout) made another setting, silently. Only names are taken now."""
    with pytest.raises(TypeError):
        StudyConfig("pilot", ("run",), ("ko", "en"), 3, 2)  # type: ignore[misc]
    made = StudyConfig(name="pilot", run_ids=("run",))
    assert (made.overlap, made.attention_checks) == (3, 2)
    assert StudyConfig.default("timeout_minutes") == 30
    with pytest.raises(KeyError):
        StudyConfig.default("run_ids")  # no default: it must be given
