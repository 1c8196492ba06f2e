"""Accounts and rating through AppTest: login, lock-out, roles, onboarding, a full rating."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from fixtures.rating import rater, seeded_store, study
from koed_core.db import Store
from koed_core.rating import accounts as users
from koed_core.rating.studies import StudyRules

ROOT = Path(__file__).resolve().parents[1]
PASSWORDS = {"boss": "boss-password-1", "mina": "mina-password-1"}
COOKIE_KEY = "k" * 40


@pytest.fixture
def accounts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "accounts.yaml"
    users.add_user(path, "boss", "admin", "Boss", PASSWORDS["boss"])
    users.add_user(path, "mina", "rater", "Mina", PASSWORDS["mina"])
    monkeypatch.setenv("KOED_USERS", str(path))
    monkeypatch.setenv("KOED_COOKIE_KEY", COOKIE_KEY)
    return path


def _login(username: str, password: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/account/login.py").run()
    return _submit(at, username, password or PASSWORDS[username])


def _submit(at: AppTest, username: str, password: str) -> AppTest:
    at.text_input[0].input(username)
    at.text_input[1].input(password)
    return at.button[0].click().run()


def _as(username: str) -> AppTest:
    """A session already logged in (as the cookie re-login leaves it), main script run."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["authentication_status"] = True
    at.session_state["username"] = username
    at.session_state["name"] = username
    return at.run()


def _page_titles(at: AppTest) -> list[str]:
    return [t.value for t in at.title]


@pytest.mark.slow
def test_login_right_and_wrong(accounts: Path) -> None:
    at = _login("mina", "not-her-password")
    assert [e.value for e in at.error] == [auth_component().failed_message()]
    assert users.load(accounts)["usernames"]["mina"]["failed_login_attempts"] == 1
    assert PASSWORDS["mina"] not in str(at) and "$2b$" not in str(at)
    at = _submit(at, "mina", PASSWORDS["mina"])
    assert not at.exception
    assert at.success[0].value == "Logged in as Mina (rater)."
    assert users.load(accounts)["usernames"]["mina"]["failed_login_attempts"] == 0


def _cookie_scripts(at: AppTest) -> list[str]:
    return [b for b in (str(e.proto.body) for e in at.get("html")) if "document.cookie" in b]


@pytest.mark.slow
def test_the_login_cookie_is_written_once_and_nothing_answers_back(accounts: Path) -> None:
    """No page draws a component that answers: an answer starts a new run of the page,
    which ran every full reload twice when the cookie's component was drawn on every run,
    and, drawn beside the login form, stopped the run that was checking a password (the
    login was lost). A login's cookie is written once, by a one-way script, in the run
    after the login: a token signed with the cookie key, for the account that logged in."""
    import jwt

    visitor = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    admin = _as("boss")
    for at in (visitor, admin):
        assert not at.exception and at.title
        assert not at.get("component_instance") and not _cookie_scripts(at)
    visitor.switch_page("app_pages/account/login.py").run()
    assert not visitor.get("component_instance") and not _cookie_scripts(visitor)
    at = _submit(visitor, "boss", PASSWORDS["boss"])
    assert at.success[0].value == "Logged in as Boss (admin)."
    assert not at.get("component_instance")
    [script] = _cookie_scripts(at)
    token = re.search(r"koed_studio_auth=([\w.-]+);", script)
    assert token and "SameSite=Strict" in script and "Max-Age=86400" in script, script
    claims = jwt.decode(token.group(1), COOKIE_KEY, algorithms=["HS256"])
    assert claims["username"] == "boss"
    assert not _cookie_scripts(at.run())  # written once, not on every run


def auth_component():  # imported late: components need a Streamlit runtime in scope
    from components.account import login_form

    return login_form


@pytest.mark.slow
def test_back_off_after_repeated_failures_and_unlock(accounts: Path) -> None:
    at = _login("mina", "wrong-1")
    for attempt in range(2, users.MAX_FAILED_LOGINS + 1):
        at = _submit(at, "mina", f"wrong-{attempt}")
    entry = users.load(accounts)["usernames"]["mina"]
    assert entry["locked_until"] > 0  # waiting out the back-off, not locked for good
    at = _submit(at, "mina", PASSWORDS["mina"])  # right password, but waiting
    # the same answer as for a wrong password or an unknown name: nothing to enumerate
    assert [e.value for e in at.error] == [auth_component().failed_message()]
    unknown = _login("nobody", "whatever-1")
    assert [e.value for e in unknown.error] == [auth_component().failed_message()]
    assert not at.success
    users.unlock(accounts, "mina")
    assert _login("mina").success[0].value == "Logged in as Mina (rater)."


@pytest.mark.slow
def test_roles_see_only_their_pages(accounts: Path) -> None:
    for page in (
        "app_pages/rating/rate.py",
        "app_pages/rating/studies.py",
        "app_pages/rating/dashboard.py",
        "app_pages/models/runs.py",
        "app_pages/models/judge.py",
    ):
        visitor = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            visitor.switch_page(page)
    rater_at = _as("mina")
    assert any(
        "Logged in: mina (rater)" in c.value or "Logged in: Mina (rater)" in c.value
        for c in rater_at.sidebar.caption
    )
    for page in (
        "app_pages/rating/studies.py",
        "app_pages/rating/dashboard.py",
        "app_pages/models/runs.py",
        "app_pages/models/judge.py",
    ):
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            _as("mina").switch_page(page)
    rater_at.switch_page("app_pages/rating/rate.py").run()
    assert _page_titles(rater_at) == ["Rate responses"]
    for page in (
        "app_pages/rating/rate.py",
        "app_pages/rating/studies.py",
        "app_pages/rating/dashboard.py",
        "app_pages/models/runs.py",
        "app_pages/account/login.py",
    ):
        admin_at = _as("boss")
        admin_at.switch_page(page).run()
        assert not admin_at.exception, (page, [e.value for e in admin_at.exception])
        assert not admin_at.error, (page, [e.value for e in admin_at.error])


@pytest.mark.parametrize(
    "page",
    [
        "app_pages/rating/studies.py",
        "app_pages/rating/dashboard.py",
        "app_pages/models/runs.py",
        "app_pages/models/judge.py",
    ],
)
def test_admin_pages_guard_themselves_when_run_alone(accounts: Path, page: str) -> None:
    # A first deep-linked session runs a page script without app.py (app_pages/ folder, MPA v1).
    rater_session = AppTest.from_file(str(ROOT / page), default_timeout=60)
    rater_session.session_state["authentication_status"] = True
    rater_session.session_state["username"] = "mina"
    rater_session.run()
    assert rater_session.error[0].value == "This page is for admins only."
    visitor = AppTest.from_file(str(ROOT / page), default_timeout=60).run()
    assert visitor.info[0].value.startswith("Log in first")
    assert not [b for b in visitor.button if b.label in ("Create study", "Run")]


@pytest.mark.slow
@pytest.mark.parametrize("key", [None, "replace-with-a-long-random-string", "short"])
def test_rating_pages_stay_closed_without_a_real_cookie_key(
    accounts: Path, monkeypatch: pytest.MonkeyPatch, key: str | None
) -> None:
    if key is None:
        monkeypatch.delenv("KOED_COOKIE_KEY")
    else:
        monkeypatch.setenv("KOED_COOKIE_KEY", key)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/account/login.py").run()
    assert "cookie key" in at.warning[0].value and "KOED_COOKIE_KEY" in at.warning[0].value
    assert not at.text_input  # no login form
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run().switch_page(
            "app_pages/rating/rate.py"
        )


@pytest.mark.slow
def test_onboarding_calibration_then_a_full_rating(accounts: Path, tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "koed.db")
    study(store, run_id, attention_checks=0, langs=("en",))
    at = _as("mina")
    at.switch_page("app_pages/rating/rate.py").run()
    at.multiselect[0].set_value(["en"])
    at.number_input[0].set_value(3.0)
    at.button[0].click().run()  # save onboarding
    profile = StudyRules(Store(tmp_path / "koed.db")).profile("mina")
    assert profile is not None and profile.languages == ("en",) and profile.years_korea == 3.0
    for _ in range(2):  # two English calibration items, each with feedback
        assert at.subheader[0].value.startswith("Calibration")
        for radio in at.radio:
            radio.set_value(3)
        at.button[0].click().run()
        assert at.info and at.dataframe  # reference scores and feedback
        next(b for b in at.button if b.label == "Next").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("progress")[0].proto.text == "0 of 6 rated"
    for radio, score in zip(at.radio, (4, 5, 3, 4, 2), strict=False):
        radio.set_value(score)
    at.text_area[0].input("natural reply")
    next(b for b in at.button if b.label == "Submit rating").click().run()
    assert not at.exception
    rows = list(
        Store(tmp_path / "koed.db").db.query(
            "select dimension, score, comment, time_spent_s from ratings where username = 'mina'"
        )
    )
    assert {r["dimension"]: r["score"] for r in rows} == {
        "EX": 4,
        "IP": 5,
        "ER": 3,
        "EEA": 4,
        "CA": 2,
    }
    assert {r["comment"] for r in rows} == {"natural reply"} and all(
        r["time_spent_s"] >= 0 for r in rows
    )
    assert at.get("progress")[0].proto.text == "1 of 6 rated"


def test_incomplete_form_is_refused_with_the_missing_dimensions(
    accounts: Path, tmp_path: Path
) -> None:
    store, run_id = seeded_store(tmp_path / "koed.db")
    ratings, _ = study(store, run_id, attention_checks=0)
    rater(ratings, "mina")
    at = _as("mina")
    at.switch_page("app_pages/rating/rate.py").run()
    at.radio[0].set_value(4)
    next(b for b in at.button if b.label == "Submit rating").click().run()
    assert "missing: IP, ER, EEA, CA" in at.warning[0].value
    assert store.count("ratings") == 0


def test_response_markup_is_shown_literally(accounts: Path, tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "koed.db", dialogues=1)
    hostile = '<script>alert("x")</script> **bold** <img src=x onerror=alert(1)>'
    store.db.execute("update responses set text = ?", [hostile])
    store.db.conn.commit()
    ratings, _ = study(store, run_id, attention_checks=0, langs=("en",))
    rater(ratings, "mina", langs=("en",))
    at = _as("mina")
    at.switch_page("app_pages/rating/rate.py").run()
    assert hostile in [t.value for t in at.text]
    assert not any("<script>" in m.value or "onerror" in m.value for m in at.markdown)


def test_admin_builds_a_study_and_reads_the_dashboard(accounts: Path, tmp_path: Path) -> None:
    store, run_id = seeded_store(tmp_path / "koed.db")
    at = _as("boss")
    at.switch_page("app_pages/rating/studies.py").run()
    at.text_input[0].input("pilot")
    at.multiselect[0].set_value([run_id])
    next(b for b in at.button if b.label == "Create study").click().run()
    assert at.success[0].value == "Study 1 created."
    config = json.loads(store.db.execute("select config from studies").fetchone()[0])
    assert config["overlap"] == 3 and config["run_ids"] == [run_id]
    at.switch_page("app_pages/rating/dashboard.py").run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Responses with all their raters"] == "0 of 11"
    assert [b.label for b in at.get("download_button")] == ["Ratings CSV", "Ratings JSONL"]


def test_logout(accounts: Path) -> None:
    at = _as("mina")
    assert [b.label for b in at.sidebar.button] == ["Log out"]
    at.switch_page("app_pages/account/login.py").run()
    next(b for b in at.button if b.label == "Log out").click().run()
    assert "authentication_status" not in at.session_state  # the login forgotten
    [dropped] = _cookie_scripts(at)  # and the browser told to drop the cookie
    assert "koed_studio_auth=; Max-Age=0" in dropped
    assert at.title[0].value == "Log in" and not at.sidebar.button
    fresh_run = AppTest.from_file(str(ROOT / "app_pages/rating/rate.py"), default_timeout=60)
    assert fresh_run.run().info[0].value.startswith("Log in first")


def test_the_dashboard_draws_a_crowd_study_in_the_middle(
    accounts: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One worker has their code, one has only joined: the dashboard draws every worker,
    the decisions and the bulk files, with no traceback (the page once stopped at
    "NaTType does not support timestamp" while anyone was under way)."""
    from koed_core.judge.rubric import codes
    from koed_core.rating import crowd

    monkeypatch.setenv("KOED_SECRET_KEY", "s" * 40)
    key = ("s" * 40).encode()
    store, run_id = seeded_store(tmp_path / "koed.db")
    ratings, study_id = study(store, run_id, overlap=3, attention_checks=0)
    invite, _ = crowd.create_invite(
        store,
        key,
        study_id,
        crowd.InviteRequest(
            platform="prolific",
            days=7,
            cap=5,
            batch_size=1,
            reward=1.0,
            consent_ko="동의합니다.",
            consent_en="I agree.",
            contact="researcher@example.org",
        ),
    )
    done = crowd.join(store, key, invite, {"PROLIFIC_PID": "a1" * 12, "SESSION_ID": "s1"})
    crowd.screen(store, done, ("ko", "en"), "ko", 30, 0)
    ratings.save_profile(crowd.profile_of(done, "ko", 30, 0, ("ko",)))
    item = ratings.next_item(study_id, done.username)
    assert item is not None
    ratings.save_rating(item.assignment_id, done.username, dict.fromkeys(codes(), 4))
    crowd.finish(store, done)
    crowd.give_code(store, crowd.worker_of(store, done.username), invite)  # type: ignore[arg-type]
    crowd.join(store, key, invite, {"PROLIFIC_PID": "b2" * 12, "SESSION_ID": "s2"})
    at = _as("boss")
    at.switch_page("app_pages/rating/dashboard.py").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [d.value for d in at.dataframe]
    workers = next(f for f in shown if "suggested" in f.columns)
    assert len(workers) == 2 and "wait" in set(workers["suggested"])
