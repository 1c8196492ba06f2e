"""Paying through Prolific's API: the app's decisions applied to the submissions (a dry run
first), and bonuses paid once.

Endpoints (https://docs.prolific.com/api-reference):
- ``POST /api/v1/submissions/bulk-approve/`` with ``submission_ids`` ("We strongly
  recommend that you provide a list of submission IDs"; submissions/bulk-approve-submissions);
- ``POST /api/v1/submissions/{id}/transition/`` with ``action`` ``REJECT``, a
  ``rejection_category`` and a ``message`` ("It must be at least 100 chars long"); "this
  endpoint is idempotent" (submissions/transition-submission);
- ``POST /api/v1/submissions/{id}/request-return/`` with ``request_return_reasons``
  (submissions/request-submission-return);
- ``POST /api/v1/submissions/bonus-payments/`` sets bonuses up from ``csv_bonuses``
  (``<participant_id>,<amount>`` lines) and pays nothing; ``POST
  /api/v1/bulk-bonus-payments/{id}/pay/`` pays them (202, asynchronously) and is not
  idempotent (bonuses/set-up-bonus-payments, bonuses/pay-bonus-payments);
- ``GET /api/v1/submissions/{id}/`` shows ``bonus_payments`` paid on a submission, in
  pence / cents (submissions/get-submission).

A bonus is stored "paying" (and committed) before its pay call is sent and "paid" when
Prolific accepts it; a bonus found "paying" (a crash, a lost answer) is never sent again:
it is marked paid once Prolific shows it on the submission, and otherwise left for the
researcher to check in Prolific's app.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import ProlificLog
from koed_core.i18n import _, speaking
from koed_core.rating.crowd.decisions import report_rows
from koed_core.rating.crowd.links import PROLIFIC_PID, CrowdError, Invite
from koed_core.rating.crowd.prolific_client import ProlificAnswerLost, ProlificClient

MESSAGE_MIN = 100
"""Prolific's shortest rejection message."""

REVIEWABLE = "AWAITING REVIEW"
"""The only status a submission is approved, rejected or asked back from."""


@dataclass(frozen=True)
class Step:
    """One review action the decisions ask for, or why a decided worker gets none."""

    participant_id: str
    submission_id: str
    decision: str
    action: str | None
    """``approve``, ``reject`` or ``return``; None when nothing is to be done."""
    note: str = ""
    category: str | None = None
    message: str | None = None


def _language(worker: dict[str, Any]) -> str:
    """The worker's own language: their native one from screening, else what they rated."""
    try:
        native = json.loads(worker.get("screening") or "{}").get("native_language")
    except (TypeError, ValueError, AttributeError):
        native = None
    if native in ("ko", "en"):
        return str(native)
    return "ko" if "ko" in (worker.get("languages") or "").split(",") else "en"


def rejection(row: dict[str, Any], worker: dict[str, Any]) -> tuple[str, str]:
    """Prolific's category and a message of at least ``MESSAGE_MIN`` characters in the
    worker's language, around the admin's written reason."""
    if row["attention_failed"] >= 2:
        category = "FAILED_CHECK"
    elif row["straight_lined"]:
        category = "LOW_EFFORT"
    elif not row["rated"]:
        category = "NO_DATA"
    else:
        category = "OTHER"
    with speaking(_language(worker)):
        message = _(
            "Your submission to the KoED rating study (rating how empathetic replies are) "
            "was rejected after review. The reason: {reason} If you think this is a "
            "mistake, please message us on Prolific.",
            reason=(row.get("decision_reason") or "").rstrip(".") + ".",
        )
        if len(message) < MESSAGE_MIN:  # a short translation still meets Prolific's rule
            message += " " + _(
                "The decision was made by the study's researchers after reading every "
                "rating you gave."
            )
    return category, message


def review_plan(store: Store, invite: Invite) -> list[Step]:
    """What ``apply_review`` would do: per decided worker with a submission that awaits
    review, approve (accept, screen-out), reject or ask to return; the others with why
    not. Read after a sync, which stores the submissions' statuses."""
    workers = {w["username"]: w for w in Crowd(store).worker_rows(invite.study_id)}
    subs = {s["id"]: s for s in ProlificLog(store).submissions(invite.id)}
    log = ProlificLog(store)
    steps = []
    for row in report_rows(store, invite)[0]:
        if row["decision"] is None:
            continue
        worker = workers[row["username"]]
        sub_id = str(worker.get("session_ref") or "")
        sub = subs.get(sub_id)
        base = {
            "participant_id": str(row["worker_id"]),
            "submission_id": sub_id,
            "decision": row["decision"],
        }
        action = {
            "accept": "approve",
            "screen_out": "approve",
            "reject": "reject",
            "replace": "return",
        }[row["decision"]]
        if sub is None:
            steps.append(Step(**base, action=None, note="no such submission on Prolific"))
        elif log.action_done(sub_id, action):
            steps.append(Step(**base, action=None, note=f"already done ({action})"))
        elif sub["status"] != REVIEWABLE:
            steps.append(Step(**base, action=None, note=f"status on Prolific: {sub['status']}"))
        elif sub.get("flag") and action == "approve":
            steps.append(Step(**base, action=None, note=f"flagged: {sub['flag']}"))
        elif action == "reject":
            category, message = rejection(row, worker)
            steps.append(Step(**base, action=action, category=category, message=message))
        else:
            steps.append(Step(**base, action=action))
    return steps


def apply_review(client: ProlificClient, store: Store, steps: list[Step]) -> list[str]:
    """Apply a plan: approvals in one bulk call, then each rejection and return request.
    Each action is recorded, so a second run does none of them again. Returns one line
    per action done."""
    log, done = ProlificLog(store), []
    approve = [s for s in steps if s.action == "approve"]
    if approve:
        ids = [s.submission_id for s in approve]
        client.call(
            "approving submissions in bulk",
            "POST",
            "/api/v1/submissions/bulk-approve/",
            {"submission_ids": ids},
        )
        for s in approve:
            log.record_action(s.submission_id, "approve", "ok")
            done.append(f"approved {s.participant_id}")
    for s in steps:
        if s.action == "reject":
            if len(s.message or "") < MESSAGE_MIN:
                raise CrowdError(_("a rejection message needs at least 100 characters"))
            body: dict[str, Any] = {
                "action": "REJECT",
                "message": s.message,
                "rejection_category": s.category,
            }
            client.call(
                "rejecting a submission",
                "POST",
                f"/api/v1/submissions/{s.submission_id}/transition/",
                body,
            )
        elif s.action == "return":
            body = {"request_return_reasons": ["Did not finish the study."]}
            client.call(
                "asking for a return",
                "POST",
                f"/api/v1/submissions/{s.submission_id}/request-return/",
                body,
            )
        else:
            continue
        log.record_action(s.submission_id, s.action, "ok")
        done.append(f"{s.action} {s.participant_id}")
    return done


AMOUNT = re.compile(r"^\d{1,3}(\.\d{1,2})?$")


def read_bonus_file(text: str) -> dict[str, str]:
    """``participant_id,amount`` lines (an optional header; the amount in the study's
    currency, e.g. ``0.50``).

    Raises:
        CrowdError: a malformed line, an amount out of 0.01-100, or an id twice.
    """
    out: dict[str, str] = {}
    for number, cells in enumerate(csv.reader(io.StringIO(text)), start=1):
        cells = [c.strip() for c in cells]
        header = number == 1 and len(cells) == 2 and not AMOUNT.match(cells[1])
        if not any(cells) or header:
            continue
        if len(cells) != 2 or not PROLIFIC_PID.match(cells[0]) or not AMOUNT.match(cells[1]):
            raise CrowdError(
                _("bonus file, line {n}: write participant_id,amount (e.g. 0.50)", n=number)
            )
        try:
            amount = Decimal(cells[1])
        except InvalidOperation:  # pragma: no cover - the pattern already checked it
            raise CrowdError(_("bonus file, line {n}: not an amount", n=number)) from None
        if not Decimal("0.01") <= amount <= Decimal("100"):
            raise CrowdError(_("bonus file, line {n}: a bonus is 0.01 to 100", n=number))
        if cells[0] in out:
            raise CrowdError(_("bonus file, line {n}: this participant twice", n=number))
        out[cells[0]] = f"{amount:.2f}"
    if not out:
        raise CrowdError(_("the bonus file names nobody"))
    return out


@dataclass(frozen=True)
class BonusLine:
    """One bonus and where it stands."""

    participant_id: str
    amount: str
    state: str
    note: str = ""


def bonus(
    store: Store, client: ProlificClient | None, invite: Invite, path: Path, *, round_: str = "1"
) -> list[BonusLine]:
    """Plan the file's bonuses (a dry run without ``client``), or pay them: set up the
    planned ones, mark them "paying", then call pay once; settle any left "paying" by
    what Prolific shows on the submission, never by paying again.

    Raises:
        CrowdError: a bad file, someone who is not this link's worker, no Prolific study.
        ProlificError: Prolific refused the set-up.
    """
    amounts = read_bonus_file(path.read_text(encoding="utf-8"))
    workers = {
        w["worker_id"]: w
        for w in Crowd(store).worker_rows(invite.study_id)
        if w["invite_id"] == invite.id
    }
    strangers = [p for p in amounts if p not in workers]
    if strangers:
        raise CrowdError(
            _(
                "{id} did not take part through this link; Prolific refuses a bonus to them",
                id=strangers[0],
            )
        )
    if not invite.prolific_study_id:
        raise CrowdError(_("the link has no Prolific study yet: `koed prolific publish` first"))
    log = ProlificLog(store)
    if client is None:
        known = {b["participant_id"]: b["state"] for b in log.bonuses(invite.id, round_)}
        return [BonusLine(p, a, known.get(p, "to pay")) for p, a in amounts.items()]
    log.plan_bonuses(invite.id, round_, amounts)
    notes = _settle_paying(store, client, invite, round_, workers)
    _set_up(store, client, invite, round_)
    notes.update(_pay(store, client, invite, round_))
    return [
        BonusLine(b["participant_id"], b["amount"], b["state"], notes.get(b["participant_id"], ""))
        for b in log.bonuses(invite.id, round_)
        if b["participant_id"] in amounts
    ]


def _set_up(store: Store, client: ProlificClient, invite: Invite, round_: str) -> None:
    log = ProlificLog(store)
    planned = [b for b in log.bonuses(invite.id, round_) if b["state"] == "planned"]
    if not planned:
        return
    lines = "".join(f"{b['participant_id']},{b['amount']}\n" for b in planned)
    answer = client.call_object(
        "setting up bonuses",
        "POST",
        "/api/v1/submissions/bonus-payments/",
        {"study_id": invite.prolific_study_id, "csv_bonuses": lines},
        require=("id",),
    )
    log.set_bonus_state(
        invite.id,
        round_,
        [b["participant_id"] for b in planned],
        "set_up",
        bulk_id=str(answer["id"]),
        only_from="planned",
    )


def _pay(store: Store, client: ProlificClient, invite: Invite, round_: str) -> dict[str, str]:
    log, notes = ProlificLog(store), {}
    by_bulk: dict[str, list[str]] = {}
    for b in log.bonuses(invite.id, round_):
        if b["state"] == "set_up":
            by_bulk.setdefault(b["bulk_id"], []).append(b["participant_id"])
    for bulk_id, people in by_bulk.items():
        if log.set_bonus_state(invite.id, round_, people, "paying", only_from="set_up") != len(
            people
        ):
            continue  # another process took them: it pays them, not this one
        try:
            client.call(
                "paying bonuses",
                "POST",
                f"/api/v1/bulk-bonus-payments/{bulk_id}/pay/",
                safe=False,
            )
        except ProlificAnswerLost:
            for p in people:
                notes[p] = "pay call sent, its answer lost: never sent again; see the next run"
            continue
        log.set_bonus_state(invite.id, round_, people, "paid", only_from="paying")
    return notes


def _settle_paying(
    store: Store,
    client: ProlificClient,
    invite: Invite,
    round_: str,
    workers: dict[str, dict[str, Any]],
) -> dict[str, str]:
    """Bonuses left "paying": paid when the submission shows the amount, else left."""
    log, notes = ProlificLog(store), {}
    for b in log.bonuses(invite.id, round_):
        if b["state"] != "paying":
            continue
        sub_id = workers.get(b["participant_id"], {}).get("session_ref")
        if not sub_id:
            notes[b["participant_id"]] = "sent before; check it in Prolific's app"
            continue
        answer = client.call_object("checking a bonus", "GET", f"/api/v1/submissions/{sub_id}/")
        cents = round(Decimal(b["amount"]) * 100)
        if any(round(float(p)) == cents for p in answer.get("bonus_payments") or []):
            log.set_bonus_state(
                invite.id, round_, [b["participant_id"]], "paid", only_from="paying"
            )
            notes[b["participant_id"]] = "confirmed on Prolific"
        else:
            notes[b["participant_id"]] = (
                "sent before, not yet shown on Prolific: not sent again; check the "
                "submission's bonus in Prolific's app"
            )
    return notes
