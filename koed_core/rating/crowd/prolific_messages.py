"""Participants' messages about a link's Prolific studies, and one message to all of them.

Endpoints (https://docs.prolific.com/api-reference/messages):
- ``GET /api/v1/messages/unread/`` (messages/get-unread-messages): the researcher's unread
  messages, each with its ``sender_id``, ``body``, ``sent_at`` and the study in ``data``;
  the app only reads them (they stay unread until read in Prolific's app);
- ``POST /api/v1/messages/bulk/`` with ``ids`` (participant ids), ``body`` and
  ``study_id`` (messages/bulk-message-participants): one message to a study's participants.
  Sending is not safe to repeat (a lost answer may have sent it: said, never retried),
  and every call is in the call log like the others. The participants are read fresh from
  each arm's submissions, so a two-arm link's message goes to each arm's own people.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from koed_core.db import Store
from koed_core.i18n import _
from koed_core.rating.crowd.links import CrowdError, Invite
from koed_core.rating.crowd.prolific_arms import arm_views
from koed_core.rating.crowd.prolific_client import ProlificAnswerLost, ProlificClient

MAX_BODY = 2000


@dataclass(frozen=True)
class Message:
    """One unread message from a participant."""

    sender: str
    body: str
    sent_at: str
    study_id: str | None


def unread(store: Store, client: ProlificClient, invite: Invite) -> list[Message]:
    """The unread messages about this link's studies, newest first.

    Raises:
        ProlificError: Prolific refused the call.
    """
    mine = set(invite.prolific_studies)
    answer = client.call_object("reading unread messages", "GET", "/api/v1/messages/unread/")
    found = []
    for item in answer.get("results") or []:
        if not isinstance(item, dict):
            continue
        data = item.get("data") if isinstance(item.get("data"), dict) else {}
        study = str((data or {}).get("study_id") or item.get("study_id") or "") or None
        if study not in mine:
            continue
        found.append(
            Message(
                str(item.get("sender_id") or item.get("sender") or "?"),
                str(item.get("body") or ""),
                str(item.get("sent_at") or ""),
                study,
            )
        )
    return sorted(found, key=lambda m: m.sent_at, reverse=True)


def send_to_all(
    store: Store, client: ProlificClient, invite: Invite, body: str
) -> list[tuple[str, int]]:
    """One message to everyone who took part in each of the link's studies; returns each
    study with how many it went to (0: nobody has taken part there yet, nothing sent).

    Raises:
        CrowdError: an empty or too long message, no study yet, or a lost answer (said:
            the message may have gone).
        ProlificError: Prolific refused a call.
    """
    text = body.strip()
    if not text or len(text) > MAX_BODY:
        raise CrowdError(_("a message is 1 to {n} characters", n=MAX_BODY))
    views = [view for view in arm_views(store, invite) if view.prolific_study_id]
    if not views:
        raise CrowdError(_("the link has no Prolific study yet: `koed prolific publish` first"))
    done = []
    for view in views:
        study = str(view.prolific_study_id)
        subs = client.pages(
            "reading the submissions", f"/api/v1/studies/{study}/submissions/", ("participant_id",)
        )
        people = sorted({str(s["participant_id"]) for s in subs})
        if people:
            _send(client, study, people, text)
        done.append((study, len(people)))
    return done


def _send(client: ProlificClient, study: str, people: list[str], text: str) -> Any:
    try:
        return client.call(
            "messaging the participants",
            "POST",
            "/api/v1/messages/bulk/",
            {"ids": people, "body": text, "study_id": study},
            safe=False,
        )
    except ProlificAnswerLost:
        raise CrowdError(
            _(
                "Prolific's answer to the message for study {study} never came, so it may "
                "have been sent: look in Prolific's messages before sending it again",
                study=study,
            )
        ) from None
