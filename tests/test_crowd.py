"""Crowd studies: invite links, platform ids, consent, screening, batches, pay, exports."""

# ruff: noqa: F811 - the clock fixture comes from fixtures/clock.py, as pytest finds it

from __future__ import annotations

import io
import json
import re
import time
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from fixtures.clock import Clock, clock  # noqa: F401 - the fixture is used by name
from fixtures.rating import crowd_work, seeded_store, study
from koed_core.cli import main
from koed_core.db import Runs, Store
from koed_core.db.crowd import Crowd
from koed_core.errors import KoedError
from koed_core.judge.rubric import codes
from koed_core.rating import crowd
from koed_core.rating.report import export_rows, rows_csv
from koed_core.rating.studies import StudyRules

ROOT = Path(__file__).resolve().parents[1]
KEY = b"k" * 32
PROLIFIC = {
    "PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e",
    "STUDY_ID": "60aa00000000000000000001",
    "SESSION_ID": "70bb00000000000000000001",
}


def _invite(store: Store, study_id: int, **changes: object) -> tuple[crowd.Invite, str]:
    options: dict[str, object] = {
        "platform": "prolific",
        "days": 7.0,
        "cap": 3,
        "batch_size": 4,
        "consent_ko": "동의합니다.",
        "consent_en": "I agree.",
        "reward": 2.0,
        "contact": "researcher@example.org",
    }
    options.update(changes)
    return crowd.create_invite(store, KEY, study_id, crowd.InviteRequest(**options))  # type: ignore[arg-type]


@pytest.fixture
def crowd_study(tmp_path: Path) -> tuple[Store, int]:
    store, run_id = seeded_store(tmp_path / "koed.db")
    _, study_id = study(store, run_id, overlap=3, attention_checks=1)
    return store, study_id


def test_a_link_is_checked_signed_expiring_capped_and_revocable(
    crowd_study: tuple[Store, int],
) -> None:
    store, study_id = crowd_study
    invite, token = _invite(store, study_id, cap=2)
    assert crowd.check_invite(store, KEY, token) == invite
    assert invite.redirect_url == crowd.PROLIFIC_DONE.format(code=invite.completion_code)
    forged = token[:-1] + ("0" if token[-1] != "0" else "1")
    for bad in (forged, invite.id, "", "x.y"):
        with pytest.raises(crowd.CrowdError, match="not valid"):
            crowd.check_invite(store, KEY, bad)
    with pytest.raises(crowd.CrowdError, match="expired on"):
        crowd.check_invite(store, KEY, token, at=invite.expires + 1)
    first = crowd.join(store, KEY, invite, PROLIFIC)
    again = crowd.join(store, KEY, invite, PROLIFIC)  # the same worker comes back
    assert again.username == first.username and again.resumed and not first.resumed
    crowd.join(store, KEY, invite, {**PROLIFIC, "PROLIFIC_PID": "other1"})
    with pytest.raises(crowd.CrowdError, match="all 2 places are taken"):
        crowd.join(store, KEY, invite, {**PROLIFIC, "PROLIFIC_PID": "third1"})
    assert crowd.join(store, KEY, invite, PROLIFIC).username == first.username  # still in
    Crowd(store).revoke(invite.id)
    with pytest.raises(crowd.CrowdError, match="withdrawn"):
        crowd.check_invite(store, KEY, token)
    StudyRules(store).close(study_id)
    _, fresh = _invite(store, study_id)
    with pytest.raises(crowd.CrowdError, match="study has ended"):
        crowd.check_invite(store, KEY, fresh)


def test_platform_ids_are_required_and_checked(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    prolific, _ = _invite(store, study_id)
    mturk, _ = _invite(store, study_id, platform="mturk")
    with pytest.raises(crowd.CrowdError, match="Open this study from Prolific"):
        crowd.platform_ids(prolific, {"STUDY_ID": "x"})
    with pytest.raises(crowd.CrowdError, match="Open this study from Mechanical Turk"):
        crowd.platform_ids(mturk, {})
    with pytest.raises(crowd.CrowdError, match="PROLIFIC_PID is not a Prolific id"):
        crowd.platform_ids(prolific, {"PROLIFIC_PID": "=HYPERLINK(1)"})
    ids = {"workerId": "A1B2C3D4E5", "assignmentId": "3AS9XYZ0001", "hitId": "3HIT70000"}
    assert crowd.platform_ids(mturk, ids) == ids
    with pytest.raises(crowd.CrowdError, match="workerId is not a Mechanical Turk id"):
        crowd.platform_ids(mturk, {**ids, "workerId": "a1b2"})


def test_bad_settings_are_named(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    with pytest.raises(crowd.CrowdError, match="platform must be"):
        _invite(store, study_id, platform="upwork")
    with pytest.raises(crowd.CrowdError, match="consent text in both"):
        _invite(store, study_id, consent_ko="  ")
    with pytest.raises(crowd.CrowdError, match="at least 1"):
        _invite(store, study_id, cap=0)


def test_two_workers_racing_for_the_last_place_get_one(crowd_study: tuple[Store, int]) -> None:
    import threading

    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=1)
    outcomes: list[str] = []

    def arrive(pid: str) -> None:
        try:
            crowd.join(Store(store.path), KEY, invite, {**PROLIFIC, "PROLIFIC_PID": pid})
            outcomes.append("in")
        except crowd.CrowdError:
            outcomes.append("full")

    threads = [threading.Thread(target=arrive, args=(f"w{n}",)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["full"] * 5 + ["in"]
    assert crowd.places(store, invite).used == 1


def test_screening_decides_languages_and_stops_politely(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=5)
    ko = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "ko1"})
    assert crowd.screen(store, ko, ("ko", "en"), "ko", 25, 0) == ("ko",)
    both = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "both1"})
    assert crowd.screen(store, both, ("ko", "en"), "en", 12, 30) == ("ko", "en")
    nobody = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "none1"})
    assert crowd.screen(store, nobody, ("ko", "en"), "other", 2, 3) == ()
    row = Crowd(store).worker(nobody.username)
    assert row is not None and row["status"] == "stopped"
    assert row["stop_reason"].startswith("screening")


def _rate_batch(
    store: Store, worker: crowd.Worker, invite: crowd.Invite, items: int, careful: bool = True
) -> None:
    """Rate ``items`` responses; a careful worker does what each attention check says, a
    careless one gives 5 everywhere."""
    crowd_work(store, worker, invite, items, careful, score=4 if careful else 5)


def test_batches_pay_and_the_platform_file_match_the_ratings(
    crowd_study: tuple[Store, int],
) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=5, batch_size=3, reward=1.5)
    rules = StudyRules(store)
    done = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "good1", "SESSION_ID": "s-good"})
    crowd.screen(store, done, ("ko", "en"), "ko", 30, 0)
    rules.save_profile(crowd.profile_of(done, "ko", 30, 0, ("ko",)))
    _rate_batch(store, done, invite, 3)
    assert crowd.batch_state(store, done, invite).finished
    careless = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "bad1", "SESSION_ID": "s-bad"})
    crowd.screen(store, careless, ("ko", "en"), "ko", 30, 0)
    rules.save_profile(crowd.profile_of(careless, "ko", 30, 0, ("ko",)))
    _rate_batch(store, careless, invite, 3, careful=False)
    assert crowd.attention_failures(store, study_id, careless.username) == 1
    for worker, minutes in ((done, 6), (careless, 3)):  # joining to code took this long
        crowd.finish(store, worker)
        crowd.give_code(store, crowd.worker_of(store, worker.username), invite)  # type: ignore[arg-type]
        store.db.execute(
            "update crowd_workers set created = '2026-01-01T10:00:00+00:00', completed_at = "
            f"'2026-01-01T10:0{minutes}:00+00:00' where username = ?",
            [worker.username],
        )
    store.db.conn.commit()
    frame, summary = crowd.pay_report(store, invite)
    assert set(frame["username"]) == {done.username, careless.username}
    assert set(frame["code_given"]) == {invite.completion_code}
    assert summary["median_min"] == pytest.approx(4.5)
    assert summary["p90_min"] == pytest.approx(5.7)
    assert summary["hourly_pay"] == pytest.approx(1.5 / (4.5 / 60))  # 20 an hour
    suggested = dict(zip(frame["username"], frame["suggested"], strict=True))
    assert suggested == {done.username: "accept", careless.username: "review"}
    crowd.decide(store, done.username, "accept", "boss")
    with pytest.raises(crowd.CrowdError, match="write the reason"):
        crowd.decide(store, careless.username, "reject", "boss")
    crowd.decide(store, careless.username, "reject", "boss", "answered 5 on the check item")
    with pytest.raises(crowd.CrowdError, match="decision must be"):
        crowd.decide(store, done.username, "maybe", "boss")
    csv = pd.read_csv(io.StringIO(crowd.platform_csv(store, invite)))
    assert dict(zip(csv["participant_id"], csv["decision"], strict=True)) == {
        "good1": "APPROVE",
        "bad1": "REJECT",
    }
    assert set(csv["session_id"]) == {"s-good", "s-bad"}
    # every rated worker is in the file, and the file names no one who did not rate
    rated = {r["username"] for r in store.rows("select distinct username from ratings")}
    assert rated == {done.username, careless.username}
    # the ratings export names raters by keyed pseudonym: no platform id, no username
    export = rows_csv(export_rows(rules, study_id, KEY))
    for secret in ("good1", "bad1", "s-good", "s-bad", done.username, careless.username):
        assert secret not in export


def test_mturk_file_has_its_own_columns(crowd_study: tuple[Store, int]) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, platform="mturk", cap=2)
    worker = crowd.join(
        store, KEY, invite, {"workerId": "AW1", "assignmentId": "ASG1", "hitId": "HIT1"}
    )
    crowd.decide(store, worker.username, "accept", "boss")
    csv = pd.read_csv(io.StringIO(crowd.platform_csv(store, invite)))
    assert list(csv.columns) == ["AssignmentId", "WorkerId", "HITId", "Approve", "Reject", "code"]
    assert csv.iloc[0][["AssignmentId", "WorkerId", "HITId", "Approve"]].tolist() == [
        "ASG1",
        "AW1",
        "HIT1",
        "x",
    ]


# The page ------------------------------------------------------------------------------


def _join_page(store: Store, token: str, **params: str) -> AppTest:
    """The worker's page in English (``?lang=en``; a Korean-rating worker would otherwise
    read it in Korean: tests/test_i18n.py walks that)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["invite"] = token
    at.query_params["lang"] = "en"
    for name, value in params.items():
        at.query_params[name] = value
    return at.run()


@pytest.mark.slow
def test_the_join_page_takes_a_worker_from_consent_to_the_completion_code(
    crowd_study: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, study_id = crowd_study
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    invite, token = _invite(store, study_id, batch_size=2)
    at = _join_page(store, token, **PROLIFIC)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.sidebar.get("nav")  # no menu for a crowd worker
    shown = [m.value for m in at.markdown]  # shown literally, the link's contact added
    assert "동의합니다\\.\n\n문의처\\: researcher@example\\.org" in shown
    at.checkbox[0].check().run()
    at.button[0].click().run()
    at.radio[0].set_value("ko").run()
    at.number_input[0].set_value(25)
    at.button[0].click().run()  # the screening form
    assert not at.exception, [e.value for e in at.exception]
    row = Crowd(store).worker(
        crowd.worker_name(KEY, study_id, "prolific", PROLIFIC["PROLIFIC_PID"])
    )
    assert row is not None and row["languages"] == "ko" and row["consent_version"]
    StudyRules(store).mark_calibrated(row["username"])  # (calibration has its own tests)
    at.run()
    kinds = []
    for n in range(3):  # two responses and, between them, the batch's attention check
        assert "rated" in at.get("progress")[0].proto.text
        current = _current(store, row["username"])
        told = store.rows(
            "select i.instructed_score from assignments a join study_items i on "
            "i.id = a.item_id where a.id = ?",
            [current],
        )[0]["instructed_score"]
        kinds.append("attention" if told else "response")
        for code in codes():
            at.radio(key=f"crowd.{current}.{code}").set_value(told or 3 + n)
        at.button[0].click().run()
        assert not at.exception, [e.value for e in at.exception]
    assert kinds == ["response", "attention", "response"]  # a batch ends on real work
    shown = " ".join(m.value for m in at.markdown)
    assert invite.completion_code in shown
    assert "go back to the platform with this code" in shown  # the code's next step
    assert "approve your pay" in shown
    assert Crowd(store).worker(row["username"])["status"] == "completed"  # type: ignore[index]
    # the same worker opening the link again (a new browser) is back at the code
    again = _join_page(store, token, **PROLIFIC)
    assert invite.completion_code in " ".join(m.value for m in again.markdown)
    assert crowd.places(store, invite).used == 1


def _current(store: Store, username: str) -> str:
    rows = store.rows(
        "select id from assignments where username = ? and status = 'assigned'", [username]
    )
    return str(rows[0]["id"])


@pytest.mark.slow
def test_an_expired_link_is_refused_on_the_page(
    crowd_study: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, study_id = crowd_study
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    invite, token = _invite(store, study_id, days=0.0001)
    time.sleep(0.02 + max(0.0, invite.expires - time.time()))  # time is the subject: expiry
    at = _join_page(store, token, **PROLIFIC)
    assert not at.exception
    assert "This invite link expired on" in at.error[0].value
    assert crowd.places(store, invite).used == 0


def test_calibration_far_from_the_references_stops_the_worker(
    crowd_study: tuple[Store, int],
) -> None:
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=5)
    close = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "close1"})
    assert crowd.check_calibration(store, close, [0.4, 1.6])  # mean 1.0: fine
    far = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "far1"})
    assert not crowd.check_calibration(store, far, [2.0, 2.4])
    row = Crowd(store).worker(far.username)
    assert row is not None and row["status"] == "stopped"
    assert row["stop_reason"] == "calibration: 2.2 points from the references"
    frame, _ = crowd.pay_report(store, invite)
    suggested = dict(zip(frame["username"], frame["suggested"], strict=True))
    # calibration is a skill check, not an attention check: a person looks, nobody is
    # rejected or asked to return for it
    assert suggested[far.username] == "review"


@pytest.mark.slow
def test_an_account_link_creates_a_rater_for_that_study_alone(
    crowd_study: tuple[Store, int], tmp_path: Path
) -> None:
    from koed_core.rating import accounts

    store, study_id = crowd_study
    users_file = tmp_path / "accounts.yaml"
    accounts.add_user(users_file, "boss", "admin", "Boss", "boss-password-1")
    invite, _ = _invite(store, study_id, platform="account", cap=2)
    worker = crowd.join_with_account(store, invite, users_file, "jiwoo", "jiwoo-pass-1", "Ji")
    assert worker.username == "jiwoo" and Crowd(store).bound_study("jiwoo") == study_id
    assert "jiwoo" in accounts.load(users_file)["usernames"]
    with pytest.raises(KoedError, match="exists already"):  # an admin's name: no place taken
        crowd.join_with_account(store, invite, users_file, "boss", "whatever-123")
    with pytest.raises(KoedError, match="at least 8"):
        crowd.join_with_account(store, invite, users_file, "minho", "short")
    assert crowd.places(store, invite).used == 1 and Crowd(store).bound_study("boss") is None
    crowd.join_with_account(store, invite, users_file, "minho", "minho-pass-1")
    with pytest.raises(crowd.CrowdError, match="all 2 places are taken"):
        crowd.join_with_account(store, invite, users_file, "late", "late-pass-12")
    assert "late" not in accounts.load(users_file)["usernames"]  # no account without a place
    platform_link, _ = _invite(store, study_id)
    with pytest.raises(crowd.CrowdError, match="not for accounts"):
        crowd.join_with_account(store, platform_link, users_file, "x1", "x1-password")


@pytest.mark.slow
def test_an_account_rater_sees_only_the_rating_page_for_their_study(
    crowd_study: tuple[Store, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fixtures.rating import sample
    from koed_core.db import StudyConfig
    from koed_core.rating import accounts

    store, study_id = crowd_study
    other = StudyRules(store).create_study(
        StudyConfig(name="other study", run_ids=(Runs(store).runs()["run_id"].iloc[0],)), sample()
    )
    users_file = tmp_path / "accounts.yaml"
    accounts.add_user(users_file, "boss", "admin", "Boss", "boss-password-1")
    monkeypatch.setenv("KOED_USERS", str(users_file))
    monkeypatch.setenv("KOED_COOKIE_KEY", "c" * 40)
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    _, token = _invite(store, study_id, platform="account", cap=2)
    at = _join_page(store, token)
    assert not at.exception, [e.value for e in at.exception]
    at.checkbox[0].check()
    at.radio[0].set_value("ko")
    at.number_input[0].set_value(20)
    at.text_input[0].input("jiwoo")
    at.text_input[1].input("jiwoo-pass-1")
    at.text_input[2].input("jiwoo-pass-1")
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Account jiwoo created" in at.success[0].value
    StudyRules(store).mark_calibrated("jiwoo")
    rater = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    rater.session_state["authentication_status"] = True
    rater.session_state["username"] = "jiwoo"
    rater.session_state["name"] = "jiwoo"
    rater.run()
    assert not rater.exception, [e.value for e in rater.exception]
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        rater.switch_page("app_pages/dialogues/explorer.py")  # rating only
    rater.switch_page("app_pages/rating/rate.py").run()
    offered = rater.selectbox(key="rate.study").options
    assert offered == ["test"] and other  # the other open study is not offered


@pytest.mark.slow
def test_no_export_names_a_crowd_worker(crowd_study: tuple[Store, int], tmp_path: Path) -> None:
    from koed_core.results.paper_export import export_bundle

    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=2, batch_size=3)
    worker = crowd.join(store, KEY, invite, {**PROLIFIC, "PROLIFIC_PID": "pid4export"})
    langs = crowd.screen(store, worker, ("ko", "en"), "ko", 30, 0)
    StudyRules(store).save_profile(crowd.profile_of(worker, "ko", 30, 0, langs))
    _rate_batch(store, worker, invite, 3)
    files = export_bundle(store, tmp_path / "bundle", images=False)
    rules = StudyRules(store)
    texts = [f.read_text(encoding="utf-8") for f in files if f.suffix in (".csv", ".json", ".md")]
    texts.append(rows_csv(export_rows(rules, study_id, KEY)))
    for secret in ("pid4export", PROLIFIC["SESSION_ID"], PROLIFIC["STUDY_ID"], worker.username):
        assert not any(secret in text for text in texts), secret


def test_a_withdrawn_link_lets_those_already_in_finish_and_nobody_new(
    crowd_study: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, study_id = crowd_study
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    invite, token = _invite(store, study_id)
    crowd.join(store, KEY, invite, PROLIFIC)
    Crowd(store).revoke(invite.id)
    inside = _join_page(store, token, **PROLIFIC)
    assert not inside.exception and not inside.error
    assert inside.checkbox  # back at the consent step, free to go on
    newcomer = _join_page(store, token, **{**PROLIFIC, "PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d99"})
    assert "withdrawn" in newcomer.error[0].value
    assert crowd.places(store, invite).used == 1


@pytest.mark.parametrize("param", ["PROLIFIC_PID", "worker"])
def test_a_bad_platform_id_is_echoed_literally(
    crowd_study: tuple[Store, int], monkeypatch: pytest.MonkeyPatch, param: str
) -> None:
    store, study_id = crowd_study
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    platform = "prolific" if param == "PROLIFIC_PID" else "none"
    _, token = _invite(store, study_id, platform=platform)
    attack = "![x](http://evil.invalid/p.png) **Your payment failed** [pay](http://evil.invalid)"
    at = _join_page(store, token, **{**PROLIFIC, param: attack})
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(e.value for e in at.error)
    assert param.replace("_", "\\_") in shown or "personal" in shown  # what was wrong...
    assert "evil" not in shown and "![x](" not in shown  # ...never the crafted value itself
    assert not at.markdown or all("evil" not in m.value for m in at.markdown)


def test_the_dashboard_builds_while_a_worker_is_under_way(
    crowd_study: tuple[Store, int],
) -> None:
    """A study spends its life in the middle: one worker finished beside one who has
    only just joined (no code, no completion time yet, read by pandas as NaN). The
    dashboard's figures and every bulk file still build, and the one under way waits."""
    store, study_id = crowd_study
    invite, _ = _invite(store, study_id, cap=5, batch_size=3, reward=1.5)
    rules = StudyRules(store)
    done = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "done1", "SESSION_ID": "s-done"})
    crowd.screen(store, done, ("ko", "en"), "ko", 30, 0)
    rules.save_profile(crowd.profile_of(done, "ko", 30, 0, ("ko",)))
    _rate_batch(store, done, invite, 3)
    crowd.finish(store, done)
    crowd.give_code(store, crowd.worker_of(store, done.username), invite)  # type: ignore[arg-type]
    busy = crowd.join(store, KEY, invite, {"PROLIFIC_PID": "busy1", "SESSION_ID": "s-busy"})
    frame, summary = crowd.pay_report(store, invite)
    by_name = frame.set_index("username")
    assert by_name.loc[busy.username, "suggested"] == "wait"
    assert pd.isna(by_name.loc[busy.username, "minutes"])
    assert by_name.loc[done.username, "minutes"] >= 0
    assert summary["median_min"] is not None
    assert set(crowd.decision_files(store, invite)) and crowd.platform_csv(store, invite)


# A link's smaller promises: its language, welcome back, the end page, the pay figures ----

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
