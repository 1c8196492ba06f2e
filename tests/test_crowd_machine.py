"""A live crowd study as a state machine: many workers on one Prolific link, interleaved at
random by Hypothesis, against the real store, with the study's rules checked after every
step. The moves are those of docs/rating.md's "A worker's life": join, consent, screen,
calibrate, rate, flag, idle past the timeout, come back (a reload or a new browser), a
second tab, finish and the admin's decisions. Time passes through an injected clock.

Prolific's rules the invariants hold us to (researcher help, as of 2026):
- timed-out submissions: if participants go over the maximum time "their submission could
  be Timed out, and their place will open up to a new participant"; they "can still
  complete their submission ... if they are still active on the study and are not
  replaced by another participant before they complete";
- in-study screening: a participant screened out "will be rewarded for your time to answer
  screening questions" (paid, never a return request or a rejection);
- fair attention checks: a participant may be rejected only for failing checks that told
  them what to do, and only for more than one.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from fixtures.rating import ExampleStore, prolific_request, template_db
from koed_core.db.crowd import Crowd
from koed_core.judge.rubric import codes
from koed_core.rating import crowd
from koed_core.rating.studies import StudyRules

KEY = b"m" * 32
TIMEOUT = 30
CAP = 3
STUDY_ID = "60aa00000000000000000001"
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
BEHAVIOURS = ("careful", "careful", "straight", "careless", "unskilled")
"""How a person rates: as told and reading each reply; one score everywhere; 5 everywhere
(fails the checks); far from the calibration references."""


class Person:
    """What the test knows of one person: the ids the platform gave them and how they
    behave; the store knows the rest."""

    def __init__(self, n: int, behaviour: str, native: str = "ko") -> None:
        self.ids = {
            "PROLIFIC_PID": f"{0x5F000000 + n:08x}" + "0" * 16,
            "STUDY_ID": STUDY_ID,
            "SESSION_ID": f"{0x6A000000 + n:08x}" + "1" * 16,
        }
        self.behaviour = behaviour
        self.native = native
        self.username: str | None = None
        self.rated = 0

    def __repr__(self) -> str:
        return f"Person({self.ids['PROLIFIC_PID'][:8]}, {self.behaviour})"


class CrowdStudy(ExampleStore, RuleBasedStateMachine):
    """Workers arrive, work, leave and come back in any order; the rules hold throughout."""

    people = Bundle("people")

    def __init__(self) -> None:
        super().__init__()
        options = {"overlap": 2, "attention_checks": 1, "timeout_minutes": TIMEOUT}
        self.open_store(template_db(**options), START)
        self.invite, _ = crowd.create_invite(
            self.store,
            KEY,
            1,
            prolific_request(CAP, 2, days=30.0, batches=2, reward=2.0, prolific_study_id=STUDY_ID),
        )
        self.rules = StudyRules(self.store)
        self.count = 0

    def teardown(self) -> None:
        self.close_store()

    # Helpers --------------------------------------------------------------------------

    def worker(self, person: Person) -> crowd.Worker | None:
        if person.username is None:
            return None
        return crowd.worker_of(self.store, person.username)

    def under_way(self, person: Person, status: str) -> crowd.Worker | None:
        """The person's worker if they are at this step and still hold their place (a
        person whose place went must come back first)."""
        worker = self.worker(person)
        if worker is None or worker.status != status:
            return None
        last = Crowd(self.store).last_activity(worker.username) or ""
        if last < self.cutoff():
            return None
        return worker

    def cutoff(self) -> str:
        return (self.now - timedelta(minutes=TIMEOUT)).isoformat(timespec="seconds")

    # Moves ----------------------------------------------------------------------------

    @initialize()
    def opened(self) -> None:
        assert crowd.places(self.store, self.invite).used == 0

    @rule(
        target=people,
        behaviour=st.sampled_from(BEHAVIOURS),
        native=st.sampled_from(["ko", "ko", "en", "other"]),
    )
    def arrive(self, behaviour: str, native: str) -> Person:
        """Someone opens the link from Prolific: in, or told why not (before any place)."""
        self.count += 1
        person = Person(self.count, behaviour, native)
        ids = crowd.platform_ids(self.invite, person.ids, KEY)
        before = Crowd(self.store).joined(self.invite.id)
        try:
            worker = crowd.join(self.store, KEY, self.invite, ids)
        except crowd.CrowdError as err:
            assert "full" in str(err) or "nothing left" in str(err), err
            assert Crowd(self.store).joined(self.invite.id) == before  # no place taken
            return person
        person.username = worker.username
        return person

    @rule(person=people, steps=st.integers(1, 12))
    def work(self, person: Person, steps: int) -> None:
        """The person takes their next steps, whatever their state, as they would."""
        for _ in range(steps):
            worker = self.worker(person)
            if worker is None or worker.status not in crowd.UNDER_WAY:
                return
            last = Crowd(self.store).last_activity(worker.username) or ""
            if last < self.cutoff():  # away too long: they come back first
                self.come_back(person)
                continue
            if worker.status == "consent":
                self.consent(person)
            elif worker.status == "screening":
                self.screen(person, person.native)
            elif not self.rules.calibrated(worker.username):
                self.calibrate(person, person.behaviour != "unskilled")
            else:
                self.rate(person)

    def consent(self, person: Person) -> None:
        worker = self.under_way(person, "consent")
        if worker is not None:
            crowd.consent(self.store, worker, self.invite)

    def screen(self, person: Person, native: str) -> None:
        worker = self.under_way(person, "screening")
        if worker is None:
            return
        langs = crowd.screen(self.store, worker, ("ko", "en"), native, 0, 0)
        if langs:
            profile = crowd.profile_of(worker, native, 0, 0, langs)
            self.rules.save_profile(profile)
            # admitted only while the languages they can rate have responses left
            assert self.rules.has_work(1, worker.username, "response")

    def calibrate(self, person: Person, passes: bool) -> None:
        worker = self.under_way(person, "rating")
        if worker is None or self.rules.calibrated(worker.username):
            return
        if crowd.check_calibration(self.store, worker, [0.5] if passes else [3.0]):
            self.rules.mark_calibrated(worker.username)

    def rate(self, person: Person) -> None:
        """The next item, scored as this person scores; none left ends the visit."""
        worker = self.under_way(person, "rating")
        if worker is None or not self.rules.calibrated(worker.username):
            return
        if crowd.batch_state(self.store, worker, self.invite).finished:
            crowd.finish(self.store, worker)
            return
        item = crowd.next_item(self.store, worker, self.invite)
        if item is None:
            crowd.finish(self.store, worker)
            return
        again = crowd.next_item(self.store, worker, self.invite)  # a second tab
        assert again is not None and again.assignment_id == item.assignment_id
        if person.behaviour in ("careful", "unskilled"):
            score = item.instructed_score or 3 + person.rated % 3
        elif person.behaviour == "straight":
            score = 2
        else:
            score = 5
        self.rules.save_rating(item.assignment_id, worker.username, dict.fromkeys(codes(), score))
        person.rated += item.instructed_score is None
        crowd.check_attention(self.store, worker)

    @rule(person=people)
    def flag(self, person: Person) -> None:
        worker = self.under_way(person, "rating")
        if worker is None or not self.rules.calibrated(worker.username):
            return
        item = crowd.next_item(self.store, worker, self.invite)
        if item is None:
            return
        try:
            crowd.flag(self.store, worker, item, "broken")
        except crowd.CrowdError:
            assert item.instructed_score is not None  # only a told check refuses a flag

    @rule(minutes=st.integers(1, 2 * TIMEOUT))
    def time_passes(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)

    @rule(person=people)
    def come_back(self, person: Person) -> None:
        """A reload or a new browser: the same ids resume the same worker, with their
        place if it is still theirs or free again, else a sentence."""
        if person.username is None:
            return
        try:
            worker = crowd.returning(self.store, self.invite, person.ids)
        except crowd.CrowdError as err:
            assert "place went to someone else" in str(err), err
            return
        assert worker is not None and worker.username == person.username
        crowd.seen(self.store, worker)

    @rule(person=consumes(people))
    def leave_for_good(self, person: Person) -> None:
        """They close the tab and never come back (their place must come back by itself)."""

    @rule(person=people)
    def end_page(self, person: Person) -> None:
        worker = self.worker(person)
        if worker is not None and crowd.outcome(worker) is not None:
            crowd.give_code(self.store, worker, self.invite)

    @rule()
    def admin_records_suggestions(self) -> None:
        crowd.accept_suggested(self.store, self.invite, "boss")

    # What must hold after every step ---------------------------------------------------

    @invariant()
    def the_rules_hold(self) -> None:
        """The dashboard, its files and `koed crowd decisions` build; places are those
        under way and finished; codes are for work; decisions follow the platform."""
        rows, summary = crowd.report_rows(self.store, self.invite)
        files = crowd.decision_files(self.store, self.invite)
        csv = crowd.platform_csv(self.store, self.invite)
        crowd.pay_report(self.store, self.invite)  # the dashboard's frame of the same rows
        self.places_are_those_under_way_and_finished()
        for row in rows:
            if row["status"] in (*crowd.UNDER_WAY, "timed out"):
                assert row["idle_min"] is not None and row["last_activity"], row
            if row["code_kind"] == "completed":
                assert row["rated"] >= 1, row  # never a completion code for checks alone
            if row["suggested"] == "reject":
                assert row["attention_failed"] >= crowd.ATTENTION_FAILS_TO_STOP, row
            if row["suggested"] == "accept":
                assert row["rated"] >= 1 and not row["straight_lined"], row
            if (row["stop_reason"] or "").startswith(("screening", crowd.NO_ITEMS)):
                assert row["suggested"] == "screen_out", row
                assert row["decision"] in (None, "screen_out"), row
        completions = [r["minutes"] for r in rows if r["code_kind"] == "completed"]
        if completions:  # pay per hour over completions alone
            assert summary["median_min"] == pd.Series(completions).median()
        screened = {r["worker_id"] for r in rows if r["code_kind"] == "screened_out"}
        assert not set(files["prolific_return-request.txt"].split()) & screened
        if csv.strip():
            decided = pd.read_csv(io.StringIO(csv))
            assert set(decided["decision"]) <= {"APPROVE", "REJECT", "RETURN", "SCREEN-OUT"}

    def places_are_those_under_way_and_finished(self) -> None:
        rows = Crowd(self.store).worker_rows(1)
        activity = Crowd(self.store).activities(1)
        cutoff = self.cutoff()
        held = sum(
            1
            for w in rows
            if (w["decision"] or "") != "replace"
            and (
                w["status"] == "completed"
                or (w["status"] in crowd.UNDER_WAY and activity.get(w["username"], "") >= cutoff)
            )
        )
        places = crowd.places(self.store, self.invite)
        assert places.used == held <= CAP


TestCrowdStudy = pytest.mark.slow(CrowdStudy.TestCase)
TestCrowdStudy.settings = settings(
    max_examples=25,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
