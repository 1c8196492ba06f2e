"""What a worker agrees to (issue 67, item 2): the default consent states the task, the
expected minutes and the pay as the link sets them, what is stored and for how long, the
pseudonym, the right to stop and a contact; a link is not made without the contact, by
the core, `koed invite create` or the Studies page; links made before keep their text."""

from __future__ import annotations

import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from fixtures.rating import seeded_store, study
from koed_core.cli import main
from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.rating import crowd
from tests.test_rating_pages import _as, accounts  # noqa: F401 - fixtures

KEY = b"k" * 32
CONTACT = "koed-study@example.org"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, int]:
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode())
    store, run_id = seeded_store(tmp_path / "koed.db")
    _rules, study_id = study(store, run_id, overlap=1, attention_checks=1)
    return store, study_id


def _request(**changes: object) -> crowd.InviteRequest:
    ko, en = crowd.default_consent()
    options: dict[str, object] = {
        "platform": "prolific", "days": 7.0, "cap": 3, "batch_size": 2, "consent_ko": ko,
        "consent_en": en, "reward": 2.5, "contact": CONTACT,
    }  # fmt: skip
    options.update(changes)
    return crowd.InviteRequest(**options)  # type: ignore[arg-type]


def test_the_default_consent_states_time_pay_storage_and_contact_as_the_link_sets_them(
    world: tuple[Store, int],
) -> None:
    store, study_id = world
    invite, _token = crowd.create_invite(store, KEY, study_id, _request())
    minutes = math.ceil(crowd.estimate(store, invite)["minutes"] or 0)
    assert minutes > 0
    en, ko = invite.consent_en, invite.consent_ko
    assert f"about {minutes} minutes" in en and "2.50 GBP" in en and CONTACT in en
    assert f"{minutes}분" in ko and "2.50 GBP" in ko and CONTACT in ko
    for text in (en, ko):
        assert "{" not in text  # every fact filled in, none left for the worker to guess
    assert "five years" in en and "pseudonym" in en and "Return" in en
    assert "5년" in ko and "가명" in ko and "반환(Return)" in ko
    assert "1 (lowest) to 5 (highest)" in en and "1점(가장 낮음)부터 5점(가장 높음)" in ko
    assert invite.contact == CONTACT
    unpaid, _token = crowd.create_invite(store, KEY, study_id, _request(reward=None))
    assert "the amount shown on the platform" in unpaid.consent_en  # no figure made up


def test_a_consent_of_the_admins_own_gets_the_contact_it_left_out(
    world: tuple[Store, int],
) -> None:
    store, study_id = world
    request = _request(consent_ko="동의합니다.", consent_en="I agree.")
    invite, _token = crowd.create_invite(store, KEY, study_id, request)
    assert invite.consent_en == f"I agree.\n\nContact: {CONTACT}"
    assert invite.consent_ko == f"동의합니다.\n\n문의처: {CONTACT}"


@pytest.mark.parametrize("contact", ["", "   ", "a\nb", "x" * 201])
def test_a_link_without_a_usable_contact_is_refused(world: tuple[Store, int], contact: str) -> None:
    store, study_id = world
    with pytest.raises(crowd.CrowdError, match="contact"):
        crowd.create_invite(store, KEY, study_id, _request(contact=contact))
    assert store.count("invites") == 0


def test_koed_invite_create_refuses_a_consent_without_a_contact(
    world: tuple[Store, int], capsys: pytest.CaptureFixture[str]
) -> None:
    store, study_id = world
    made = ["invite", "create", "--study", str(study_id), "--platform", "prolific",
            "--places", "3", "--batch-size", "2", "--reward", "2", "--db", str(store.path),
            "--url", "https://study.koed.example"]  # fmt: skip
    assert main(made) != 0
    err = capsys.readouterr().err
    assert "give a contact for the consent" in err and "Traceback" not in err
    assert store.count("invites") == 0
    assert main([*made, "--contact", CONTACT, "--json"]) == 0
    (row,) = store.rows("select contact, consent_en from invites")
    assert row["contact"] == CONTACT and "2.00 GBP" in row["consent_en"]


@pytest.mark.slow
def test_the_studies_page_refuses_a_link_without_a_contact(
    accounts: Path,  # noqa: F811
    world: tuple[Store, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KOED_PUBLIC_URL", "https://study.koed.example")
    store, _study_id = world
    at = _as("boss")
    at.switch_page("app_pages/rating/studies.py").run()
    next(b for b in at.button if b.label == "Create the link").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("give a contact for the consent" in e.value for e in at.error)
    assert store.count("invites") == 0
    next(t for t in at.text_input if t.label.startswith("Contact")).input(CONTACT)
    next(b for b in at.button if b.label == "Create the link").click().run()
    assert not at.error and store.count("invites") == 1
    (row,) = store.rows("select consent_en from invites")
    assert CONTACT in row["consent_en"] and "{time}" not in row["consent_en"]


def test_an_old_database_takes_the_contact_and_its_links_keep_their_consent(
    tmp_path: Path,
) -> None:
    old = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "data" / "koed-0.1.0.db", old)
    store = Store(old)
    with sqlite3.connect(old) as conn:
        columns = {r[1] for r in conn.execute("pragma table_info(invites)")}
    assert "contact" in columns
    row = {"id": "a1", "study_id": 1, "platform": "prolific", "expires": 0.0, "cap": 10,
           "batch_size": 2, "batches": 1, "completion_code": "DONE", "redirect_url": None,
           "consent_ko": "가", "consent_en": "a", "reward": 1.0, "currency": "GBP",
           "revoked": 0}  # fmt: skip
    Crowd(store).add_invite(row)  # a link as made before m022: no contact
    made_before = crowd.Invite.from_row(Crowd(store).invite("a1") or {})
    assert (made_before.contact, made_before.consent_en) == ("", "a")
