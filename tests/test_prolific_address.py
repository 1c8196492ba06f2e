"""The study's address is a public HTTPS address, and the draft is what the app says
(issue 61, item 3), against the planted Prolific: publish refuses addresses strangers
cannot open; a link's address is one setting that `koed serve --domain` records; a rerun
PATCHes a draft's changes and prints what Prolific holds; a lost answer to the draft's
creation, then a rerun, leaves one draft."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from fixtures.fake_prolific import FakeProlific
from fixtures.rating import seeded_store, study
from koed_core.cli import main
from koed_core.cli import serve as serve_cli
from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific
from koed_core.rating.crowd.address import record_domain
from tests.test_prolific import (  # noqa: F401 - fixtures
    KEY,
    TOKEN,
    Clock,
    _client,
    _fresh,
    clock,
    fake,
    world,
)
from tests.test_rating_pages import _as, accounts  # noqa: F401 - fixtures

NOT_PUBLIC = [
    "http://koed.example",
    "https://localhost:8501",
    "https://127.0.0.1:8080",
    "https://10.1.2.3",
    "https://192.168.0.7",
    "https://[::1]",
    "https://169.254.10.1",
    "https://studies.local",
    "https://a.example,b.example",
    "https://under_score.example",
]


@pytest.mark.parametrize("url", NOT_PUBLIC)
def test_publish_refuses_an_address_strangers_cannot_open(
    world: tuple[Store, crowd.Invite],  # noqa: F811
    fake: FakeProlific,  # noqa: F811
    url: str,
) -> None:
    store, invite = world
    with pytest.raises(crowd.CrowdError) as err:
        prolific.publish(store, _client(store, fake, invite), invite, KEY, url)
    said = str(err.value)
    assert said.startswith(f"a Prolific study cannot send people to {url}: ")
    assert "\n" not in said and said.count(";") == 1  # one sentence, then where to fix it
    assert fake.requests == [] and fake.studies == {}  # nothing asked of Prolific


def test_a_link_with_no_address_says_where_to_set_it(
    world: tuple[Store, crowd.Invite],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = world
    monkeypatch.delenv("KOED_PUBLIC_URL", raising=False)
    before = store.count("invites")
    made = ["invite", "create", "--study", str(invite.study_id), "--platform", "prolific", "--contact", "researcher@example.org",
            "--places", "3", "--batch-size", "2", "--db", str(store.path)]  # fmt: skip
    assert main(made) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "localhost" not in err
    for where in ("--url https://HOST", "KOED_PUBLIC_URL", "koed serve --domain HOST"):
        assert where in err
    assert store.count("invites") == before  # nothing stored


def test_the_address_koed_serve_records_reaches_invite_create(
    world: tuple[Store, crowd.Invite],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`koed serve --domain` records its address before it starts anything; here Caddy's
    check of the configuration refuses it, so serve stops there (no process started)."""
    store, invite = world
    monkeypatch.delenv("KOED_PUBLIC_URL", raising=False)
    monkeypatch.setattr(serve_cli.shutil, "which", lambda name: "/opt/caddy/caddy")
    refused = subprocess.CompletedProcess([], 1, "", "Error: stopped by the test")
    monkeypatch.setattr(serve_cli.subprocess, "run", lambda *a, **kw: refused)
    served = ["serve", "--domain", "study.koed.example", "--processes", "1", "--db",
              str(store.path), "--run-dir", str(tmp_path / "run"), "--backup-every", "0"]  # fmt: skip
    assert main(served) == 1 and "Caddy refused" in capsys.readouterr().err
    made = ["invite", "create", "--study", str(invite.study_id), "--platform", "prolific", "--contact", "researcher@example.org",
            "--places", "3", "--batch-size", "2", "--db", str(store.path)]  # fmt: skip
    assert main(made) == 0
    link = capsys.readouterr().out.splitlines()[0]
    assert link.startswith("https://study.koed.example/join?invite=")


@pytest.mark.slow
def test_a_rerun_patches_a_changed_reward_and_prints_what_prolific_holds(
    world: tuple[Store, crowd.Invite],  # noqa: F811
    fake: FakeProlific,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = world
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    monkeypatch.setenv("KOED_SECRET_KEY", "s" * 64)
    monkeypatch.delenv("KOED_PUBLIC_URL", raising=False)
    db = ["--invite", invite.id, "--db", str(store.path)]
    assert main(["prolific", "publish", *db, "--url", "https://koed.example"]) == 0
    capsys.readouterr()
    (study,) = fake.studies.values()
    study["total_available_places"] = 4  # someone changed the draft in Prolific's app
    store.db.execute("update invites set reward = 2.5 where id = ?", [invite.id])
    sent = len(fake.requests)
    assert main(["prolific", "publish", *db]) == 0  # no --url: the draft keeps its address
    out = capsys.readouterr().out
    assert "changed on Prolific: reward: 200 -> 250" in out
    assert "changed on Prolific: total_available_places: 4 -> 2" in out
    patches = [r for r in fake.requests[sent:] if r[0] == "PATCH"]
    assert patches == [
        ("PATCH", f"/api/v1/studies/{study['id']}/", {"reward": 250, "total_available_places": 2})
    ]
    assert (study["reward"], study["total_available_places"]) == (250, 2)
    assert "reward 2.50 GBP" in out and "places 2;" in out and "7.00 GBP" in out  # 250x2x1.4
    assert len(fake.studies) == 1
    assert main(["prolific", "publish", *db, "--publish"]) == 0
    capsys.readouterr()
    store.db.execute("update invites set reward = 3.0 where id = ?", [invite.id])
    sent = len(fake.requests)
    assert main(["prolific", "publish", *db]) == 1  # published: the reward cannot change
    err = capsys.readouterr().err
    assert f"Prolific study {study['id']} is ACTIVE" in err and "reward: 250 -> 300" in err
    assert all(r[0] != "PATCH" for r in fake.requests[sent:]) and study["reward"] == 250


@pytest.mark.slow
def test_publish_moves_a_localhost_draft_to_the_public_address(
    world: tuple[Store, crowd.Invite],  # noqa: F811
    fake: FakeProlific,  # noqa: F811
) -> None:
    """The issue's study: a draft made on localhost by an earlier release. A rerun with no
    address refuses; with the public one it PATCHes the draft's URL before publishing."""
    store, invite = world
    draft = prolific.study_body(invite, KEY, "http://localhost:8501", 12.0,
                                prolific.StudyListing(description="old"), [])  # fmt: skip
    made = _client(store, fake, invite).call("old release", "POST", "/api/v1/studies/", draft)
    Crowd(store).set_prolific_study(invite.id, made["id"])
    invite = _fresh(store, invite)
    with pytest.raises(crowd.CrowdError, match="cannot send people to http://localhost:8501"):
        prolific.publish(store, _client(store, fake, invite), invite, KEY, None, go_live=True)
    assert fake.studies[made["id"]]["status"] == "UNPUBLISHED"
    done = prolific.publish(
        store, _client(store, fake, invite), invite, KEY, "https://koed.example", go_live=True
    )
    url = fake.studies[made["id"]]["external_study_url"]
    assert url.startswith("https://koed.example/join?invite=") and done.published
    assert "external_study_url" in {c.field for c in done.changes}


@pytest.mark.slow
def test_a_lost_creation_answer_then_a_rerun_leaves_one_draft(
    world: tuple[Store, crowd.Invite],  # noqa: F811
    fake: FakeProlific,  # noqa: F811
) -> None:
    store, invite = world
    fake.lose_create_answers = 1  # Prolific makes the draft; its answer never arrives
    with pytest.raises(crowd.CrowdError) as err:
        prolific.publish(store, _client(store, fake, invite), invite, KEY, "https://koed.example")
    said = str(err.value)
    assert "may exist" in said and f"koed-{invite.id}" in said
    assert "will not send it again" not in said  # a rerun does send: it must not say so
    assert len(fake.studies) == 1 and _fresh(store, invite).prolific_study_id is None
    again = prolific.publish(
        store, _client(store, fake, invite), _fresh(store, invite), KEY, "https://koed.example"
    )
    (only,) = fake.studies
    assert again.study_id == only and _fresh(store, invite).prolific_study_id == only
    assert [r[:2] for r in fake.requests if r[0] == "POST" and r[1] == "/api/v1/studies/"] == [
        ("POST", "/api/v1/studies/")
    ]  # created once, found the second time


def test_an_old_database_takes_the_place_rules_and_the_address(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "data" / "koed-0.1.0.db", old)
    store = Store(old)
    with sqlite3.connect(old) as conn:
        columns = {r[1] for r in conn.execute("pragma table_info(invites)")}
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
    assert {"arrival_grace_minutes", "max_places"} <= columns and "site_settings" in tables
    row = {"id": "a1", "study_id": 1, "platform": "prolific", "expires": 0.0, "cap": 10,
           "batch_size": 2, "batches": 1, "completion_code": "DONE", "redirect_url": None,
           "consent_ko": "가", "consent_en": "a", "reward": 1.0, "currency": "GBP",
           "revoked": 0}  # fmt: skip
    Crowd(store).add_invite(row)  # a link as made before m020: no rules of its own
    made_before = crowd.Invite.from_row(Crowd(store).invite("a1") or {})
    assert (made_before.arrival_grace, made_before.place_limit) == (10, 12)


@pytest.mark.slow
def test_the_studies_page_takes_the_recorded_address_and_the_place_rules(
    accounts: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KOED_PUBLIC_URL", raising=False)
    store, run_id = seeded_store(tmp_path / "koed.db")
    study(store, run_id, overlap=1, attention_checks=0)
    at = _as("boss")
    at.switch_page("app_pages/rating/studies.py").run()

    def make_link() -> None:
        next(n for n in at.number_input if n.label.startswith("Prolific: minutes")).set_value(15)
        next(n for n in at.number_input if n.label.startswith("Prolific: most")).set_value(40)
        next(t for t in at.text_input if t.label.startswith("Contact")).input("r@example.org")
        next(b for b in at.button if b.label == "Create the link").click().run()
        assert not at.exception, [e.value for e in at.exception]

    make_link()  # no address set: the link says where to set one
    warned = " ".join(w.value for w in at.warning)
    assert "people on the platform cannot open" in warned and "koed serve --domain" in warned
    (row,) = store.rows("select arrival_grace_minutes, max_places from invites")
    assert (row["arrival_grace_minutes"], row["max_places"]) == (15, 40)
    record_domain(store, "study.koed.example")  # as `koed serve --domain` does
    make_link()
    assert at.code[-1].value.startswith("https://study.koed.example/join?invite=")
    assert not any("cannot open" in w.value for w in at.warning)
