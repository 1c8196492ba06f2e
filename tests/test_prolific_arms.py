"""Issue 68, items 1 to 3, against the planted Prolific (fixtures/fake_prolific.py): who can
take part is shown per language arm before anything costs money ("fewer than 25" said as
such, a short arm asks for confirmation), a ko+en link is one study per language arm that
every command follows, and nobody takes part twice (the study's participant group)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from fixtures.fake_prolific import FakeProlific, NotEligible
from fixtures.rating import seeded_store, study
from koed_core.cli import main
from koed_core.db import Store
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific, prolific_arms, prolific_bonus
from koed_core.rating.crowd.prolific_client import ProlificClient
from tests.test_prolific import (  # noqa: F401 - fixtures
    KEY,
    TOKEN,
    Clock,
    _client,
    _fresh,
    clock,
    fake,
)

KOREAN, ENGLISH = "17", "0"


def _link(tmp_path: Path, langs: tuple[str, ...], cap: int = 4) -> tuple[Store, crowd.Invite]:
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=1, attention_checks=0, langs=langs)
    invite, _token = crowd.create_invite(
        store,
        KEY,
        study_id,
        crowd.InviteRequest(platform="prolific", days=7.0, cap=cap, batch_size=2,
                            consent_ko="동의합니다.", consent_en="I agree.", contact="researcher@example.org", reward=2.0),
    )  # fmt: skip
    return store, invite


def _cli(monkeypatch: pytest.MonkeyPatch, fake: FakeProlific) -> None:
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    monkeypatch.setenv("KOED_SECRET_KEY", "s" * 64)


@pytest.mark.slow
def test_a_dry_run_shows_each_arms_filters_and_eligible_count_and_a_short_arm_asks_first(
    tmp_path: Path,
    fake: FakeProlific,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = _link(tmp_path, ("ko", "en"), cap=40)
    fake.plant_pool(10, KOREAN)  # Prolific answers 0: fewer than 25
    fake.plant_pool(300, ENGLISH)
    _cli(monkeypatch, fake)
    db = ["--invite", invite.id, "--db", str(store.path), "--url", "https://koed.example"]
    assert main(["prolific", "publish", *db, "--json"]) == 0
    ko, en = json.loads(capsys.readouterr().out)
    assert (ko["arm"], ko["places"], ko["eligible"], ko["eligible_text"]) == (
        "ko",
        20,
        0,
        "fewer than 25",
    )
    assert (en["arm"], en["places"], en["eligible"]) == ("en", 20, 300)
    assert ko["filters"][0] == "first language: Korean"
    assert en["filters"][0] == "first language: English"
    assert all(s["status"] == "UNPUBLISHED" for s in fake.studies.values())
    assert len(fake.studies) == 2  # one draft per arm, nothing published
    assert main(["prolific", "publish", *db]) == 0
    out = capsys.readouterr().out
    assert "eligible on Prolific: fewer than 25 for 20 places" in out
    assert "eligible on Prolific: 300 for 20 places" in out
    assert main(["prolific", "publish", *db, "--publish"]) == 1
    said = capsys.readouterr().err
    assert "fewer than 25 eligible participants for the Korean arm" in said
    assert "--accept-few" in said and "Traceback" not in said
    assert all(s["status"] == "UNPUBLISHED" for s in fake.studies.values())  # neither arm
    assert main(["prolific", "publish", *db, "--publish", "--accept-few"]) == 0
    assert all(s["status"] == "ACTIVE" for s in fake.studies.values())
    assert len(fake.studies) == 2


@pytest.mark.slow
def test_each_arm_is_its_own_study_with_its_filter_places_and_codes_and_sync_follows_both(
    tmp_path: Path, fake: FakeProlific
) -> None:
    store, invite = _link(tmp_path, ("ko", "en"), cap=3)
    drafts = prolific.publish_link(store, _client(store, fake, invite), invite, KEY,
                                   "https://koed.example", go_live=True)  # fmt: skip
    invite = _fresh(store, invite)
    arms = dict(invite.prolific_arms)
    assert [d.arm.lang for d in drafts if d.arm] == ["ko", "en"]
    ko, en = fake.studies[arms["ko"]], fake.studies[arms["en"]]
    assert ko["filters"][0] == {"filter_id": "first-language", "selected_values": [KOREAN]}
    assert en["filters"][0] == {"filter_id": "first-language", "selected_values": [ENGLISH]}
    assert (ko["total_available_places"], en["total_available_places"]) == (2, 1)
    assert ko["internal_name"].endswith("-ko") and en["internal_name"].endswith("-en")
    assert ko["completion_codes"] == en["completion_codes"]  # the link's codes, both arms
    people = []
    for lang in ("ko", "en"):  # someone arrives through each arm's STUDY_ID
        sub = fake.arrive(arms[lang])
        params = {"PROLIFIC_PID": sub["participant_id"], "STUDY_ID": arms[lang],
                  "SESSION_ID": sub["id"]}  # fmt: skip
        ids = crowd.platform_ids(invite, params, KEY)  # type: ignore[arg-type]
        people.append((sub, crowd.join(store, KEY, invite, ids)))
    fake.give_back(people[1][0]["id"])  # the English arm's person returns
    reports = prolific.sync_link(store, _client(store, fake, invite), invite)
    assert [r.lang for r in reports] == ["ko", "en"]
    assert reports[1].ended == [people[1][0]["participant_id"]]
    assert crowd.worker_of(store, people[1][1].username).status == "returned"  # type: ignore[union-attr]


@pytest.mark.slow
def test_nobody_takes_part_twice_in_the_other_arm_or_a_later_link(
    tmp_path: Path, fake: FakeProlific
) -> None:
    store, invite = _link(tmp_path, ("ko", "en"), cap=4)
    client = _client(store, fake, invite)
    prolific.publish_link(store, client, invite, KEY, "https://koed.example", go_live=True)
    invite = _fresh(store, invite)
    arms = dict(invite.prolific_arms)
    korean = fake.arrive(arms["ko"], participant_id="aa" * 12)
    fake.give_back(korean["id"])  # took part, then returned: still not twice
    prolific.sync_link(store, client, invite)
    group = prolific_arms.known_group(store, invite.study_id)
    assert group is not None and "aa" * 12 in fake.groups[group]["participants"]
    with pytest.raises(NotEligible):
        fake.arrive(arms["en"], participant_id="aa" * 12)
    later, _token = crowd.create_invite(
        store, KEY, invite.study_id,
        crowd.InviteRequest(platform="prolific", days=7.0, cap=2, batch_size=2,
                            consent_ko="동의합니다.", consent_en="I agree.", contact="researcher@example.org", reward=2.0),
    )  # fmt: skip
    prolific.publish_link(store, client, later, KEY, "https://koed.example", go_live=True)
    later = _fresh(store, later)
    for study_id in dict(later.prolific_arms).values():
        assert {"filter_id": "participant_group_blocklist", "selected_values": [group]} in (
            fake.studies[study_id]["filters"]
        )
        with pytest.raises(NotEligible):
            fake.arrive(study_id, participant_id="aa" * 12)


@pytest.mark.slow
def test_the_eligible_count_leaves_out_the_study_group(tmp_path: Path, fake: FakeProlific) -> None:
    store, invite = _link(tmp_path, ("en",), cap=2)
    people = fake.plant_pool(30, ENGLISH)
    client = _client(store, fake, invite)
    (plan,) = prolific_arms.plan_arms(store, client, invite)
    assert (plan.eligible, plan.short) == (30, False)
    prolific.publish(store, client, invite, KEY, "https://koed.example", go_live=True)
    invite = _fresh(store, invite)
    for who in people[:6]:
        fake.arrive(str(invite.prolific_study_id), participant_id=who)
    prolific.sync(store, client, invite)
    (plan,) = prolific_arms.plan_arms(store, client, invite)
    assert (plan.eligible, plan.eligible_text, plan.short) == (0, "fewer than 25", True)


def test_an_old_database_takes_the_arms_and_events(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "data" / "koed-0.1.0.db", old)
    Store(old)
    with sqlite3.connect(old) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
        columns = {r[1] for r in conn.execute("pragma table_info(invites)")}
    assert "prolific_events" in tables and "prolific_arms" in columns


@pytest.mark.slow
def test_bonuses_for_a_two_arm_link_are_paid_on_each_arms_own_study_each_once(
    tmp_path: Path, fake: FakeProlific
) -> None:
    """Each person's bonus is set up and paid on the study of the arm they came in through
    (Prolific refuses a bonus on another study), with the evidence rules of one study: a
    lost pay answer in one arm stays "paying" and is never sent again, then is paid on what
    the submission shows, while the other arm is paid at once."""
    store, invite = _link(tmp_path, ("ko", "en"), cap=2)
    client = _client(store, fake, invite)
    prolific.publish_link(store, client, invite, KEY, "https://koed.example", go_live=True)
    invite = _fresh(store, invite)
    arms = dict(invite.prolific_arms)
    subs = {}
    for lang in ("ko", "en"):
        sub = fake.arrive(arms[lang])
        params = {"PROLIFIC_PID": sub["participant_id"], "STUDY_ID": arms[lang],
                  "SESSION_ID": sub["id"]}  # fmt: skip
        crowd.join(store, KEY, invite, crowd.platform_ids(invite, params, KEY))  # type: ignore[arg-type]
        subs[lang] = sub
    path = tmp_path / "b.csv"
    path.write_text(f"{subs['ko']['participant_id']},0.50\n{subs['en']['participant_id']},0.75\n")
    dry = prolific_bonus.bonus(store, None, invite, path)
    assert [b.state for b in dry] == ["to pay", "to pay"] and not fake.bulk_bonuses
    fake.pay_later, fake.lose_pay_answers = False, 1  # the first arm's pay answer is lost
    first = {b.participant_id: b for b in prolific_bonus.bonus(store, client, invite, path)}
    ko, en = first[subs["ko"]["participant_id"]], first[subs["en"]["participant_id"]]
    assert ko.state == "paying" and "answer lost" in ko.note
    assert en.state == "paid" and en.sent_now
    bulks = {b["study"]: b for b in fake.bulk_bonuses.values()}
    assert set(bulks) == {arms["ko"], arms["en"]}  # one set-up on each arm's own study
    assert bulks[arms["ko"]]["lines"] == [(subs["ko"]["participant_id"], 50)]
    assert bulks[arms["en"]]["lines"] == [(subs["en"]["participant_id"], 75)]
    again = prolific_bonus.bonus(store, _client(store, fake, invite), invite, path)
    assert [(b.state, b.sent_now) for b in again] == [("paid", False), ("paid", False)]
    assert fake.submissions[subs["ko"]["id"]]["bonus_payments"] == [50]
    assert fake.submissions[subs["en"]["id"]]["bonus_payments"] == [75]
    assert len(fake.pay_calls) == 2  # one pay call per arm, none sent again


@pytest.mark.slow
def test_a_bonus_for_someone_of_no_arms_study_is_refused_before_anything_is_sent(
    tmp_path: Path, fake: FakeProlific
) -> None:
    store, invite = _link(tmp_path, ("ko", "en"), cap=2)
    client = _client(store, fake, invite)
    prolific.publish_link(store, client, invite, KEY, "https://koed.example", go_live=True)
    invite = _fresh(store, invite)
    sub = fake.arrive(dict(invite.prolific_arms)["ko"])
    params = {"PROLIFIC_PID": sub["participant_id"], "STUDY_ID": dict(invite.prolific_arms)["ko"],
              "SESSION_ID": sub["id"]}  # fmt: skip
    worker = crowd.join(store, KEY, invite, crowd.platform_ids(invite, params, KEY))  # type: ignore[arg-type]
    store.db.execute(  # a visit recorded before arms kept no arm's STUDY_ID
        "update crowd_workers set study_ref = null where username = ?", [worker.username]
    )
    (tmp_path / "b.csv").write_text(f"{sub['participant_id']},0.50\n")
    with pytest.raises(crowd.CrowdError, match="no language arm's Prolific study"):
        prolific_bonus.bonus(store, client, invite, tmp_path / "b.csv")
    assert not fake.bulk_bonuses and not fake.pay_calls


def test_the_filter_list_is_read_in_the_workspace_where_its_groups_are(
    tmp_path: Path, fake: FakeProlific
) -> None:
    """filters/get-filters: ``workspace_id`` "is used to get contextual data such as
    previous studies and participant groups"."""
    store, invite = _link(tmp_path, ("ko",), cap=2)
    env = {
        "PROLIFIC_API_TOKEN": TOKEN,
        "PROLIFIC_API_URL": fake.base_url,
        "PROLIFIC_WORKSPACE_ID": "cd" * 12,
    }
    client = ProlificClient.from_env(env, store, sleep=lambda _s: None)
    prolific_arms.plan_arms(store, client, invite)
    assert fake.filter_reads and set(fake.filter_reads) == {"cd" * 12}  # every page of it
