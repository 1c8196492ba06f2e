"""Prolific's signed events: a return told in seconds instead of at the next minute's sync.

Under ``koed serve --domain`` a small receiver (:mod:`koed_core.cli.prolific_receiver`)
takes Prolific's POSTs behind the same Caddy; this module is what it does with each one,
and how the app subscribes. The minute-by-minute sync stays: it reconciles whatever an
event missed (Prolific delivers "at least once", and a receiver can be down).

Reference (https://docs.prolific.com/api-reference/webhooks), read again for round 3:
- subscribing: ``GET``/``POST /api/v1/hooks/secrets/`` (one active secret per workspace;
  listing needs ``workspace_id`` and gives each secret's ``value``; webhooks/create-secret:
  "If a secret already exists, this call will delete the old secret and create a new one",
  so the app makes one only when the list is empty), then
  ``POST /api/v1/hooks/subscriptions/`` with ``workspace_id``, ``event_type`` and an https
  ``target_url``; its answer carries an ``X-Hook-Secret`` header, sent back to
  ``POST /api/v1/hooks/subscriptions/{id}/`` as ``secret`` to confirm it
  (webhooks/confirm-subscription). Where the new subscription's ``id`` is, the reference
  says two things: the guide (webhooks/subscribing) "An id field in the body", the
  endpoint's page (webhooks/create-subscription) a body of ``results``, "List of all
  subscriptions"; the app takes either (:func:`_made_id`).
  ``GET /api/v1/hooks/subscriptions/?workspace_id=`` lists them (so a rerun adds none);
- verifying (webhooks/verifying): each request has ``X-Prolific-Request-Signature`` and
  ``X-Prolific-Request-Timestamp`` (a UNIX time); "sign the request body and timestamp with
  your secret key using SHA256 and then base64 encode the resulting digest": the base64
  (not hex) of the HMAC-SHA256, keyed with the workspace's secret, of the timestamp followed
  by the body. The reference's Python example signs ``timestamp + json.dumps(body)``, the
  body parsed and written again by Python's ``json.dumps`` (", " and ": " between items),
  which are not the bytes on the wire when Prolific sends compact JSON; so a signature of
  either the raw body or that re-written form is accepted (both need the secret, and both
  say the same event). ``X-Timestamp`` (webhooks/handling-event-order-with-x-timestamp) is
  for ordering and not used: a return is final whatever came before it;
- idempotency: ``X-Event-ID`` is unique per event and the same on every redelivery
  ("If you encounter the same X-Event-ID again, simply skip and acknowledge");
- receiving: ``submission.status.change`` carries ``resource_id`` (the submission, i.e.
  the ``SESSION_ID``), ``participant_id`` and ``status``; ``study.status.change`` carries
  ``resource_id`` (the study) and ``status``.

The secret is read from Prolific by the receiver when it starts and kept in its memory
only, like the API token: never stored, logged or shown.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.errors import KoedError
from koed_core.rating.crowd.identities import UNDER_WAY
from koed_core.rating.crowd.prolific_client import ProlificClient

SIGNATURE = "X-Prolific-Request-Signature"
TIMESTAMP = "X-Prolific-Request-Timestamp"
EVENT_ID = "X-Event-ID"
MAX_SKEW_S = 300
"""An event signed longer ago than this (or this far in the future) is stale: refused, so a
captured request cannot be replayed once its id has left anyone's mind."""
EVENT_TYPES = ("submission.status.change", "study.status.change")
HOOK_PATH = "/prolific/hooks"
"""Where Caddy sends Prolific's POSTs (to the receiver, not the app)."""
ENDED = ("RETURNED", "TIMED-OUT")
MAX_BODY = 64 * 1024


class HookRefused(KoedError):
    """A request that is not a genuine, fresh event from Prolific."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Prolific's signature of a request (webhooks/verifying)."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def signed_forms(body: bytes) -> list[bytes]:
    """The bodies a genuine signature may cover: the bytes received and, as the
    reference's example computes it, the body parsed and written again by ``json.dumps``."""
    forms = [body]
    try:
        rewritten = json.dumps(json.loads(body)).encode()
    except (ValueError, UnicodeDecodeError):
        return forms
    if rewritten != body:
        forms.append(rewritten)
    return forms


def verify(secret: str, headers: Mapping[str, str], body: bytes, now: float) -> str:
    """The event's id, once its signature and timestamp are checked.

    Raises:
        HookRefused: a header missing, a forged or altered request (401), or one signed
            more than ``MAX_SKEW_S`` seconds from ``now`` (a stale or replayed one: 401).
    """
    given = {key.lower(): value for key, value in headers.items()}
    sent, stamp = given.get(SIGNATURE.lower()), given.get(TIMESTAMP.lower())
    event_id = (given.get(EVENT_ID.lower()) or "").strip()
    if not sent or not stamp or not event_id:
        raise HookRefused(400, "missing signature, timestamp or event id header")
    try:
        moment = float(stamp)
    except ValueError:
        raise HookRefused(400, "the timestamp is not a UNIX time") from None
    given_sig = sent.strip()
    if not any(
        hmac.compare_digest(signature(secret, stamp, form), given_sig)
        for form in signed_forms(body)
    ):
        raise HookRefused(401, "the signature does not match")
    if abs(now - moment) > MAX_SKEW_S:
        raise HookRefused(401, f"signed {now - moment:.0f} s from now: stale or replayed")
    return event_id[:100]


@dataclass(frozen=True)
class Applied:
    """What the app did with one event."""

    event_id: str
    outcome: str
    repeated: bool = False
    """The event id was applied before (a redelivery): nothing was done again."""


def apply(store: Store, event_id: str, body: bytes) -> Applied:
    """Apply a verified event once: a submission RETURNED or TIMED-OUT ends that visit in
    the app, so its place is free for the next person at once (as the sync does); other
    events are recorded and shown. A repeated event id does nothing.

    Raises:
        HookRefused: the body is not a JSON object with an event type and resource (400).
    """
    try:
        event = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise HookRefused(400, "the body is not JSON") from None
    if not isinstance(event, dict) or not event.get("event_type") or not event.get("resource_id"):
        raise HookRefused(400, "the body has no event_type or resource_id")
    kind, resource = str(event["event_type"]), str(event["resource_id"])
    status = str(event["status"]) if event.get("status") is not None else None
    log = ProlificLog(store)
    if not log.record_event(event_id, kind, resource, status, "received"):
        return Applied(event_id, "already applied", repeated=True)
    outcome = _act(store, kind, resource, status, event)
    log.set_event_outcome(event_id, outcome)
    return Applied(event_id, outcome)


def _act(store: Store, kind: str, resource: str, status: str | None, event: dict[str, Any]) -> str:
    if kind == "study.status.change":
        return f"study {resource} is {status}"
    if kind != "submission.status.change":
        return "not an event the app acts on"
    if status not in ENDED:
        return f"submission {resource} is {status}"
    crowd = Crowd(store)
    worker = crowd.worker_by_session("prolific", resource)
    if worker is None:
        return f"submission {resource} {status}: no visit in the app"
    if str(event.get("participant_id") or worker["worker_id"]) != worker["worker_id"]:
        return f"submission {resource} {status}: another participant's session, not applied"
    if worker["status"] not in UNDER_WAY:
        return f"submission {resource} {status}: the visit had already ended"
    why = "returned" if status == "RETURNED" else "timed out"
    crowd.update_worker(worker["username"], status="returned", stop_reason=f"{why} on Prolific")
    return f"submission {resource} {status}: the visit ended, its place is free"


def hook_secret(client: ProlificClient) -> str | None:
    """The workspace's active secret, read from Prolific (None: none yet, or no
    ``PROLIFIC_WORKSPACE_ID`` to ask for it with)."""
    if not client.workspace_id:
        return None
    found = client.call_object(
        "reading the webhook secret",
        "GET",
        f"/api/v1/hooks/secrets/?workspace_id={client.workspace_id}",
    )
    for item in found.get("results") or []:
        if isinstance(item, dict) and item.get("value"):
            return str(item["value"])
    return None


def subscribe(client: ProlificClient, target_url: str) -> list[str]:
    """Subscribe the workspace's submission and study status events to ``target_url``:
    a secret made if there is none, each subscription made and confirmed once (a rerun
    finds them). Returns what was done, one English line each.

    Raises:
        KoedError: no ``PROLIFIC_WORKSPACE_ID`` (Prolific subscribes a workspace).
        ProlificError: Prolific refused a call.
    """
    workspace = client.workspace_id
    if not workspace:
        raise KoedError(
            "set PROLIFIC_WORKSPACE_ID to your Prolific workspace's id: Prolific's events are "
            "subscribed per workspace (until then the minute-by-minute sync is all there is)"
        )
    done = []
    if hook_secret(client) is None:
        client.call(
            "creating the webhook secret",
            "POST",
            "/api/v1/hooks/secrets/",
            {"workspace_id": workspace},
            safe=False,
        )
        done.append("made the workspace's webhook secret")
    listed = client.call_object(
        "reading the webhook subscriptions",
        "GET",
        f"/api/v1/hooks/subscriptions/?workspace_id={workspace}",
    )
    have = {
        (str(s.get("event_type")), str(s.get("target_url")))
        for s in listed.get("results") or []
        if isinstance(s, dict) and s.get("is_enabled", True)
    }
    for event_type in EVENT_TYPES:
        if (event_type, target_url) in have:
            done.append(f"{event_type}: already subscribed")
            continue
        client.hook_secret = None
        made = client.call_object(
            "subscribing to an event",
            "POST",
            "/api/v1/hooks/subscriptions/",
            {"workspace_id": workspace, "event_type": event_type, "target_url": target_url},
            safe=False,
        )
        client.call(
            "confirming the subscription",
            "POST",
            f"/api/v1/hooks/subscriptions/{_made_id(made, event_type, target_url)}/",
            {"secret": client.hook_secret or ""},
        )
        done.append(f"{event_type}: subscribed and confirmed")
    return done


def _made_id(answer: dict[str, Any], event_type: str, target_url: str) -> str:
    """The new subscription's id: the answer's own ``id`` (webhooks/subscribing), else
    the newest unconfirmed subscription of this event and address in its ``results``
    (webhooks/create-subscription lists them all).

    Raises:
        KoedError: neither is there (nothing is confirmed: the events are not sent).
    """
    if answer.get("id"):
        return str(answer["id"])
    same = [
        s
        for s in answer.get("results") or []
        if isinstance(s, dict)
        and s.get("id")
        and s.get("event_type") == event_type
        and s.get("target_url") == target_url
    ]
    fresh = [s for s in same if not s.get("is_enabled")] or same
    if not fresh:
        raise KoedError(
            f"Prolific's answer to subscribing {event_type} names no subscription: it was not "
            "confirmed, so no event is sent until `koed prolific subscribe` runs again"
        )
    return str(fresh[-1]["id"])
