"""A Prolific study through the API as a state machine: people arrive from the planted
Prolific server, work, return, time out on Prolific, finish and go back with their code;
strangers paste a leaked code; syncs run at random moments. After every step the rules
hold: the app's places are never over the cap, Prolific's places only rise; after a sync,
nobody whose submission Prolific freed is still under way in the app, and every code with
no visit behind it is flagged, while no real visit is flagged as having none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from fixtures.fake_prolific import FakeProlific
from fixtures.rating import ExampleStore, crowd_work, live_prolific_link, template_db
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific
from koed_core.rating.crowd.prolific_client import ProlificClient
from koed_core.rating.studies import StudyRules

KEY = b"p" * 32
TOKEN = "machine-token"
CAP = 3
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Person:
    def __init__(self, sub: dict[str, str]) -> None:
        self.sub = sub
        self.username: str | None = None
        self.joined_at: datetime | None = None

    def __repr__(self) -> str:
        return f"Person({self.sub['participant_id'][:6]})"


class ProlificStudy(ExampleStore, RuleBasedStateMachine):
    people = Bundle("people")

    def __init__(self) -> None:
        super().__init__()
        # one Prolific study: a one-language link (ko+en is a study per arm: test_prolific_arms)
        options = {"overlap": 2, "attention_checks": 0, "timeout_minutes": 30, "langs": ("ko",)}
        self.open_store(template_db(**options), START)
        self.fake = FakeProlific(token=TOKEN, page_size=3).start()
        self.fake.clock = lambda: self.now  # Prolific's time is the app's injected time
        self.invite = live_prolific_link(self.store, KEY, self.client(), CAP)
        self.leaked: set[str] = set()
        self.places = CAP

    def teardown(self) -> None:
        self.fake.stop()
        self.close_store()

    def client(self) -> ProlificClient:
        env = {"PROLIFIC_API_TOKEN": TOKEN, "PROLIFIC_API_URL": self.fake.base_url}
        return ProlificClient.from_env(env, self.store, sleep=lambda s: None)

    def worker(self, person: Person) -> crowd.Worker | None:
        return crowd.worker_of(self.store, person.username) if person.username else None

    @initialize(target=people)
    def first(self) -> Person:
        return self.arrive()

    @rule(target=people)
    def arrive(self) -> Person:
        """Prolific sends someone: a submission there, then the app's link."""
        person = Person(self.fake.arrive(str(self.invite.prolific_study_id)))
        params = {"PROLIFIC_PID": person.sub["participant_id"],
                  "STUDY_ID": str(self.invite.prolific_study_id), "SESSION_ID": person.sub["id"]}  # fmt: skip
        try:
            worker = crowd.join(self.store, KEY, self.invite,
                                crowd.platform_ids(self.invite, params, KEY))  # fmt: skip
        except crowd.CrowdError as err:
            assert "full" in str(err) or "nothing left" in str(err), err
            return person
        person.username, person.joined_at = worker.username, self.now
        return person

    @rule(person=people)
    def work_to_the_end(self, person: Person) -> None:
        """Consent, screening, calibration, rating, the code, and back to Prolific."""
        worker = self.worker(person)
        if worker is None or worker.status not in crowd.UNDER_WAY:
            return
        if self.fake.submissions[person.sub["id"]]["status"] != "ACTIVE":
            return  # returned or timed out there: they do not go on
        try:
            worker = crowd.keep_place(self.store, self.invite, worker)
        except crowd.CrowdError:
            return
        if worker.status == "consent":
            crowd.consent(self.store, worker, self.invite)
            worker = self.worker(person) or worker
        if worker.status == "screening":
            langs = crowd.screen(self.store, worker, ("ko", "en"), "ko", 0, 0)
            StudyRules(self.store).save_profile(crowd.profile_of(worker, "ko", 0, 0, langs))
            worker = self.worker(person) or worker
        StudyRules(self.store).mark_calibrated(worker.username)
        crowd_work(self.store, worker, self.invite, responses=2)
        crowd.finish(self.store, worker)
        worker = self.worker(person) or worker
        given = crowd.give_code(self.store, worker, self.invite)
        if given is not None:
            minutes = (self.now - (person.joined_at or self.now)).total_seconds() / 60
            self.fake.submit(person.sub["id"], given[1], minutes=minutes)

    @rule(person=people)
    def give_back(self, person: Person) -> None:
        if self.fake.submissions[person.sub["id"]]["status"] == "ACTIVE":
            self.fake.give_back(person.sub["id"])

    @rule(person=people)
    def time_out_on_prolific(self, person: Person) -> None:
        if self.fake.submissions[person.sub["id"]]["status"] == "ACTIVE":
            self.fake.time_out(person.sub["id"])

    @rule()
    def leak(self) -> None:
        """Someone pastes the completion code without ever opening the app."""
        sub = self.fake.arrive(str(self.invite.prolific_study_id))
        self.fake.submit(sub["id"], self.invite.completion_code, minutes=1)
        self.leaked.add(sub["participant_id"])

    @rule(minutes=st.integers(1, 40))
    def time_passes(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)

    @rule()
    def sync(self) -> None:
        report = prolific.sync(self.store, self.client(), self.invite)
        event(
            f"a sync ended {min(len(report.ended), 2)}+ visits, flagged {min(len(report.flagged), 2)}+"
        )
        assert report.places is not None and report.places >= self.places  # only rises
        self.places = report.places
        crowd_ = Crowd(self.store)
        for sub in self.fake.submissions.values():
            worker = crowd_.worker_by_platform_id(1, "prolific", sub["participant_id"])
            if sub["status"] in prolific.ENDED and worker is not None:
                assert worker["status"] not in crowd.UNDER_WAY, (sub, worker)
        flags = {
            s["participant_id"]: s["flag"] or ""
            for s in ProlificLog(self.store).submissions(self.invite.id)
        }
        for participant in self.leaked:
            assert "no visit in our database" in flags[participant]
        for participant, flag in flags.items():
            if participant not in self.leaked:
                assert "no visit" not in flag, (participant, flag)

    @invariant()
    def the_apps_places_hold(self) -> None:
        assert crowd.places(self.store, self.invite).used <= CAP


TestProlificStudy = pytest.mark.slow(ProlificStudy.TestCase)
TestProlificStudy.settings = settings(
    max_examples=15,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
