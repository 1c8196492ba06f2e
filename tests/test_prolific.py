"""A crowd link run through Prolific's API, against the planted server in
fixtures/fake_prolific.py (built from Prolific's public reference): the client's retries and
call log, the draft and its publishing, a burst with returns, a leaked code, review and a
bonus whose first pay answer is lost, and no token anywhere it could leak."""

# ruff: noqa: F811 - the clock fixture comes from fixtures/clock.py, as pytest finds it

from __future__ import annotations

import math
import shutil
import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from fixtures.clock import START, Clock, clock  # noqa: F401 - the fixture is used by name
from fixtures.fake_prolific import FILTERS, FakeProlific
from fixtures.rating import crowd_work, prolific_link
from koed_core.cli import main
from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.rating import crowd
from koed_core.rating import report as rating_report
from koed_core.rating.crowd import prolific, prolific_bonus, prolific_pay
from koed_core.rating.crowd.prolific_client import ProlificAnswerLost, ProlificClient, ProlificError
from koed_core.rating.studies import StudyRules

KEY = b"k" * 32
TOKEN = "pk-SECRET-7f3a9c1e55d04b2a"


@pytest.fixture
def fake(clock: Clock) -> Iterator[FakeProlific]:
    server = FakeProlific(token=TOKEN, page_size=2).start()
    server.clock = clock  # Prolific's time is the app's injected time
    yield server
    server.stop()


@pytest.fixture
def world(tmp_path: Path, fake: FakeProlific, clock: Clock) -> tuple[Store, crowd.Invite]:
    """A Korean-only study with a Prolific link of 2 places at 2.00 GBP."""
    store, invite = prolific_link(tmp_path / "koed.db", KEY, ("ko",), cap=2, batch_size=2)
    return store, invite


def _client(store: Store, fake: FakeProlific, invite: crowd.Invite, **kw: object) -> ProlificClient:
    waits: list[float] = []
    env = {"PROLIFIC_API_TOKEN": TOKEN, "PROLIFIC_API_URL": fake.base_url}
    client = ProlificClient.from_env(env, store, invite_id=invite.id, sleep=waits.append, **kw)
    client.waits = waits  # type: ignore[attr-defined]
    return client


def _fresh(store: Store, invite: crowd.Invite) -> crowd.Invite:
    return crowd.Invite.from_row(Crowd(store).invite(invite.id) or {})


def _published(store: Store, fake: FakeProlific, invite: crowd.Invite) -> crowd.Invite:
    prolific.publish(
        store, _client(store, fake, invite), invite, KEY, "https://koed.example", go_live=True
    )
    return _fresh(store, invite)


def _arrive(store: Store, fake: FakeProlific, invite: crowd.Invite) -> tuple[dict, crowd.Worker]:  # type: ignore[type-arg]
    """Someone Prolific sends: a submission there, then the app's link opened with the
    three ids Prolific fills in."""
    sub = fake.arrive(str(invite.prolific_study_id))
    params = {
        "PROLIFIC_PID": sub["participant_id"],
        "STUDY_ID": invite.prolific_study_id,
        "SESSION_ID": sub["id"],
    }
    ids = crowd.platform_ids(invite, params, KEY)  # type: ignore[arg-type]
    return sub, crowd.join(store, KEY, invite, ids)


def _finish(
    store: Store, fake: FakeProlific, invite: crowd.Invite, clock: Clock, minutes: float = 12
) -> tuple[dict, crowd.Worker]:  # type: ignore[type-arg]
    """A whole real visit: consent, screening, calibration, two ratings, the code, and back
    to Prolific with it ``minutes`` later."""
    sub, worker = _arrive(store, fake, invite)
    crowd.consent(store, worker, invite)
    langs = crowd.screen(store, worker, ("ko",), "ko", 0, 0)
    StudyRules(store).save_profile(crowd.profile_of(worker, "ko", 0, 0, langs))
    StudyRules(store).mark_calibrated(worker.username)
    worker = crowd.worker_of(store, worker.username) or worker
    clock.now += timedelta(minutes=minutes)
    crowd_work(store, worker, invite, responses=2)
    crowd.finish(store, worker)
    worker = crowd.worker_of(store, worker.username) or worker
    outcome = crowd.give_code(store, worker, invite)
    assert outcome is not None
    fake.submit(sub["id"], outcome[1], minutes=minutes)
    return sub, worker


class Visit(NamedTuple):
    """The link published and live, and one whole visit back on Prolific with its code."""

    store: Store
    invite: crowd.Invite
    sub: dict[str, Any]
    worker: crowd.Worker


@pytest.fixture
def visit(world: tuple[Store, crowd.Invite], fake: FakeProlific, clock: Clock) -> Visit:
    """The bonus and review tests' start: a published link and one finished visit."""
    store, invite = world
    invite = _published(store, fake, invite)
    sub, worker = _finish(store, fake, invite, clock)
    return Visit(store, invite, sub, worker)


def _bonus(
    visit: Visit, fake: FakeProlific, path: Path, **kw: Any
) -> list[prolific_bonus.BonusLine]:
    """``koed prolific bonus --apply`` on ``path``: a new client, as each run makes one."""
    client = _client(visit.store, fake, visit.invite)
    return prolific_bonus.bonus(visit.store, client, visit.invite, path, **kw)


def test_the_client_waits_as_a_429_asks_and_records_each_call(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    client = _client(store, fake, invite)
    fake.throttle("GET", "/api/v1/filters/", retry_after="7")
    names = [f["filter_id"] for f in client.pages("reading filters", "/api/v1/filters/")]
    assert names == [f["filter_id"] for f in FILTERS]  # pages of 2, 2, then 1
    assert client.waits == [7.0]  # type: ignore[attr-defined]
    calls = ProlificLog(store).calls(invite.id)
    assert [(c["status"], c["tries"], c["outcome"]) for c in reversed(calls)] == [
        (200, 2, "ok"),  # the 429, then the answer: one call, two tries
        (200, 1, "ok"),
        (200, 1, "ok"),
    ]
    assert all(c["path"].startswith("/api/v1/filters/") for c in calls)


def test_a_next_page_on_another_host_is_read_from_the_configured_server(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    fake.next_host = "http://attacker.invalid"
    client = _client(store, fake, invite)
    names = [f["filter_id"] for f in client.pages("reading filters", "/api/v1/filters/")]
    assert names == [f["filter_id"] for f in FILTERS]
    assert [r[1] for r in fake.requests] == ["/api/v1/filters/"] * 3


def test_a_bonus_file_with_a_bad_first_line_is_refused(tmp_path: Path) -> None:
    with pytest.raises(crowd.CrowdError, match="line 1"):
        prolific_bonus.read_bonus_file("5f1a2b3c4d5e6f7a8b9c0d1,0.50\n")  # 23 characters
    assert prolific_bonus.read_bonus_file("participant_id,amount\n" + "a" * 24 + ",0.5\n") == {
        "a" * 24: "0.50"
    }


def test_a_retry_after_too_long_is_not_waited_for(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    client = _client(store, fake, invite)
    fake.throttle("GET", "/api/v1/filters/", retry_after="100000")
    with pytest.raises(ProlificError, match="asked to wait 100000") as err:
        list(client.pages("reading filters", "/api/v1/filters/"))
    assert err.value.status == 429 and client.waits == []  # type: ignore[attr-defined]


def test_a_wrong_token_is_one_sentence_without_the_token(
    world: tuple[Store, crowd.Invite],
    fake: FakeProlific,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = world
    monkeypatch.setenv("PROLIFIC_API_TOKEN", "wrong-token-123")
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    assert main(["prolific", "publish", "--invite", invite.id, "--db", str(store.path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refused the API token" in err and "HTTP 401" in err
    assert "wrong-token-123" not in err
    monkeypatch.delenv("PROLIFIC_API_TOKEN")
    assert main(["prolific", "sync", "--invite", invite.id, "--db", str(store.path)]) == 1
    assert "Set PROLIFIC_API_TOKEN" in capsys.readouterr().err


def test_a_reward_under_the_minimum_is_refused_naming_both_figures(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    Crowd(store).store.db.execute("update invites set reward = 0.2 where id = ?", [invite.id])
    cheap = _fresh(store, invite)
    minutes = crowd.estimate(store, cheap)["minutes"]
    assert minutes is not None
    with pytest.raises(crowd.CrowdError) as err:
        prolific.publish(store, _client(store, fake, cheap), cheap, KEY, "https://x.example")
    hourly = 0.2 / (prolific.listed_minutes(minutes) / 60)  # Prolific's whole minutes
    assert f"{hourly:.2f} GBP an hour" in str(err.value)
    assert "minimum of 6.00 GBP an hour" in str(err.value) and "the estimate" in str(err.value)
    assert fake.studies == {}  # nothing created


@pytest.mark.slow
def test_the_draft_carries_the_link_codes_and_filters_and_publishes_only_when_asked(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    draft = prolific.publish(
        store,
        _client(store, fake, invite),
        invite,
        KEY,
        "https://koed.example",
        listing=prolific.StudyListing(actions={"completed": "MANUALLY_REVIEW"}),
    )
    (study_row,) = fake.studies.values()
    assert draft.status == "UNPUBLISHED" and not draft.published
    url = study_row["external_study_url"]
    assert url.startswith(f"https://koed.example/join?invite={crowd.token_for(invite.id, KEY)}")
    for placeholder in ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}"):
        assert placeholder in url
    codes = {c["code"]: (c["code_type"], c["actions"]) for c in study_row["completion_codes"]}
    assert codes == {
        invite.completion_code: ("COMPLETED", [{"action": "MANUALLY_REVIEW"}]),
        invite.screenout_code: ("OTHER", [{"action": "AUTOMATICALLY_APPROVE"}]),
        invite.failed_code: ("FAILED_ATTENTION_CHECK", [{"action": "MANUALLY_REVIEW"}]),
    }
    (group,) = fake.groups.values()
    assert study_row["filters"] == [
        {"filter_id": "first-language", "selected_values": ["17"]},
        {"filter_id": "participant_group_blocklist", "selected_values": [group["id"]]},
    ]
    assert (study_row["reward"], study_row["total_available_places"]) == (200, 2)
    assert study_row["device_compatibility"] == ["desktop"]
    assert draft.cost_cents == round(200 * 2 * 1.4)  # as the calculator answered
    assert _fresh(store, invite).prolific_study_id == study_row["id"]
    again = prolific.publish(
        store,
        _client(store, fake, invite),
        _fresh(store, invite),
        KEY,
        "https://koed.example",
        go_live=True,
    )
    assert len(fake.studies) == 1 and again.study_id == study_row["id"]
    assert study_row["status"] == "ACTIVE" and again.published


@pytest.mark.slow
def test_a_return_frees_its_place_within_one_sync_and_the_next_arrival_gets_it(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    invite = _published(store, fake, invite)
    first_sub, first = _arrive(store, fake, invite)
    second_sub, _second = _arrive(store, fake, invite)
    with pytest.raises(crowd.CrowdError, match="full"):
        _arrive(store, fake, invite)  # the app's 2 places are held
    fake.give_back(first_sub["id"])
    fake.time_out(second_sub["id"])
    report = prolific.sync(store, _client(store, fake, invite), invite)
    assert sorted(report.ended) == sorted(
        [first_sub["participant_id"], second_sub["participant_id"]]
    )
    assert crowd.places(store, invite).used == 0
    _third_sub, third = _arrive(store, fake, invite)  # the next arrival gets a place
    assert third.status == "consent"
    with pytest.raises(crowd.CrowdError, match="returned this study on Prolific"):
        crowd.worker_of(store, first.username, invite)  # their visit has ended
    rows = {r["username"]: r for r in crowd.report_rows(store, invite)[0]}
    assert rows[first.username]["suggested"] == "returned"
    again = prolific.sync(store, _client(store, fake, invite), invite)
    assert again.ended == []  # ended once


@pytest.mark.slow
def test_a_burst_of_arrivals_with_returns_fills_every_place_after_one_sync(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    Crowd(store).set_cap(invite.id, 5)
    invite = _published(store, fake, _fresh(store, invite))
    inside = [_arrive(store, fake, invite) for _ in range(5)]
    for _ in range(4):  # Prolific sends more while places look taken to the app
        with pytest.raises(crowd.CrowdError, match="full"):
            _arrive(store, fake, invite)
    for sub, _worker in inside[:3]:
        fake.give_back(sub["id"])
    report = prolific.sync(store, _client(store, fake, invite), invite)
    assert len(report.ended) == 3 and crowd.places(store, invite).used == 2
    later = [_arrive(store, fake, invite) for _ in range(3)]  # the next three get in
    assert all(w.status == "consent" for _sub, w in later)
    with pytest.raises(crowd.CrowdError, match="full"):
        _arrive(store, fake, invite)  # and no more than the places
    assert crowd.places(store, invite).used == 5


@pytest.mark.slow
def test_a_leaked_code_and_a_far_too_fast_submission_are_flagged_and_places_raised(
    world: tuple[Store, crowd.Invite], fake: FakeProlific, clock: Clock
) -> None:
    store, invite = world
    invite = _published(store, fake, invite)
    _real, _worker = _finish(store, fake, invite, clock, minutes=12)
    leaked = fake.arrive(str(invite.prolific_study_id))  # never opened the app
    fake.submit(leaked["id"], invite.completion_code, minutes=0.5)
    fast_sub, _fast = _finish(store, fake, invite, clock, minutes=12)
    fake.submissions[fast_sub["id"]]["completed_at"] = fake.submissions[fast_sub["id"]][
        "started_at"
    ]  # Prolific saw it back at once
    report = prolific.sync(store, _client(store, fake, invite), invite)
    flags = dict(report.flagged)
    assert flags[leaked["participant_id"]] == (
        f"completion code {invite.completion_code} with no visit in our database"
    )
    assert flags[fast_sub["participant_id"]].startswith("finished in 0.0 minutes on Prolific")
    assert len(flags) == 2
    # The leaked submission holds a Prolific place and none of the app's: one more place.
    assert report.raised_from == 2 and report.places == 3
    study_row = fake.studies[str(invite.prolific_study_id)]
    assert study_row["total_available_places"] == 3
    assert prolific.sync(store, _client(store, fake, invite), invite).flagged == []  # once


@pytest.mark.slow
def test_review_is_a_dry_run_until_applied_and_each_action_happens_once(
    world: tuple[Store, crowd.Invite], fake: FakeProlific, clock: Clock
) -> None:
    store, invite = world
    invite = _published(store, fake, invite)
    good_sub, good = _finish(store, fake, invite, clock)
    bad_sub, bad = _finish(store, fake, invite, clock)
    crowd.decide(store, good.username, "accept", "boss")
    crowd.decide(store, bad.username, "reject", "boss", "scored every reply without reading it")
    client = _client(store, fake, invite)
    prolific.sync(store, client, invite)
    steps = prolific_pay.review_plan(store, invite)
    assert {(s.participant_id, s.action) for s in steps} == {
        (good_sub["participant_id"], "approve"),
        (bad_sub["participant_id"], "reject"),
    }
    assert fake.submissions[good_sub["id"]]["status"] == "AWAITING REVIEW"  # a plan only
    reject = next(s for s in steps if s.action == "reject")
    assert reject.category == "OTHER" and len(reject.message or "") >= 100
    assert "scored every reply without reading it." in (reject.message or "")
    done = prolific_pay.apply_review(client, store, steps)
    assert len(done) == 2
    assert fake.submissions[good_sub["id"]]["status"] == "APPROVED"
    assert fake.submissions[bad_sub["id"]]["status"] == "REJECTED"
    sent = len(fake.requests)
    prolific.sync(store, client, invite)
    later = prolific_pay.review_plan(store, invite)
    assert [s.action for s in later] == [None, None]
    assert prolific_pay.apply_review(client, store, later) == []
    posts = [r for r in fake.requests[sent:] if r[0] == "POST"]
    assert posts == []  # nothing applied twice


@pytest.mark.slow
def test_a_bonus_whose_pay_answer_is_lost_is_paid_once(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    bonus_file = tmp_path / "bonus.csv"
    bonus_file.write_text(f"participant_id,amount\n{sub['participant_id']},0.50\n")
    plan = prolific_bonus.bonus(store, None, invite, bonus_file)
    assert [(b.amount, b.state) for b in plan] == [("0.50", "to pay")] and fake.pay_calls == []
    fake.lose_pay_answers = 1
    first = _bonus(visit, fake, bonus_file)
    assert [b.state for b in first] == ["paying"] and "answer lost" in first[0].note
    assert len(fake.pay_calls) == 1
    second = _bonus(visit, fake, bonus_file)
    assert [b.state for b in second] == ["paid"]
    assert "Prolific now shows this bonus on the submission" in second[0].note
    third = _bonus(visit, fake, bonus_file)
    assert [b.state for b in third] == ["paid"]
    assert len(fake.pay_calls) == 1  # one pay call in all
    assert fake.submissions[sub["id"]]["bonus_payments"] == [50]


@pytest.mark.slow
def test_a_crash_between_paying_and_the_pay_call_never_pays_twice(
    visit: Visit, fake: FakeProlific, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, invite, sub, _ = visit
    bonus_file = tmp_path / "bonus.csv"
    bonus_file.write_text(f"{sub['participant_id']},1.25\n")
    client = _client(store, fake, invite)
    real_call = client.call

    def crash_on_pay(what: str, method: str, path: str, *args: object, **kw: object) -> object:
        if path.endswith("/pay/"):
            raise KeyboardInterrupt  # the process dies before the call leaves
        return real_call(what, method, path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(client, "call", crash_on_pay)
    with pytest.raises(KeyboardInterrupt):
        prolific_bonus.bonus(store, client, invite, bonus_file)
    assert [b["state"] for b in ProlificLog(store).bonuses(invite.id)] == ["paying"]
    after = _bonus(visit, fake, bonus_file)
    assert after[0].state == "paying" and "not sent again" in after[0].note
    assert fake.pay_calls == []  # never sent, and never sent blindly afterwards


def test_the_pay_call_is_not_retried_on_a_server_error(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    client = _client(store, fake, invite)
    with pytest.raises(ProlificError, match="HTTP 404"):
        client.call(
            "paying bonuses",
            "POST",
            "/api/v1/bulk-bonus-payments/" + "0" * 24 + "/pay/",
            safe=False,
        )
    assert [c["tries"] for c in ProlificLog(store).calls(invite.id)] == [1]
    assert issubclass(ProlificAnswerLost, ProlificError)


@pytest.mark.slow
def test_the_whole_life_from_the_command_line_leaves_no_token_behind(
    world: tuple[Store, crowd.Invite],
    fake: FakeProlific,
    clock: Clock,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, invite = world
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    monkeypatch.setenv("KOED_SECRET_KEY", "s" * 64)
    db = ["--invite", invite.id, "--db", str(store.path)]
    assert main(["prolific", "publish", *db, "--url", "https://koed.example"]) == 0
    out = capsys.readouterr().out
    assert "UNPUBLISHED" in out and "560.00" not in out and "5.60 GBP" in out
    assert "a draft: nothing is spent" in out
    assert main(["prolific", "publish", *db, "--publish"]) == 0
    invite = _fresh(store, invite)
    sub, worker = _finish(store, fake, invite, clock)
    crowd.decide(store, worker.username, "accept", "boss")
    assert main(["prolific", "sync", *db]) == 0
    leaked = fake.arrive(str(invite.prolific_study_id))  # holds a Prolific place, none of ours
    fake.submit(leaked["id"], invite.completion_code, minutes=1)
    before = len(fake.requests)
    assert main(["prolific", "review", *db]) == 0
    assert "dry run" in capsys.readouterr().out
    assert {r[0] for r in fake.requests[before:]} == {"GET"}  # a dry run changes nothing
    assert fake.submissions[sub["id"]]["status"] == "AWAITING REVIEW"
    assert main(["prolific", "review", *db, "--apply"]) == 0
    assert fake.submissions[sub["id"]]["status"] == "APPROVED"
    (tmp_path / "b.csv").write_text(f"{sub['participant_id']},0.40\n")
    assert main(["prolific", "bonus", *db, "--file", str(tmp_path / "b.csv"), "--apply"]) == 0
    assert main(["prolific", "calls", *db]) == 0
    printed = capsys.readouterr()
    assert "paid" in printed.out and "POST /api/v1/bulk-bonus-payments/" in printed.out
    assert all(a == f"Token {TOKEN}" for a in fake.authorizations)  # sent only as the header
    export = tmp_path / "out"
    assert (
        main(
            [
                "crowd",
                "decisions",
                "--study",
                str(invite.study_id),
                "--format",
                "prolific",
                "--out",
                str(export),
                "--db",
                str(store.path),
            ]
        )
        == 0
    )
    rows = rating_report.export_rows(StudyRules(store), invite.study_id, KEY)
    leaks = [printed.out, printed.err, caplog.text, repr(rows)]
    leaks += [p.read_text() for p in export.iterdir()]
    for path in Path(store.path).parent.glob("koed.db*"):
        leaks.append(path.read_bytes().decode("latin-1"))
    assert all(TOKEN not in text for text in leaks)


def test_an_old_database_takes_the_prolific_tables(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "data" / "koed-0.1.0.db", old)
    store = Store(old)
    with sqlite3.connect(old) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
    assert {
        "prolific_calls",
        "prolific_submissions",
        "prolific_actions",
        "prolific_bonuses",
    } <= tables
    ProlificLog(store).record_call(
        what="x", method="GET", path="/api/v1/x/", status=200, outcome="ok", tries=1, invite_id=None
    )
    assert store.count("prolific_calls") == 1


def test_the_hourly_pay_is_the_one_prolific_computes_on_whole_minutes(
    world: tuple[Store, crowd.Invite],
) -> None:
    store, invite = world  # 2.00 GBP
    assert prolific.check_reward(invite, 19.8, "estimate") == pytest.approx(6.00)  # not 6.06
    with pytest.raises(crowd.CrowdError, match="for 21.0 minutes.*5.71.*at least 2.10"):
        prolific.check_reward(invite, 20.1, "estimate")  # Prolific lists 21 minutes
    fake = FakeProlific(token=TOKEN).start()
    try:
        draft = prolific.publish(
            store, _client(store, fake, invite), invite, KEY, "https://koed.example"
        )
    finally:
        fake.stop()
    listed = next(iter(fake.studies.values()))["estimated_completion_time"]
    assert draft.listed_minutes == listed and listed == math.ceil(draft.minutes)
    assert draft.hourly == pytest.approx(2.00 / (listed / 60))  # not over the fractional minutes
    assert draft.hourly != pytest.approx(2.00 / (draft.minutes / 60))


@pytest.mark.slow
def test_review_names_what_it_will_not_do_and_a_decision_can_be_recorded_from_the_command_line(
    visit: Visit,
    fake: FakeProlific,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite, sub, worker = visit
    leaked = fake.arrive(str(invite.prolific_study_id))
    fake.submit(leaked["id"], invite.completion_code, minutes=1)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    db = ["--db", str(store.path)]
    review = ["prolific", "review", "--invite", invite.id, *db]
    assert main(review) == 0
    out = capsys.readouterr().out
    assert "will not do (2), and why:" in out and "will do" not in out.replace("will not do", "")
    assert f"{leaked['participant_id']}\tundecided\tflagged: completion code" in out
    assert f"{sub['participant_id']}\tundecided\tno decision recorded yet" in out
    decide = ["crowd", "decide", "--study", str(invite.study_id), *db]
    assert main([*decide, "--worker", sub["participant_id"], "--decision", "reject"]) == 1
    assert "reason" in capsys.readouterr().err
    assert main([*decide, "--worker", "nobody", "--decision", "accept"]) == 1
    assert "no crowd worker 'nobody'" in capsys.readouterr().err
    assert main([*decide, "--worker", sub["participant_id"], "--decision", "accept"]) == 0
    assert f"{worker.username}: accept" in capsys.readouterr().out
    assert (Crowd(store).worker(worker.username) or {})["decided_by"].startswith("command line")
    assert main([*review, "--apply"]) == 0
    out = capsys.readouterr().out
    assert "will do (1):" in out and f"approved {sub['participant_id']}" in out
    assert fake.submissions[sub["id"]]["status"] == "APPROVED"
    assert fake.submissions[leaked["id"]]["status"] == "AWAITING REVIEW"  # never approved
    assert main([*review, "--apply"]) == 0
    out = capsys.readouterr().out
    assert "nothing was sent to Prolific" in out and "already done (approve)" in out
