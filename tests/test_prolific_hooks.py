"""Issue 68, item 4: Prolific's signed events, against the planted Prolific (which signs and
delivers them as its webhook reference says): a return frees its place at once, before any
sync; forged, stale and replayed events are refused or applied once."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from fixtures.fake_prolific import FakeProlific
from fixtures.rating import prolific_link, seeded_store
from koed_core.cli.prolific_receiver import Receiver, server
from koed_core.db import Store
from koed_core.db.prolific import ProlificLog
from koed_core.rating import crowd
from koed_core.rating.crowd import prolific, prolific_hooks
from koed_core.rating.crowd.prolific_client import ProlificClient
from tests.test_prolific import KEY, TOKEN, Clock, _fresh, clock, fake  # noqa: F401

WORKSPACE = "ab" * 12
TARGET = "https://koed.example/prolific/hooks"


def _client(store: Store, fake: FakeProlific) -> ProlificClient:
    env = {
        "PROLIFIC_API_TOKEN": TOKEN,
        "PROLIFIC_API_URL": fake.base_url,
        "PROLIFIC_WORKSPACE_ID": WORKSPACE,
    }
    return ProlificClient.from_env(env, store, sleep=lambda _s: None)


@pytest.fixture
def hooked(
    tmp_path: Path, fake: FakeProlific, clock: Clock
) -> Iterator[tuple[Store, crowd.Invite, str]]:
    """A published one-place link, the receiver listening, the events subscribed."""
    store, invite = prolific_link(tmp_path / "koed.db", KEY, ("ko",), cap=1, batch_size=1)
    client = _client(store, fake)
    prolific.publish(store, client, invite, KEY, "https://koed.example", go_live=True)
    receiver = Receiver(
        store,
        lambda: prolific_hooks.hook_secret(_client(store, fake)),
        clock=lambda: clock.now.timestamp(),
    )
    httpd = server(receiver, "127.0.0.1", 0)
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}{prolific_hooks.HOOK_PATH}"
    fake.hook_targets[TARGET] = url  # Caddy's part: the public address to the receiver
    done = prolific_hooks.subscribe(client, TARGET)
    assert done[-1] == "study.status.change: subscribed and confirmed"
    assert done[0] == "made the workspace's webhook secret"
    assert prolific_hooks.subscribe(client, TARGET) == [
        "submission.status.change: already subscribed",
        "study.status.change: already subscribed",
    ]  # a rerun makes nothing twice
    yield store, _fresh(store, invite), url
    httpd.shutdown()
    httpd.server_close()


def _join(store: Store, fake: FakeProlific, invite: crowd.Invite) -> tuple[dict, crowd.Worker]:  # type: ignore[type-arg]
    sub = fake.arrive(str(invite.prolific_study_id))
    params = {
        "PROLIFIC_PID": sub["participant_id"],
        "STUDY_ID": invite.prolific_study_id,
        "SESSION_ID": sub["id"],
    }
    ids = crowd.platform_ids(invite, params, KEY)  # type: ignore[arg-type]
    return sub, crowd.join(store, KEY, invite, ids)


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310 - loopback
            return int(answer.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


@pytest.mark.slow
def test_a_return_delivered_as_a_signed_event_frees_the_place_before_any_sync(
    hooked: tuple[Store, crowd.Invite, str], fake: FakeProlific
) -> None:
    store, invite, _url = hooked
    first, worker = _join(store, fake, invite)
    with pytest.raises(crowd.CrowdError):
        _join(store, fake, invite)  # the one place is held
    syncs = len([r for r in fake.requests if r[1].endswith("/submissions/")])
    fake.give_back(first["id"])  # Prolific tells the receiver at once
    assert fake.deliveries[-1][1] == 200
    assert crowd.worker_of(store, worker.username).status == "returned"  # type: ignore[union-attr]
    _sub, second = _join(store, fake, invite)  # the next person takes the place
    assert second.username != worker.username
    assert len([r for r in fake.requests if r[1].endswith("/submissions/")]) == syncs  # no sync
    last = ProlificLog(store).last_event()
    assert last is not None and last["status"] == "RETURNED"
    assert "its place is free" in last["outcome"]


@pytest.mark.slow
def test_forged_stale_and_replayed_events_are_refused_or_applied_once(
    hooked: tuple[Store, crowd.Invite, str], fake: FakeProlific, clock: Clock
) -> None:
    store, invite, url = hooked
    sub, worker = _join(store, fake, invite)
    event = {
        "resource_id": sub["id"],
        "event_type": "submission.status.change",
        "participant_id": sub["participant_id"],
        "status": "RETURNED",
    }
    body = json.dumps(event).encode()
    stamp = str(int(clock.now.timestamp()))
    good = {
        "Content-Type": "application/json",
        "X-Event-ID": "e" * 24,
        "X-Prolific-Request-Timestamp": stamp,
        "X-Prolific-Request-Signature": fake.signed(WORKSPACE, body, stamp),
    }
    forged = {**good, "X-Prolific-Request-Signature": "QUFBQQ=="}
    assert _post(url, body, forged) == 401
    altered = body.replace(b"RETURNED", b"TIMED-OUT")
    assert _post(url, altered, good) == 401  # the body is signed too
    assert _post(url, body, {k: v for k, v in good.items() if k != "X-Event-ID"}) == 400
    assert store.count("prolific_events") == 0
    assert crowd.worker_of(store, worker.username).status != "returned"  # type: ignore[union-attr]
    assert _post(url, body, good) == 200
    assert _post(url, body, good) == 200  # a redelivery: acknowledged, not applied again
    assert store.count("prolific_events") == 1
    clock.now += timedelta(minutes=6)
    assert _post(url, body, {**good, "X-Event-ID": "f" * 24}) == 401  # replayed later: stale
    assert store.count("prolific_events") == 1


def test_the_receiver_without_a_secret_answers_503_and_asks_again(
    tmp_path: Path, fake: FakeProlific
) -> None:
    store, _run = seeded_store(tmp_path / "koed.db")
    asked: list[int] = []

    def secret() -> str | None:
        asked.append(1)
        return prolific_hooks.hook_secret(_client(store, fake))

    receiver = Receiver(store, secret)
    assert receiver.handle(prolific_hooks.HOOK_PATH, {}, b"{}")[0] == 503
    fake.hook_secrets[WORKSPACE] = "made-later"
    assert receiver.handle(prolific_hooks.HOOK_PATH, {}, b"{}")[0] == 400  # now it checks
    assert len(asked) == 2


def test_a_signature_of_the_wire_bytes_or_of_the_references_rewritten_body_is_accepted() -> None:
    """webhooks/verifying's example signs ``timestamp + json.dumps(body)``; Prolific may send
    compact JSON. Either form, keyed with the secret, passes; a changed body passes neither."""
    event = {"resource_id": "a" * 24, "event_type": "study.status.change", "status": "PAUSED"}
    wire = json.dumps(event, separators=(",", ":")).encode()
    stamp, now = "1767261600", 1767261600.0
    for signed_body in (wire, json.dumps(event).encode()):
        headers = {
            "X-Event-ID": "e" * 24,
            "X-Prolific-Request-Timestamp": stamp,
            "X-Prolific-Request-Signature": prolific_hooks.signature("s3cret", stamp, signed_body),
        }
        assert prolific_hooks.verify("s3cret", headers, wire, now) == "e" * 24
        with pytest.raises(prolific_hooks.HookRefused):
            prolific_hooks.verify("s3cret", headers, wire.replace(b"PAUSED", b"ACTIVE"), now)
        with pytest.raises(prolific_hooks.HookRefused):
            prolific_hooks.verify("other", headers, wire, now)


@pytest.mark.slow
def test_a_new_subscription_answered_with_the_list_of_all_is_found_and_confirmed(
    tmp_path: Path, fake: FakeProlific
) -> None:
    """webhooks/create-subscription answers ``results`` ("List of all subscriptions") where
    webhooks/subscribing promises an ``id`` in the body: both are confirmed."""
    store, _run = seeded_store(tmp_path / "koed.db")
    fake.subscription_answer = "listed"
    done = prolific_hooks.subscribe(_client(store, fake), TARGET)
    assert done[1:] == [
        "submission.status.change: subscribed and confirmed",
        "study.status.change: subscribed and confirmed",
    ]
    assert sorted(s["event_type"] for s in fake.subscriptions.values() if s["is_enabled"]) == [
        "study.status.change",
        "submission.status.change",
    ]
    assert len(fake.subscriptions) == 2  # nothing made twice
