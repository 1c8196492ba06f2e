"""Every answer from Prolific checked before use (issue 61, item 4), against the planted
server's damaged answers (fixtures/fake_prolific.py, ``FakeProlific.plant``): an HTML page,
cut-off JSON, a JSON list or an object without its id where an object is due, a next-page
link to the page itself, a list longer than the page cap, a body trickling a byte at a
time, and 503s retried with jittered backoff. Each failure is one sentence naming the
address and what came back, on the command line and on the Study dashboard."""

# ruff: noqa: F811 - the fixtures come from tests/test_prolific.py, as pytest finds them

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from fixtures.fake_prolific import FILTERS as PLANTED_FILTERS
from fixtures.fake_prolific import FakeProlific
from koed_core.cli import main
from koed_core.db import Store
from koed_core.db.prolific import ProlificLog
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific
from koed_core.rating.crowd.prolific_client import ProlificClient, ProlificError
from tests.test_prolific import (  # noqa: F401
    KEY,
    TOKEN,
    Visit,
    _bonus,
    _client,
    _fresh,
    _published,
    clock,
    fake,
    visit,
    world,
)
from tests.test_rating_pages import _as, accounts  # noqa: F401

FILTERS = "/api/v1/filters/"


def _filters(client: ProlificClient) -> list[str]:
    return [f["filter_id"] for f in client.pages("reading filters", FILTERS)]


def test_an_html_page_is_one_sentence_naming_the_address_and_what_came(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    client = _client(store, fake, invite)
    fake.plant("html", "GET", FILTERS)
    with pytest.raises(ProlificError) as err:
        _filters(client)
    said = str(err.value)
    assert f"{fake.base_url}{FILTERS} is not JSON" in said
    assert "HTTP 200, text/html" in said and "«<!DOCTYPE html><html><head><title>Down" in said
    assert "\n" not in said and TOKEN not in said
    (call,) = ProlificLog(store).calls(invite.id)
    assert (call["status"], call["tries"], call["outcome"]) == (
        200,
        1,
        "unusable answer: not JSON (text/html)",
    )


def test_cut_off_json_for_the_draft_says_prolific_may_have_made_it(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    fake.plant("truncated", "POST", "/api/v1/studies/")
    with pytest.raises(ProlificError) as err:
        prolific.publish(store, _client(store, fake, invite), invite, KEY, "https://x.example")
    said = str(err.value)
    assert f"{fake.base_url}/api/v1/studies/ is not complete JSON (HTTP 201" in said
    assert "Prolific may have carried it out" in said
    assert len(fake.studies) == 1  # made on Prolific's side: said, not assumed away
    assert _fresh(store, invite).prolific_study_id is None
    posts = [r for r in fake.requests if r[:2] == ("POST", "/api/v1/studies/")]
    assert len(posts) == 1  # an unsafe call is never sent again


@pytest.mark.slow
def test_a_json_list_where_a_page_is_due_is_one_line_on_the_command_line(
    world: tuple[Store, crowd.Invite],
    fake: FakeProlific,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = world
    invite = _published(store, fake, invite)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    submissions = f"/api/v1/studies/{invite.prolific_study_id}/submissions/"
    fake.plant("list", "GET", submissions)
    assert main(["prolific", "sync", "--invite", invite.id, "--db", str(store.path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and TOKEN not in err
    assert f"{fake.base_url}{submissions} is a JSON list where an object was due" in err
    assert "HTTP 200, application/json" in err


@pytest.mark.slow
def test_an_answer_without_its_id_pays_nothing(
    visit: Visit, fake: FakeProlific, tmp_path: Path
) -> None:
    store, invite, sub, _ = visit
    bonus_file = tmp_path / "bonus.csv"
    bonus_file.write_text(f"{sub['participant_id']},0.50\n")
    fake.plant("empty_object", "POST", "/api/v1/submissions/bonus-payments/")
    lines = _bonus(visit, fake, bonus_file)
    assert "bonus-payments/ has no id (HTTP 201" in lines[0].note
    assert "may hold an unpaid set-up" in lines[0].note
    assert fake.pay_calls == []
    assert [b["state"] for b in ProlificLog(store).bonuses(invite.id)] == ["planned"]


def test_a_next_link_to_the_page_itself_ends_with_an_error_not_a_loop(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    fake.plant("next_to_itself", "GET", FILTERS, times=50)
    with pytest.raises(ProlificError) as err:
        _filters(_client(store, fake, invite))
    assert "links back to a page already read" in str(err.value)
    assert f"({fake.base_url}{FILTERS})" in str(err.value)
    assert len(fake.requests) == 1


def test_a_list_longer_than_the_page_cap_is_an_error_not_a_list_cut_short(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    fake.page_size = 1  # one filter a page
    with pytest.raises(ProlificError, match=r"/api/v1/filters/\?page=3 goes on past 2 pages"):
        _filters(_client(store, fake, invite, max_pages=2))
    assert len(fake.requests) == 2
    every = len(PLANTED_FILTERS)
    assert len(_filters(_client(store, fake, invite, max_pages=every))) == every


@pytest.mark.slow
def test_a_trickling_body_ends_at_the_deadline(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    client = _client(store, fake, invite, timeout_s=0.3, tries=2)
    fake.plant("trickle", "GET", FILTERS, times=2, trickle_s=0.02)  # 9 s for the whole page
    with pytest.raises(ProlificError) as err:
        _filters(client)
    said = str(err.value)
    assert f"{fake.base_url}{FILTERS} did not come whole within 0.3 s" in said
    assert said.endswith("2 tries")
    assert len(fake.requests) == 2 and len(client.waits) == 1  # type: ignore[attr-defined]
    (call,) = ProlificLog(store).calls(invite.id)
    assert (call["tries"], call["outcome"]) == (2, "answer lost: TooSlow")


@pytest.mark.slow
def test_a_trickling_answer_to_an_unsafe_call_is_never_sent_again(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    # publishing reads the filters, the group and the count first: a deadline those meet
    # on a loaded machine, that the trickled draft (20 s and more) does not
    client = _client(store, fake, invite, timeout_s=2.0)
    fake.plant("trickle", "POST", "/api/v1/studies/", trickle_s=0.02)
    with pytest.raises(crowd.CrowdError, match="the draft may exist there; run the same"):
        prolific.publish(store, client, invite, KEY, "https://x.example")
    calls = ProlificLog(store).calls(invite.id)
    assert calls[0]["outcome"] == "answer lost: TooSlow" and calls[0]["tries"] == 1
    assert [r[:2] for r in fake.requests].count(
        ("POST", "/api/v1/studies/")
    ) == 1  # never sent again


@pytest.mark.slow
def test_server_errors_are_retried_with_jittered_backoff_only_when_safe(
    world: tuple[Store, crowd.Invite], fake: FakeProlific
) -> None:
    store, invite = world
    client = _client(store, fake, invite)
    fake.plant("unavailable", "GET", FILTERS, times=2)
    assert _filters(client) == [f["filter_id"] for f in PLANTED_FILTERS]
    first, second = client.waits  # type: ignore[attr-defined]
    assert 1.0 <= first <= 2.0 and 2.0 <= second <= 3.0  # 1 s, 2 s, plus up to 1 s
    assert (first, second) != (1.0, 2.0)  # the jitter
    calls = ProlificLog(store).calls(invite.id)
    assert [(c["status"], c["tries"], c["outcome"]) for c in reversed(calls)] == [
        (200, 3, "ok"),  # two 503s, then the page: one call, three tries
        (200, 1, "ok"),
        (200, 1, "ok"),
    ]
    fake.plant("unavailable", "POST", "/api/v1/studies/")
    with pytest.raises(ProlificError, match="HTTP 503"):
        prolific.publish(store, client, invite, KEY, "https://x.example")
    drafts = [r[:2] for r in fake.requests].count(("POST", "/api/v1/studies/"))
    assert drafts == 1  # an unsafe call: not again


def test_a_connection_never_made_is_tried_again_even_for_an_unsafe_call(
    world: tuple[Store, crowd.Invite],
) -> None:
    store, invite = world
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits: list[float] = []
    client = ProlificClient(
        f"http://127.0.0.1:{port}", TOKEN, store, invite.id, tries=3, sleep=waits.append
    )
    with pytest.raises(ProlificError, match="could not be reached after 3 tries"):
        client.call("creating the draft study", "POST", "/api/v1/studies/", {}, safe=False)
    assert len(waits) == 2
    (call,) = ProlificLog(store).calls(invite.id)
    assert (call["status"], call["tries"]) == (None, 3)
    assert call["outcome"].startswith("not reached")


@pytest.mark.slow
def test_the_dashboard_shows_a_bad_answer_as_one_sentence_in_korean(
    accounts: Path,
    world: tuple[Store, crowd.Invite],
    fake: FakeProlific,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, invite = world
    monkeypatch.setenv("KOED_SECRET_KEY", KEY.decode() * 2)
    monkeypatch.setenv("PROLIFIC_API_TOKEN", TOKEN)
    monkeypatch.setenv("PROLIFIC_API_URL", fake.base_url)
    invite = _published(store, fake, invite)
    submissions = f"/api/v1/studies/{invite.prolific_study_id}/submissions/"
    fake.plant("html", "GET", submissions, times=5)
    at = _as("boss")
    at.query_params["lang"] = "ko"
    at.switch_page("app_pages/rating/dashboard.py").run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "JSON이 아닙니다" in errors[0]
    assert "text/html" in errors[0] and "api/v1/studies" in errors[0]
    assert TOKEN not in str(at)
