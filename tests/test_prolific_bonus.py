"""Bonuses through the planted Prolific (fixtures/fake_prolific.py): a bonus is "paid" only
on evidence of its own payment, a definite refusal leaves it unpaid and the next run pays
it, a lost answer leaves it "paying" and it is never sent again, a lost set-up is said so,
and nothing is ever paid twice. The state machine at the end drives many bonuses through
lost, refused, late and delayed answers at random and checks those rules after every step
(the table of states and moves is in docs/rating.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fixtures.fake_prolific import FakeProlific
from fixtures.rating import ExampleStore, crowd_work, live_prolific_link, template_db
from koed_core.cli import main
from koed_core.db import Store
from koed_core.db.prolific import BonusMove, ProlificLog
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific_bonus
from koed_core.rating.crowd.prolific_client import ProlificClient
from koed_core.rating.studies import StudyRules
from tests.test_prolific import (  # noqa: F401 - the fixtures are used by name
    KEY,
    TOKEN,
    Clock,
    Visit,
    _bonus,
    _client,
    _finish,
    clock,
    fake,
    visit,
    world,
)


def _bonus_file(tmp_path: Path, lines: dict[str, str], name: str = "bonus.csv") -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{who},{amount}\n" for who, amount in lines.items()))
    return path


def _states(store: Store, invite: crowd.Invite, round_: str = "1") -> list[str]:
    return [b["state"] for b in ProlificLog(store).bonuses(invite.id, round_)]


@pytest.mark.slow
@pytest.mark.parametrize("status", [400, 401, 429])
def test_a_refused_pay_call_is_unpaid_with_its_reason_and_the_next_apply_pays_it(
    visit: Visit, fake: FakeProlific, tmp_path: Path, status: int
) -> None:
    store, invite, sub, _ = visit
    path = _bonus_file(tmp_path, {sub["participant_id"]: "0.50"})
    client = _client(store, fake, invite)
    # a 429 is retried (Prolific did nothing) until the tries run out; a 400 or 401 is not
    fake.pay_refusals.extend([status] * (client.tries if status == 429 else 1))
    first = prolific_bonus.bonus(store, client, invite, path)
    assert [b.state for b in first] == ["set_up"]
    assert "not paid" in first[0].note and "next --apply tries again" in first[0].note
    assert f"HTTP {status}" in first[0].note or "limiting requests" in first[0].note
    assert fake.pay_calls == [] and fake.submissions[sub["id"]]["bonus_payments"] == []
    # the reason is kept for the next look (a dry run reads it from the database)
    dry = prolific_bonus.bonus(store, None, invite, path)
    assert dry[0].state == "set_up" and dry[0].note == first[0].note
    second = _bonus(visit, fake, path)
    assert [(b.state, b.sent_now) for b in second] == [("paid", True)]
    assert "paid now" in second[0].note
    assert fake.submissions[sub["id"]]["bonus_payments"] == [50]
    assert len(fake.pay_calls) == 1


@pytest.mark.slow
def test_an_earlier_bonus_of_the_same_amount_never_confirms_a_later_one(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    path = _bonus_file(tmp_path, {sub["participant_id"]: "0.50"})
    assert _states(store, invite) == []
    _bonus(visit, fake, path)
    assert _states(store, invite) == ["paid"]
    fake.pay_later, fake.lose_pay_answers = True, 1  # round 2: sent, answer lost, not yet shown
    lost = _bonus(visit, fake, path, round_="2")
    assert [b.state for b in lost] == ["paying"] and "answer lost" in lost[0].note
    again = _bonus(visit, fake, path, round_="2")
    assert [b.state for b in again] == ["paying"]  # round 1's 0.50 proves nothing
    assert "does not show the bonus" in again[0].note and "not sent again" in again[0].note
    assert len(fake.pay_calls) == 2
    fake.settle_payments()  # Prolific carries it out, minutes later
    done = _bonus(visit, fake, path, round_="2")
    assert [(b.state, b.sent_now) for b in done] == [("paid", False)]
    assert fake.submissions[sub["id"]]["bonus_payments"] == [50, 50]
    assert len(fake.pay_calls) == 2  # one pay call per round, never a third


@pytest.mark.slow
def test_a_pay_call_that_paid_and_then_answered_500_is_never_paid_again(
    visit: Visit, fake: FakeProlific, clock: Clock, tmp_path: Path
) -> None:
    """The state machine's find: a 500 taken as a refusal, and Prolific paying minutes
    later, paid everyone in the bulk payment twice."""
    store, invite, first_sub, _ = visit
    second_sub, _w2 = _finish(store, fake, invite, clock)
    path = _bonus_file(
        tmp_path, {first_sub["participant_id"]: "1.00", second_sub["participant_id"]: "1.00"}
    )
    fake.pay_then_fail, fake.pay_later = 1, True
    first = _bonus(visit, fake, path)
    assert {b.state for b in first} == {"paying"}
    assert all("server error" in b.note and "not sent again" in b.note for b in first)
    rerun = _bonus(visit, fake, path)
    assert {b.state for b in rerun} == {"paying"} and len(fake.pay_calls) == 1
    fake.settle_payments()
    settled = _bonus(visit, fake, path)
    assert {b.state for b in settled} == {"paid"}
    assert len(fake.pay_calls) == 1 and set(fake.paid_per_person().values()) == {1}


@pytest.mark.slow
def test_a_500_that_paid_nothing_is_paid_once_the_researcher_releases_it(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    who = sub["participant_id"]
    path = _bonus_file(tmp_path, {who: "0.50"})
    fake.pay_refusals.append(500)
    first = _bonus(visit, fake, path)
    assert [b.state for b in first] == ["paying"] and fake.pay_calls == []
    assert "--release" in first[0].note
    with pytest.raises(crowd.CrowdError, match="not in the bonus file"):
        prolific_bonus.bonus(store, None, invite, path, release=frozenset({"f" * 24}))
    released = _bonus(visit, fake, path, release=frozenset({who}))
    assert [b.state for b in released] == ["paid"] and len(fake.pay_calls) == 1
    assert fake.submissions[sub["id"]]["bonus_payments"] == [50]


@pytest.mark.slow
def test_a_lost_set_up_is_said_and_the_next_apply_pays_a_new_one_once(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    path = _bonus_file(tmp_path, {sub["participant_id"]: "0.75"})
    fake.lose_setup_answers = 1
    lost = _bonus(visit, fake, path)
    assert [b.state for b in lost] == ["planned"]
    assert "may hold an unpaid set-up" in lost[0].note and "pays nothing" in lost[0].note
    set_ups = [r for r in fake.requests if r[1] == "/api/v1/submissions/bonus-payments/"]
    assert len(set_ups) == 1  # not sent again in the same run
    again = _bonus(visit, fake, path)
    assert [b.state for b in again] == ["paid"]
    assert len(fake.bulk_bonuses) == 2 and len(fake.pay_calls) == 1
    assert fake.submissions[sub["id"]]["bonus_payments"] == [75]


@pytest.mark.slow
def test_a_refused_set_up_stays_planned_with_its_reason_and_the_next_apply_sets_it_up(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    path = _bonus_file(tmp_path, {sub["participant_id"]: "0.30"})
    client = _client(store, fake, invite)
    for _ in range(client.tries):  # still limited after every wait: a definite refusal
        fake.throttle("POST", "/api/v1/submissions/bonus-payments/")
    refused = prolific_bonus.bonus(store, client, invite, path)
    assert [b.state for b in refused] == ["planned"] and fake.bulk_bonuses == {}
    assert "refused the set-up" in refused[0].note and "not paid" in refused[0].note
    again = _bonus(visit, fake, path)
    assert [b.state for b in again] == ["paid"] and len(fake.pay_calls) == 1


@pytest.mark.slow
def test_a_submission_that_cannot_be_read_before_paying_leaves_the_bonus_unpaid(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    path = _bonus_file(tmp_path, {sub["participant_id"]: "0.30"})
    client = _client(store, fake, invite)
    for _ in range(client.tries):
        fake.throttle("GET", f"/api/v1/submissions/{sub['id']}/")
    unread = prolific_bonus.bonus(store, client, invite, path)
    assert [b.state for b in unread] == ["set_up"] and fake.pay_calls == []
    assert "could not read the submission" in unread[0].note
    assert "could not be checked afterwards" in unread[0].note
    again = _bonus(visit, fake, path)
    assert [b.state for b in again] == ["paid"] and len(fake.pay_calls) == 1


@pytest.mark.slow
def test_a_late_pay_answer_stays_paying_and_the_next_run_settles_it_from_the_submission(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    path = _bonus_file(tmp_path, {sub["participant_id"]: "0.50"})
    fake.slow_pay_s = 0.6
    slow = prolific_bonus.bonus(store, _client(store, fake, invite, timeout_s=0.2), invite, path)
    assert [b.state for b in slow] == ["paying"]
    fake.slow_pay_s = 0.0
    settled = _bonus(visit, fake, path)
    assert [b.state for b in settled] == ["paid"] and len(fake.pay_calls) == 1


@pytest.mark.slow
def test_a_second_amount_for_the_same_round_is_refused_before_anything_is_sent(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    _bonus(visit, fake, _bonus_file(tmp_path, {sub["participant_id"]: "0.50"}))
    sent = len(fake.requests)
    other = _bonus_file(tmp_path, {sub["participant_id"]: "0.80"}, "other.csv")
    with pytest.raises(crowd.CrowdError, match="another round"):
        _bonus(visit, fake, other)
    assert len(fake.requests) == sent


@pytest.mark.slow
def test_a_rerun_from_the_command_line_says_it_sent_nothing(
    visit: Visit,
    fake: FakeProlific,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite, sub, _ = visit
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    path = _bonus_file(tmp_path, {sub["participant_id"]: "0.40"})
    args = ["prolific", "bonus", "--invite", invite.id, "--db", str(store.path)]
    fake.pay_refusals.append(400)
    assert main([*args, "--file", str(path), "--apply"]) == 0
    out = capsys.readouterr().out
    assert "set_up" in out and "not paid" in out and "paid now" not in out
    assert main([*args, "--file", str(path), "--apply"]) == 0
    out = capsys.readouterr().out
    assert "paid now" in out and "nothing was sent" not in out
    posts = len([r for r in fake.requests if r[0] == "POST"])
    assert main([*args, "--file", str(path), "--apply"]) == 0
    out = capsys.readouterr().out
    assert "paid earlier" in out and "nothing was sent to Prolific" in out
    assert "paid now" not in out
    assert len([r for r in fake.requests if r[0] == "POST"]) == posts


@pytest.mark.slow
def test_a_bonus_left_paying_by_an_earlier_version_is_never_sent_again(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    path = _bonus_file(tmp_path, {sub["participant_id"]: "0.50"})
    log = ProlificLog(store)
    log.plan_bonuses(invite.id, "1", {sub["participant_id"]: "0.50"})
    log.set_bonus_state(
        invite.id, "1", [sub["participant_id"]], "paying", move=BonusMove(bulk_id="b" * 24)
    )
    lines = _bonus(visit, fake, path)
    assert [b.state for b in lines] == ["paying"] and "earlier version" in lines[0].note
    assert fake.pay_calls == []


# The state machine: any order of files, faults and Prolific's own delays.

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PEOPLE = 3


class Bonuses(ExampleStore, RuleBasedStateMachine):
    """Rounds of bonuses to three people; every pay call may be refused, answered late,
    lost after paying, or carried out minutes later. After every step: no line of a bulk
    payment is paid twice, no round pays anyone twice, a "paid" bonus was paid by
    Prolific, and money Prolific paid is never recorded as unpaid."""

    def __init__(self) -> None:
        super().__init__()
        self.open_store(template_db(overlap=1, attention_checks=0, langs=("ko",)), START)
        self.fake = FakeProlific(token=TOKEN, page_size=5).start()
        self.invite = live_prolific_link(self.store, KEY, self.client(), PEOPLE)
        self.people = [self._visit() for _ in range(PEOPLE)]
        self.rounds: dict[str, dict[str, str]] = {}

    def teardown(self) -> None:
        self.fake.stop()
        self.close_store()

    def client(self, timeout_s: float = 5.0) -> ProlificClient:
        env = {"PROLIFIC_API_TOKEN": TOKEN, "PROLIFIC_API_URL": self.fake.base_url}
        return ProlificClient.from_env(
            env, self.store, sleep=lambda s: None, timeout_s=timeout_s, tries=2
        )

    def _visit(self) -> str:
        sub = self.fake.arrive(str(self.invite.prolific_study_id))
        params = {
            "PROLIFIC_PID": sub["participant_id"],
            "STUDY_ID": str(self.invite.prolific_study_id),
            "SESSION_ID": sub["id"],
        }
        worker = crowd.join(
            self.store, KEY, self.invite, crowd.platform_ids(self.invite, params, KEY)
        )
        crowd.consent(self.store, worker, self.invite)
        langs = crowd.screen(self.store, worker, ("ko",), "ko", 0, 0)
        StudyRules(self.store).save_profile(crowd.profile_of(worker, "ko", 0, 0, langs))
        StudyRules(self.store).mark_calibrated(worker.username)
        worker = crowd.worker_of(self.store, worker.username) or worker
        self.now += timedelta(minutes=12)
        crowd_work(self.store, worker, self.invite, responses=1)
        crowd.finish(self.store, worker)
        worker = crowd.worker_of(self.store, worker.username) or worker
        given = crowd.give_code(self.store, worker, self.invite)
        assert given is not None
        self.fake.submit(sub["id"], given[1], minutes=12)
        return str(sub["participant_id"])

    @rule(
        round_=st.sampled_from(["1", "2"]),
        who=st.sets(st.integers(0, PEOPLE - 1), min_size=1),
        cents=st.sampled_from([50, 100]),
    )
    def write_a_file(self, round_: str, who: set[int], cents: int) -> None:
        """A round's file names some people (a round keeps the amounts it was given)."""
        lines = self.rounds.setdefault(round_, {})
        for i in who:
            lines.setdefault(self.people[i], f"{cents / 100:.2f}")

    @precondition(lambda self: bool(self.rounds))
    @rule(
        round_=st.sampled_from(["1", "2"]),
        fault=st.sampled_from(
            ["none", "refused", "throttled", "lost", "late", "paid_then_500", "setup_lost"]
        ),
        later=st.booleans(),
    )
    def apply(self, round_: str, fault: str, later: bool) -> None:
        lines = self.rounds.get(round_)
        if not lines:
            return
        path = self.folder / f"round{round_}.csv"
        path.write_text("".join(f"{p},{a}\n" for p, a in lines.items()))
        self.fake.pay_later = later
        timeout = 5.0
        if fault == "refused":
            self.fake.pay_refusals.append(503)
            self.fake.pay_refusals.append(503)
        elif fault == "throttled":
            self.fake.pay_refusals.extend([429, 429])
        elif fault == "lost":
            self.fake.lose_pay_answers = 1
        elif fault == "late":
            self.fake.slow_pay_s, timeout = 0.3, 0.1
        elif fault == "paid_then_500":
            self.fake.pay_then_fail = 1
        elif fault == "setup_lost":
            self.fake.lose_setup_answers = 1
        result = prolific_bonus.bonus(
            self.store, self.client(timeout), self.invite, path, round_=round_
        )
        self.fake.pay_refusals.clear()
        self.fake.lose_pay_answers = self.fake.pay_then_fail = self.fake.lose_setup_answers = 0
        self.fake.slow_pay_s = 0.0
        assert {b.participant_id for b in result} == set(lines)
        assert all(b.state in prolific_bonus.BONUS_STATES for b in result)

    @rule()
    def prolific_carries_out_payments(self) -> None:
        self.fake.settle_payments()

    @invariant()
    def nothing_is_paid_twice(self) -> None:
        assert all(n == 1 for n in self.fake.paid_per_person().values())
        bulk_of = {
            (b["round"], b["participant_id"]): b["bulk_id"]
            for b in ProlificLog(self.store).bonuses(self.invite.id)
        }
        paid_rounds: dict[tuple[str, str], int] = {}
        for bulk_id, who in self.fake.paid_per_person():
            for (round_, person), bulk in bulk_of.items():
                if person == who and bulk == bulk_id:
                    paid_rounds[(round_, who)] = paid_rounds.get((round_, who), 0) + 1
        assert all(n == 1 for n in paid_rounds.values())

    @invariant()
    def paid_means_prolific_paid_and_paid_money_is_never_unpaid(self) -> None:
        paid_lines = self.fake.paid_per_person()
        for b in ProlificLog(self.store).bonuses(self.invite.id):
            prolific_paid = (b["bulk_id"], b["participant_id"]) in paid_lines
            if b["state"] == "paid":
                assert prolific_paid, b
            if prolific_paid:
                assert b["state"] in ("paying", "paid"), b


TestBonuses = pytest.mark.slow(Bonuses.TestCase)
TestBonuses.settings = settings(
    max_examples=20,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
