"""A whole crowd study, unattended: does it reach every item rated k times by itself?

A Prolific link with ``--places`` places (default 20) on a study of about 120 responses
(two runs of the human reference over 30 sample dialogues in Korean and English; the
count is printed as ``items``, as a few dialogues have no reference reply in one
language), overlap 3, three batches of ten per worker with one attention check per
batch, and a 30-minute timeout. First ``--browser`` workers (default 3) do the whole
visit in Chromium against a real ``streamlit run app.py``; then ``--workers`` simulated
workers (default 60) arrive over four hours with a mix of behaviours (finish, leave
mid-batch, idle past the timeout and come back, screened out, fail the checks,
straight-line, a second tab, reload on every step) and are driven through the same
functions the pages call. Time passes through an injected clock, one
minute a tick, so the study's hours take seconds. Nobody decides anything: no admin.

    python bench/study.py [--places N] [--workers N] [--browser N] [--seed N]

Prints ``name: value`` lines: ``finished_items`` (of ``items``, each rated ``k`` times),
``ratings`` (real responses rated), ``places_max``, ``codes_without_work`` (a completion
code with no response rated; must be 0), ``stalled_minutes`` (open items and no free
place while a place was held by someone gone quiet for 10 minutes or more; goal 0),
``full_minutes`` (open items and no free place at all: everyone working), ``refused_full``,
``crashes`` (anything but a sentence for the worker; 0), ``sim_minutes`` and ``wall_s``.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.serve import free_port, wait_healthy  # noqa: E402
from koed_core.db import Store, set_clock  # noqa: E402
from koed_core.db.crowd import Crowd  # noqa: E402
from koed_core.dialogues.dataset import load_dataset  # noqa: E402
from koed_core.judge.rubric import codes  # noqa: E402
from koed_core.models.backends import make_client  # noqa: E402
from koed_core.models.client import GenerationSettings  # noqa: E402
from koed_core.models.registry import ModelSpec  # noqa: E402
from koed_core.models.runs import run_benchmark  # noqa: E402
from koed_core.paths import DATA_DIR, SAMPLE_FILE  # noqa: E402
from koed_core.rating import crowd  # noqa: E402
from koed_core.rating.studies import RatingStore, StudyConfig  # noqa: E402

KEY = "w" * 40
OVERLAP = 3
TIMEOUT = 30
BATCH = 10
BATCHES = 3
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
QUIET_MIN = 10


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


def build(db: Path, places: int) -> tuple[Store, crowd.Invite, str]:
    """The study: 120 responses (two runs of the human reference over 30 dialogues)."""
    store = Store(db)
    dataset = load_dataset(SAMPLE_FILE)
    runs = []
    for name in ("human", "human-again"):
        spec = ModelSpec(name=name, backend="human")
        report = run_benchmark(
            store, make_client(spec), spec, dataset.dialogues[:30], dataset.sha256,
            langs=["ko", "en"], protocol="direct", settings=GenerationSettings(),
        )  # fmt: skip
        runs.append(report.run_id)
    config = StudyConfig(
        name="bench", run_ids=tuple(runs), overlap=OVERLAP, attention_checks=1,
        timeout_minutes=TIMEOUT,
    )  # fmt: skip
    study_id = RatingStore(store).create_study(config, dataset)
    invite, token = crowd.create_invite(
        store, KEY.encode(), study_id, platform="prolific", days=30.0, cap=places,
        batch_size=BATCH, batches=BATCHES, consent_ko="동의합니다.", consent_en="I agree.",
        reward=3.0, prolific_study_id=STUDY_ID,
    )  # fmt: skip
    return store, invite, token


def browser_workers(db: Path, token: str, count: int) -> int:
    """``count`` workers do the whole visit in Chromium; returns how many got the code."""
    if count <= 0:
        return 0
    from playwright.sync_api import expect, sync_playwright

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"KOED_DB": str(db), "KOED_SECRET_KEY": KEY, "KOED_DATA": str(SAMPLE_FILE),
           "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(db.parent)}  # fmt: skip
    import os

    env = {**os.environ, **env}
    log = (db.parent / "streamlit.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    done = 0
    references = json.loads((DATA_DIR / "calibration.json").read_text(encoding="utf-8"))
    try:
        if not wait_healthy(url, server):
            raise RuntimeError(f"the app did not start; see {log.name}")
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
            )
            for n in range(count):
                page = chromium.new_page(viewport={"width": 1366, "height": 768})
                ids = f"PROLIFIC_PID={0xB0 + n:024x}&STUDY_ID={STUDY_ID}&SESSION_ID={0xC0 + n:024x}"
                page.goto(f"{url}/join?invite={token}&{ids}")
                page.get_by_text("I have read this and agree").click()
                page.get_by_role("button", name="Continue / 계속").click()
                page.get_by_text("English", exact=True).click()
                page.get_by_role("button", name="Continue / 계속").click()
                for item in [i for i in references["items"] if i["lang"] == "en"]:
                    ref = item["reference"]
                    _score_all(page, str(round(sum(ref.values()) / len(ref))))
                    page.get_by_role("button", name="Submit rating").click()
                    page.get_by_role("button", name="Next").click()
                for step in range(BATCH * BATCHES + 2 * BATCHES):
                    if page.get_by_text("Thank you! You have finished.").count():
                        break
                    told = page.get_by_text("choose ", exact=False)
                    expect(page.get_by_test_id("stRadio")).to_have_count(5)
                    score = (
                        "3" if not told.count() else told.first.inner_text().split("choose ")[1][0]
                    )
                    _score_all(page, score if told.count() else str(2 + step % 3))
                    page.get_by_role("button", name="Submit rating").click()
                    page.wait_for_timeout(300)
                expect(
                    page.get_by_text("Thank you! You have finished.", exact=False)
                ).to_be_visible()
                done += 1
                page.close()
            chromium.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return done


def _score_all(page, score: str) -> None:  # type: ignore[no-untyped-def]
    """Pick ``score`` on every rubric dimension of the form on the page."""
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
        self.ratings = RatingStore(store)
        self.random = random.Random(seed)
        self.minute = 0
        self.start = datetime.now(UTC) + timedelta(minutes=5)
        set_clock(lambda: self.start + timedelta(minutes=self.minute))
        self.crashes: list[str] = []
        self.places_max = 0
        self.stalled = 0
        self.full = 0
        self.refused_full = 0

    def guarded(self, action, *args) -> None:  # type: ignore[no-untyped-def]
        """Run one step; a CrowdError is a sentence for the worker, anything else a crash."""
        try:
            action(*args)
        except crowd.CrowdError as err:
            if "full" in str(err):
                self.refused_full += 1
        except Exception:  # noqa: BLE001 - counted and shown: the benchmark's point
            self.crashes.append(traceback.format_exc(limit=4))

    def arrive(self, person: Sim) -> None:
        ids = crowd.platform_ids(self.invite, person.ids, KEY.encode())
        person.username = crowd.join(self.store, KEY.encode(), self.invite, ids).username

    def act(self, person: Sim) -> None:
        """The person's next step, as the join page would take it."""
        if person.behaviour == "reload" or self.minute == person.idle_until:
            crowd.returning(self.store, self.invite, person.ids)  # a reload / coming back
        worker = crowd.worker_of(self.store, person.username or "", self.invite)
        if worker is None or worker.status not in crowd.UNDER_WAY:
            if worker is not None and crowd.outcome(worker):
                crowd.give_code(self.store, worker, self.invite)
            person.gone = True
            return
        crowd.seen(self.store, worker)
        if worker.status == "consent":
            crowd.consent(self.store, worker, self.invite)
        elif worker.status == "screening":
            native = "other" if person.behaviour == "screen_out" else person.native
            langs = crowd.screen(self.store, worker, ("ko", "en"), native, 0, 0)
            if langs:
                profile = crowd.profile_of(worker, native, 0, 0, langs)
                self.ratings.save_profile(profile)
        elif not self.ratings.calibrated(worker.username):
            self.ratings.mark_calibrated(worker.username)
        else:
            self.rate(person, worker)

    def rate(self, person: Sim, worker: crowd.Worker) -> None:
        if crowd.batch_state(self.store, worker, self.invite).finished:
            crowd.finish(self.store, worker)
            return
        item = crowd.next_item(self.store, worker, self.invite)
        if item is None:
            crowd.finish(self.store, worker)
            return
        if person.behaviour == "second_tab":
            crowd.next_item(self.store, worker, self.invite)  # the other tab: same item
        told = item.instructed_score
        if person.behaviour == "fail_checks":
            score = 5
        elif person.behaviour == "straight_line":
            score = 2
        else:
            score = told if told is not None else self.random.randint(1, 5)
        self.ratings.save_rating(item.assignment_id, worker.username, dict.fromkeys(codes(), score))
        crowd.check_attention(self.store, worker)
        person.responses += told is None
        if person.behaviour == "leave_mid_batch" and person.responses == 3:
            person.gone = True
        if person.behaviour == "idle_past_timeout" and person.responses == 3:
            person.idle_until = self.minute + TIMEOUT + 15

    def measure(self) -> None:
        places = crowd.places(self.store, self.invite)
        self.places_max = max(self.places_max, places.used)
        open_items = self.ratings.room_for_newcomer(self.invite.study_id)
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
                    self.guarded(self.arrive, person)
                elif (
                    person.username
                    and not person.gone
                    and person.arrives < self.minute
                    and self.minute >= person.idle_until
                    and self.random.random() < 0.5  # a step every two minutes or so
                ):
                    self.guarded(self.act, person)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--places", type=int, default=20)
    parser.add_argument("--workers", type=int, default=60)
    parser.add_argument("--browser", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    began = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="koed-study-bench-"))
    store, invite, token = build(folder / "koed.db", args.places)
    in_browser = browser_workers(folder / "koed.db", token, args.browser)
    chooser = random.Random(args.seed)
    names, weights = list(BEHAVIOURS), list(BEHAVIOURS.values())
    people = [
        Sim(n, chooser.choices(names, weights)[0], chooser.choice(["ko", "en"]),
            arrives=int(chooser.uniform(0, 240)))
        for n in range(args.workers)
    ]  # fmt: skip
    study = Study(store, invite, people, args.seed)
    try:
        study.run(max_minutes=24 * 60)
    finally:
        set_clock(None)
    rows, _ = crowd.report_rows(store, invite)
    without_work = sum(1 for r in rows if r["code_kind"] == "completed" and r["rated"] < 1)
    print(f"items: {study.items()}")
    print(f"k: {OVERLAP}")
    print(f"finished_items: {study.finished_items()}")
    print(f"ratings: {sum(r['rated'] for r in rows)}")
    print(f"places_max: {study.places_max}")
    print(f"codes_without_work: {without_work}")
    print(f"stalled_minutes: {study.stalled}")
    print(f"full_minutes: {study.full}")
    print(f"refused_full: {study.refused_full}")
    print(f"browser_workers_done: {in_browser}")
    print(f"crashes: {len(study.crashes)}")
    print(f"sim_minutes: {study.minute}")
    print(f"wall_s: {time.perf_counter() - began:.1f}")
    for crash in study.crashes[:3]:
        print(crash, file=sys.stderr)


if __name__ == "__main__":
    main()
