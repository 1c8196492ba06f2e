"""A whole crowd study, unattended: does it reach every item rated k times by itself?

A Prolific link with ``--places`` places (default 20) on a study of about 120 responses
(two runs of the human reference over 30 sample dialogues in Korean and English; the
count is printed as ``items``, as a few dialogues have no reference reply in one
language), overlap 3, three batches of ten per worker with one attention check per
batch, a 30-minute timeout and a reward of 3.00. First ``--browser`` workers (default 3)
do the whole visit in Chromium against a real ``streamlit run app.py`` (consent,
screening, calibration, the batches, the code); then ``--workers`` simulated workers
(default 60, the mix below in its proportions, in a random order) arrive at random over
four hours and are driven through the same functions, in the same order, as the join
page calls them; after each step the page's next run follows (the next item drawn and
held at once; a visit that ended shows its code at once):

- everyone who passes screening goes through calibration item by item (a score, the
  reference shown, Next) to ``end_calibration``, with care (within a point of the
  reference); only those it passes rate;
- ``finish`` (40 %): chooses what each attention check asks for, reads each response;
- ``leave_mid_batch`` (10 %): closes the tab after three responses, for good;
- ``idle_past_timeout`` (10 %): goes quiet past the timeout after three responses, then
  comes back;
- ``screen_out`` (10 %): a native language the study does not take;
- ``fail_checks`` (10 %): picks another score than the one each check asks for;
- ``straight_line`` (5 %): 2 on everything once past calibration;
- ``second_tab`` (10 %): each item open in two tabs; both press Submit, one after the
  other: the second tab's run finds its item finished and says so (nothing from it is
  saved), or, when the first Submit ended the visit, shows the end page;
- ``reload`` (5 %): reloads the link before every step.

A person refused with a sentence (the study full, their place gone, another session,
nothing left) reads it and leaves; every refusal is counted by kind, none is dropped.
Time passes through an injected clock, one minute a tick; a person takes a step (a
score, a Next, consent) with probability 1/2 a minute, so about every two minutes, which
is slower than the estimate the link's maker is shown: the pay per hour printed is the
simulation's pace, not a forecast. The study's hours take seconds. No admin decides.

    python bench/study.py [--places N] [--workers N] [--browser N] [--seed N] [--smoke]

``--smoke``: a small study (3 dialogues, two batches of two, 10 places, 24 workers, each
behaviour three times, one more in Chromium) that runs in seconds; the test suite runs
it to see the bench and the crowd visit still work.

Prints ``name: value`` lines: ``items`` and ``k``, ``finished_items`` (items rated ``k``
times), ``ratings`` (real responses rated), ``places_max``, ``workers`` and ``joined``
(simulated workers who got in), ``codes_without_work`` (a completion code with no
response rated; must be 0), ``codes_completed``, ``codes_screened_out`` and
``codes_failed_checks`` (codes given, Chromium workers included),
``calibration_passed`` and ``calibration_stopped``, ``fail_checks_workers`` (joined),
``fail_checks_failed`` (told checks they failed) and ``fail_checks_stopped`` (stopped by
them), ``careful_checks_failed`` (told checks failed by those who choose as told; must
be 0), ``second_tab_submits``, ``refusals`` (every sentence a worker was refused with)
and one ``refused_<kind>`` line per kind (``full``, ``place_gone``, ``other_session``,
``nothing_left``, ``second_tab``, ``rating``: a rating the store refused, ``other``),
``stalled_minutes`` (open items and no free place while a place was held by someone gone
quiet for 10 minutes or more; goal 0), ``full_minutes`` (open items and no free place at
all), ``median_completion_min`` (simulated workers with the completion code, from
joining to the code, as the platform times a submission), ``hourly_pay`` (the reward
over that median, as Prolific computes it), ``estimated_hourly_pay`` (what the link's
maker was shown before launch), ``browser_workers_done``, ``crashes`` (anything but a
sentence for the worker; 0), ``sim_minutes`` and ``wall_s``. One example of each
refusal kind met, and the first crashes, go to stderr.

Then a launch burst through Prolific's API (the planted server in
fixtures/fake_prolific.py, on its own database): a link of 10 places (smoke: 5)
published there, 30 people (smoke: 8) trying it at random over 60 s, each opening the
link 5 to 40 s after starting on Prolific, a sync every simulated minute. It prints
``burst_people``, ``places_link``, ``places_after_burst`` (Prolific's places after the
burst's syncs; must equal ``places_link``), ``prolific_full`` (people Prolific turned
away, the study full), ``turned_away`` (people holding a Prolific place the app turned
away; must be 0) and ``burst_joined``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.serve import free_port, wait_healthy  # noqa: E402
from koed_core.db import Store, set_clock  # noqa: E402
from koed_core.db.crowd import Crowd  # noqa: E402
from koed_core.dialogues.dataset import load_dataset  # noqa: E402
from koed_core.errors import KoedError  # noqa: E402
from koed_core.judge.rubric import codes  # noqa: E402
from koed_core.models.backends import make_client  # noqa: E402
from koed_core.models.registry import ModelSpec  # noqa: E402
from koed_core.models.request import RunRequest  # noqa: E402
from koed_core.models.runs import run_benchmark  # noqa: E402
from koed_core.paths import DATA_DIR, SAMPLE_FILE  # noqa: E402
from koed_core.rating import crowd  # noqa: E402
from koed_core.rating.studies import (  # noqa: E402
    RatingError,
    StudyConfig,
    StudyRules,
    calibration_items,
)

KEY = "w" * 40
OVERLAP = 3
TIMEOUT = 30
REWARD = 3.0
STUDY_ID = "60aa00000000000000000001"
BEHAVIOURS = {
    "finish": 40,
    "leave_mid_batch": 10,
    "idle_past_timeout": 10,
    "screen_out": 10,
    "fail_checks": 10,
    "straight_line": 5,
    "second_tab": 10,
    "reload": 5,
}
AS_TOLD = ("finish", "leave_mid_batch", "idle_past_timeout", "second_tab", "reload")
"""Behaviours that choose what an attention check asks for."""
CHECKS_FAILED = "attention checks failed"
QUIET_MIN = 10
REFUSALS = ("full", "place_gone", "other_session", "nothing_left", "second_tab", "rating", "other")
"""The kinds of sentence a worker can be refused with, as the bench counts them."""
FINISHED = "Thank you! You have finished."


@dataclass(frozen=True)
class Size:
    """How big a study the bench runs."""

    places: int
    workers: int
    browser: int
    dialogues: int
    batch: int
    batches: int
    arrive_over: int  # minutes over which the simulated workers arrive
    max_minutes: int
    burst_places: int = 10  # the launch burst: the link's places on Prolific
    burst_people: int = 30  # and the people who try it within 60 s


FULL = Size(20, 60, 3, 30, 10, 3, 240, 24 * 60)
SMOKE = Size(10, 24, 1, 3, 2, 2, 120, 8 * 60, 5, 8)


@dataclass
class Sim:
    """One simulated person: their ids, how they behave, when they next act."""

    n: int
    behaviour: str
    native: str
    arrives: int
    ids: dict[str, str] = field(default_factory=dict)
    username: str | None = None
    gone: bool = False
    idle_until: int = -1
    responses: int = 0

    def __post_init__(self) -> None:
        self.ids = {
            "PROLIFIC_PID": f"{0x5F000000 + self.n:08x}{'0' * 16}",
            "STUDY_ID": STUDY_ID,
            "SESSION_ID": f"{0x6A000000 + self.n:08x}{'1' * 16}",
        }


def build(db: Path, size: Size) -> tuple[Store, crowd.Invite, str]:
    """The study: two runs of the human reference over the first sample dialogues."""
    store = Store(db)
    dataset = load_dataset(SAMPLE_FILE)
    runs = []
    for name in ("human", "human-again"):
        spec = ModelSpec(name=name, backend="human")
        report = run_benchmark(
            store,
            make_client(spec),
            spec,
            dataset.dialogues[: size.dialogues],
            dataset.sha256,
            RunRequest(spec.name, langs=("ko", "en"), protocol="direct"),
        )
        runs.append(report.run_id)
    config = StudyConfig(
        name="bench", run_ids=tuple(runs), overlap=OVERLAP, attention_checks=1,
        timeout_minutes=TIMEOUT,
    )  # fmt: skip
    study_id = StudyRules(store).create_study(config, dataset)
    invite, token = crowd.create_invite(
        store, KEY.encode(), study_id,
        crowd.InviteRequest(platform="prolific", days=30.0, cap=size.places,
        batch_size=size.batch, batches=size.batches, consent_ko="동의합니다.",
        consent_en="I agree.", contact="researcher@example.org", reward=REWARD,
        prolific_study_id=STUDY_ID),
    )  # fmt: skip
    return store, invite, token


def browser_workers(db: Path, token: str, size: Size) -> int:
    """``size.browser`` workers do the whole visit in Chromium; returns how many got the
    completion code."""
    if size.browser <= 0:
        return 0
    from playwright.sync_api import expect, sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "KOED_DB": str(db),
        "KOED_SECRET_KEY": KEY,
        "KOED_DATA": str(SAMPLE_FILE),
        "KOED_CACHE_DIR": str(db.parent),
    }
    log = (db.parent / "streamlit.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless=true",
         f"--server.port={port}", "--browser.gatherUsageStats=false",
         "--server.fileWatcherType=none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    done = 0
    references = json.loads((DATA_DIR / "calibration.json").read_text(encoding="utf-8"))
    english = [i for i in references["items"] if i["lang"] == "en"]
    submits = size.batch * size.batches + size.batches  # responses, one check a batch
    try:
        if not wait_healthy(url, server, timeout_s=90):
            raise RuntimeError(f"the app did not start; see {log.name}")
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
            )
            for n in range(size.browser):
                page = chromium.new_page(viewport={"width": 1366, "height": 768})
                page.set_default_timeout(30_000)
                ids = f"PROLIFIC_PID={0xB0 + n:024x}&STUDY_ID={STUDY_ID}&SESSION_ID={0xC0 + n:024x}"
                page.goto(f"{url}/join?invite={token}&{ids}&lang=en")
                page.get_by_text("I have read this and agree").click()
                page.get_by_role("button", name="Continue").click()
                page.get_by_test_id("stRadio").get_by_text("English", exact=True).click()
                page.get_by_role("button", name="Continue").click()
                for n_item, item in enumerate(english, start=1):
                    heading = f"Calibration {n_item} of {len(english)}"
                    expect(page.get_by_text(heading)).to_be_visible()
                    ref = item["reference"]
                    _score_all(page, str(round(sum(ref.values()) / len(ref))))
                    page.get_by_role("button", name="Submit rating").click()
                    page.get_by_role("button", name="Next").click()
                for step in range(submits + 1):
                    page.wait_for_function(NEXT_ITEM_OR_END, arg=FINISHED, polling=100)
                    if page.get_by_text(FINISHED).count():
                        break
                    told = page.get_by_test_id("stAlert").filter(has_text="choose ")
                    if told.count():  # an attention check: choose what it says
                        score = told.first.inner_text().split("choose ")[1][0]
                    else:
                        score = str(2 + step % 3)
                    _score_all(page, score)
                    page.get_by_role("button", name="Submit rating").click()
                expect(page.get_by_text(FINISHED)).to_be_visible()
                done += 1
                page.close()
            chromium.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    return done


NEXT_ITEM_OR_END = """finished => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (app?.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.body.innerText.includes(finished)) return true;
  const radios = document.querySelectorAll('[data-testid="stRadio"]');
  return radios.length === 5
    && document.querySelectorAll('[data-testid="stRadio"] input:checked').length === 0;
}"""
"""The page after a Submit has settled on the next item's empty form, or on the end."""


def _score_all(page, score: str) -> None:  # type: ignore[no-untyped-def]
    """Pick ``score`` on every rubric dimension of the (new, empty) form on the page."""
    from playwright.sync_api import expect

    radios = page.get_by_test_id("stRadio")
    expect(radios).to_have_count(5)
    expect(radios.locator("input:checked")).to_have_count(0)
    for n in range(5):
        radios.nth(n).get_by_text(score, exact=True).click()
        expect(radios.nth(n).locator("input:checked")).to_have_count(1)


class Study:
    """The simulated study: people, the clock, and what is measured."""

    def __init__(self, store: Store, invite: crowd.Invite, people: list[Sim], seed: int) -> None:
        self.store, self.invite, self.people = store, invite, people
        self.rules = StudyRules(store)
        self.random = random.Random(seed)
        self.minute = 0
        self.start = datetime.now(UTC) + timedelta(minutes=5)
        set_clock(lambda: self.start + timedelta(minutes=self.minute))
        self.crashes: list[str] = []
        self.refused: Counter[str] = Counter()
        self.refusal_examples: dict[str, str] = {}
        self.calibration: Counter[str] = Counter()
        self.second_tab_submits = 0
        self.places_max = 0
        self.stalled = 0
        self.full = 0

    # What a worker meets --------------------------------------------------------------

    def refuse(self, kind: str, message: str, person: Sim | None = None) -> None:
        """A sentence the worker reads instead of going on: counted, one example kept."""
        self.refused[kind] += 1
        self.refusal_examples.setdefault(kind, message)
        if person is not None and kind not in ("second_tab", "rating"):
            person.gone = True  # told to return the study: they leave

    def guarded(self, action, *args, person: Sim | None = None) -> None:  # type: ignore[no-untyped-def]
        """Run one step. A CrowdError or RatingError is a sentence for the worker (a
        refusal, counted by kind); anything else is a crash."""
        try:
            action(*args)
        except crowd.CrowdError as err:
            self.refuse(_kind(str(err)), str(err), person)
        except RatingError as err:
            self.refuse("rating", str(err), person)
        except KoedError as err:
            self.refuse("other", str(err), person)
        except Exception:  # noqa: BLE001 - counted and shown: the benchmark's point
            self.crashes.append(traceback.format_exc(limit=4))

    # A person's steps, as the join page takes them --------------------------------------

    def arrive(self, person: Sim) -> None:
        ids = crowd.platform_ids(self.invite, person.ids, KEY.encode())
        person.username = crowd.join(self.store, KEY.encode(), self.invite, ids).username

    def act(self, person: Sim) -> None:
        """The person's next step, as the join page would take it, then the page's run
        after it (a visit that ended shows its code at once)."""
        if person.behaviour == "reload" or self.minute == person.idle_until:
            crowd.returning(self.store, self.invite, person.ids)  # a reload / coming back
        worker = crowd.worker_of(self.store, person.username or "", self.invite)
        if worker is None or worker.status not in crowd.UNDER_WAY:
            self.end_page(person, worker)
            return
        crowd.seen(self.store, worker)
        if worker.status == "consent":
            crowd.consent(self.store, worker, self.invite)
        elif worker.status == "screening":
            native = "other" if person.behaviour == "screen_out" else person.native
            langs = crowd.screen(self.store, worker, ("ko", "en"), native, 0, 0)
            if langs:
                profile = crowd.profile_of(worker, native, 0, 0, langs)
                self.rules.save_profile(profile)
        elif not self.rules.calibrated(worker.username):
            self.calibrate(worker)
        else:
            self.rate(person, worker)
        self.rerun(person)

    def rerun(self, person: Sim) -> None:
        """What the page shows after a step: the next item is drawn (and held) at once; a
        finished batch or no item left ends the visit; an ended visit shows its code."""
        worker = crowd.worker_of(self.store, person.username or "")
        if (
            worker is not None
            and worker.status == "rating"
            and self.rules.calibrated(worker.username)
            and (
                crowd.batch_state(self.store, worker, self.invite).finished
                or crowd.next_item(self.store, worker, self.invite) is None
            )
        ):
            crowd.finish(self.store, worker)
            worker = crowd.worker_of(self.store, worker.username)
        if worker is not None and worker.status not in crowd.UNDER_WAY:
            self.end_page(person, worker)

    def end_page(self, person: Sim, worker: crowd.Worker | None) -> None:
        """The visit is over: its code is shown (and recorded), and the person goes."""
        if worker is not None and crowd.outcome(worker):
            crowd.give_code(self.store, worker, self.invite)
        person.gone = True

    def calibrate(self, worker: crowd.Worker) -> None:
        """One calibration step: score the next item (its reference then shown), or press
        Next past the reference; after the last, the attempt ends as the page ends it.
        Everyone calibrates with care: scores within one point of the reference."""
        items = calibration_items(worker.languages)
        gaps, _tries = crowd.stored_calibration(self.store, worker)
        if crowd.calibration_feedback(self.store, worker) is None and len(gaps) < len(items):
            reference = items[len(gaps)]["reference"]
            scores = {
                code: min(5, max(1, ref + self.random.choice((-1, 0, 0, 1))))
                for code, ref in reference.items()
            }
            gap = statistics.mean(abs(scores[c] - ref) for c, ref in reference.items())
            crowd.save_calibration(self.store, worker, [*gaps, gap], scores)
            return
        crowd.save_calibration(self.store, worker, gaps, None)  # Next
        if len(gaps) < len(items):
            return
        ended = crowd.end_calibration(self.store, worker, self.invite, gaps)
        self.calibration[ended] += 1
        if ended == "passed":
            self.rules.mark_calibrated(worker.username)

    def rate(self, person: Sim, worker: crowd.Worker) -> None:
        """Score the item on the page (and, in two tabs, press Submit in both)."""
        if crowd.batch_state(self.store, worker, self.invite).finished:
            return  # the page's run finishes the visit
        item = crowd.next_item(self.store, worker, self.invite)
        if item is None:
            return
        if person.behaviour == "second_tab":
            other = crowd.next_item(self.store, worker, self.invite)  # the other tab
            if other is None or other.assignment_id != item.assignment_id:
                raise AssertionError("two tabs of one worker were handed different items")
        told = item.instructed_score
        if person.behaviour == "fail_checks" and told is not None:
            score = told % 5 + 1  # never the score the check asks for
        elif person.behaviour == "straight_line":
            score = 2
        else:
            score = told if told is not None else self.random.randint(1, 5)
        self.rules.save_rating(item.assignment_id, worker.username, dict.fromkeys(codes(), score))
        crowd.check_attention(self.store, worker)
        person.responses += told is None
        if person.behaviour == "second_tab":
            self.second_tab_submit(worker, item.assignment_id)
        if person.behaviour == "leave_mid_batch" and person.responses == 3:
            person.gone = True
        if person.behaviour == "idle_past_timeout" and person.responses == 3:
            person.idle_until = self.minute + TIMEOUT + 15

    def second_tab_submit(self, worker: crowd.Worker, shown: str) -> None:
        """The other tab's Submit, on the item this tab just finished: its run asks for the
        worker's item, as the page does, and says the item was finished elsewhere when it
        is another one (nothing from that tab is saved). A visit that ended with the first
        Submit shows its end page instead."""
        self.second_tab_submits += 1
        again = crowd.worker_of(self.store, worker.username, self.invite)
        if again is None or again.status not in crowd.UNDER_WAY:
            return
        if crowd.batch_state(self.store, again, self.invite).finished:
            return
        item = crowd.next_item(self.store, again, self.invite)
        if item is None:
            return
        if item.assignment_id == shown:
            raise AssertionError("a second tab's Submit would save a finished item again")
        self.refuse(
            "second_tab",
            "The item this tab showed was finished in another tab or window, so nothing from "
            "this tab was saved for it. Here is your next item.",
        )

    # The study's clock and what is measured --------------------------------------------

    def measure(self) -> None:
        places = crowd.places(self.store, self.invite)
        self.places_max = max(self.places_max, places.used)
        open_items = self.rules.room_for_newcomer(self.invite.study_id)
        if places.used >= places.cap and open_items:
            self.full += 1
            quiet = (self.start + timedelta(minutes=self.minute - QUIET_MIN)).isoformat()
            activity = Crowd(self.store).activities(self.invite.study_id)
            rows = Crowd(self.store).worker_rows(self.invite.study_id)
            if any(
                w["status"] in crowd.UNDER_WAY and activity.get(w["username"], "") < quiet
                for w in rows
            ):
                self.stalled += 1

    def complete(self) -> bool:
        return self.finished_items() >= self.items()

    def items(self) -> int:
        return int(
            self.store.rows("select count(*) as n from study_items where kind = 'response'")[0]["n"]
        )

    def finished_items(self) -> int:
        rows = self.store.rows(
            "select i.id, count(a.id) as n from study_items i left join assignments a on "
            "a.item_id = i.id and a.status = 'done' where i.kind = 'response' group by i.id"
        )
        return sum(1 for r in rows if r["n"] >= OVERLAP)

    def run(self, max_minutes: int) -> None:
        while self.minute < max_minutes and not self.complete():
            for person in self.people:
                if person.arrives == self.minute:
                    self.guarded(self.arrive, person, person=person)
                elif (
                    person.username
                    and not person.gone
                    and person.arrives < self.minute
                    and self.minute >= person.idle_until
                    and self.random.random() < 0.5  # a step every two minutes or so
                ):
                    self.guarded(self.act, person, person=person)
            if self.minute % 60 == 0:  # what the admin would open meanwhile
                self.guarded(crowd.report_rows, self.store, self.invite)
                self.guarded(crowd.decision_files, self.store, self.invite)
                self.guarded(crowd.platform_csv, self.store, self.invite)
            self.measure()
            self.minute += 1
        for person in self.people:  # anyone at their end page sees their code
            worker = crowd.worker_of(self.store, person.username) if person.username else None
            if worker is not None and crowd.outcome(worker):
                self.guarded(crowd.give_code, self.store, worker, self.invite)


def _kind(message: str) -> str:
    """Which refusal a CrowdError's sentence is."""
    for kind, words in (
        ("full", "This study is full"),
        ("place_gone", "place went to someone else"),
        ("other_session", "already taken part in this study in another"),
        ("nothing_left", "nothing left for you to rate"),
    ):
        if words in message:
            return kind
    return "other"


BURST_REWARD = 9.0
"""The burst link's reward: above Prolific's minimum for the estimate, so it publishes."""


def launch_burst(db: Path, size: Size, seed: int) -> dict[str, int]:
    """A launch through Prolific's API (the planted server): a link of
    ``size.burst_places`` places published on Prolific, ``size.burst_people`` people
    trying it at random moments over 60 s of injected time (Prolific offers a full study
    to nobody more), each opening the link 5 to 40 s after starting there, and a sync
    every simulated minute, as the dashboard runs it. Prolific's places must stay the
    link's (everyone is within the arrival grace), and nobody holding a Prolific place may
    be turned away by the app."""
    from fixtures.fake_prolific import FakeProlific, StudyFull
    from koed_core.rating.crowd import prolific
    from koed_core.rating.crowd.prolific_client import ProlificClient

    store, _invite, _token = build(db, Size(*(1, 0, 0, 3, 2, 1, 0, 0)))
    invite, _ = crowd.create_invite(
        store, KEY.encode(), 1,
        crowd.InviteRequest(platform="prolific", days=30.0, cap=size.burst_places,
        batch_size=2, consent_ko="동의합니다.", consent_en="I agree.",
        contact="researcher@example.org", reward=BURST_REWARD),
    )  # fmt: skip
    start = datetime.now(UTC)
    clock = {"now": start}
    set_clock(lambda: clock["now"])
    fake = FakeProlific(token="bench-token").start()
    fake.clock = lambda: clock["now"]
    try:
        env = {"PROLIFIC_API_TOKEN": "bench-token", "PROLIFIC_API_URL": fake.base_url}
        client = ProlificClient.from_env(env, store, invite_id=invite.id, sleep=lambda s: None)
        # a ko+en link: one Prolific study per language arm, people arriving at either
        prolific.publish_link(store, client, invite, KEY.encode(), "https://koed.example",
                              go_live=True)  # fmt: skip
        invite = crowd.Invite.from_row(Crowd(store).invite(invite.id) or {})
        arms = list(invite.prolific_studies)
        fake.enforce_places = True
        chooser = random.Random(seed)
        tries = sorted(chooser.uniform(0, 60) for _ in range(size.burst_people))
        loads: list[tuple[float, dict[str, str]]] = []
        figures = Counter(prolific_full=0, turned_away=0, burst_joined=0)
        for second in range(0, 181):
            clock["now"] = start + timedelta(seconds=second)
            for moment in [t for t in tries if second - 1 < t <= second]:
                try:
                    sub = fake.arrive(chooser.choice(arms))
                except StudyFull:
                    figures["prolific_full"] += 1
                    continue
                loads.append((moment + chooser.uniform(5, 40), sub))
            for _load, sub in [x for x in loads if second - 1 < x[0] <= second]:
                ids = {
                    "PROLIFIC_PID": sub["participant_id"],
                    "STUDY_ID": sub["study_id"],
                    "SESSION_ID": sub["id"],
                }
                try:
                    crowd.join(store, KEY.encode(), invite,
                               crowd.platform_ids(invite, ids, KEY.encode()))  # fmt: skip
                    figures["burst_joined"] += 1
                except crowd.CrowdError:
                    figures["turned_away"] += 1
            if second % 60 == 30:  # the dashboard's sync, every minute
                prolific.sync_link(store, client, invite)
        return {
            "burst_people": size.burst_people,
            "places_link": invite.cap,
            "places_after_burst": sum(
                int(fake.studies[arm]["total_available_places"]) for arm in arms
            ),
            **figures,
        }
    finally:
        set_clock(None)
        fake.stop()
        store.db.close()


def people_for(size: Size, seed: int, smoke: bool) -> list[Sim]:
    """The simulated workers: the behaviour mix in its proportions (in a smoke run, each
    behaviour in turn, so every one is met), in a random order, arriving at random over
    ``arrive_over`` minutes."""
    chooser = random.Random(seed)
    if smoke:
        mix = [list(BEHAVIOURS)[n % len(BEHAVIOURS)] for n in range(size.workers)]
    else:
        total = sum(BEHAVIOURS.values())
        shares = {name: size.workers * weight / total for name, weight in BEHAVIOURS.items()}
        counts = {name: int(share) for name, share in shares.items()}
        by_remainder = sorted(shares, key=lambda name: counts[name] - shares[name])
        for name in by_remainder[: size.workers - sum(counts.values())]:
            counts[name] += 1
        mix = [name for name, count in counts.items() for _ in range(count)]
        chooser.shuffle(mix)
    return [
        Sim(n, behaviour, chooser.choice(["ko", "en"]), int(chooser.uniform(0, size.arrive_over)))
        for n, behaviour in enumerate(mix)
    ]


def figures(study: Study, people: list[Sim], in_browser: int) -> dict[str, float | int]:
    """What the bench prints, in its order."""
    rows, _summary = crowd.report_rows(study.store, study.invite)
    simulated = {p.username: p.behaviour for p in people if p.username}
    codes_of = Counter(r["code_kind"] for r in rows)
    # Pay per hour as Prolific computes it: the reward over the median time from joining
    # to the code, over completions; those of simulated people (the Chromium workers are
    # a script clicking at machine speed, not a person's pace).
    completions = [
        r["minutes"]
        for r in rows
        if r["username"] in simulated and r["code_kind"] == "completed" and r["minutes"]
    ]
    median = statistics.median(completions) if completions else math.nan
    failers = [r for r in rows if simulated.get(r["username"]) == "fail_checks"]
    careful = [r for r in rows if simulated.get(r["username"]) in AS_TOLD]
    estimated = crowd.estimate(study.store, study.invite)["hourly_pay"]
    return {
        "items": study.items(),
        "k": OVERLAP,
        "finished_items": study.finished_items(),
        "ratings": sum(r["rated"] for r in rows),
        "places_max": study.places_max,
        "workers": len(people),
        "joined": len(simulated),
        "codes_without_work": sum(
            1 for r in rows if r["code_kind"] == "completed" and r["rated"] < 1
        ),
        **{f"codes_{kind}": codes_of[kind] for kind in crowd.OUTCOMES},
        "calibration_passed": study.calibration["passed"],
        "calibration_stopped": study.calibration["stopped"],
        "fail_checks_workers": len(failers),
        "fail_checks_failed": sum(r["attention_failed"] for r in failers),
        "fail_checks_stopped": sum(1 for r in failers if r["stop_reason"] == CHECKS_FAILED),
        "careful_checks_failed": sum(r["attention_failed"] for r in careful),
        "second_tab_submits": study.second_tab_submits,
        "refusals": sum(study.refused.values()),
        **{f"refused_{kind}": study.refused[kind] for kind in REFUSALS},
        "stalled_minutes": study.stalled,
        "full_minutes": study.full,
        "median_completion_min": median,
        "hourly_pay": REWARD / (median / 60),
        "estimated_hourly_pay": estimated if estimated is not None else math.nan,
        "browser_workers_done": in_browser,
        "crashes": len(study.crashes),
        "sim_minutes": study.minute,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--places", type=int)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--browser", type=int)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="a small study, in seconds")
    args = parser.parse_args()
    size = SMOKE if args.smoke else FULL
    size = Size(
        args.places if args.places is not None else size.places,
        args.workers if args.workers is not None else size.workers,
        args.browser if args.browser is not None else size.browser,
        *(size.dialogues, size.batch, size.batches, size.arrive_over, size.max_minutes),
        *(size.burst_places, size.burst_people),
    )
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="koed-study-bench-") as folder:
        store, invite, token = build(Path(folder) / "koed.db", size)
        in_browser = browser_workers(Path(folder) / "koed.db", token, size)
        people = people_for(size, args.seed, args.smoke)
        study = Study(store, invite, people, args.seed)
        try:
            study.run(max_minutes=size.max_minutes)
        finally:
            set_clock(None)
        measured = figures(study, people, in_browser)
        store.db.close()
        measured.update(launch_burst(Path(folder) / "burst.db", size, args.seed))
    if args.smoke:
        print("# smoke: a small study; the figures are not the benchmark's")
    for name, value in measured.items():
        print(f"{name}: {value:.2f}" if isinstance(value, float) else f"{name}: {value}")
    print(f"wall_s: {time.perf_counter() - began:.1f}")
    for kind, message in study.refusal_examples.items():
        print(f"refused_{kind}, e.g.: {message}", file=sys.stderr)
    for crash in study.crashes[:3]:
        print(crash, file=sys.stderr)


if __name__ == "__main__":
    main()
