"""Bonuses through Prolific's API, each paid once and said paid only on evidence.

Endpoints (https://docs.prolific.com/api-reference):
- ``POST /api/v1/submissions/bonus-payments/`` sets bonuses up from ``csv_bonuses``
  (``<participant_id>,<amount>`` lines) and pays nothing; ``POST
  /api/v1/bulk-bonus-payments/{id}/pay/`` pays them (202, asynchronously) and is not
  idempotent (bonuses/set-up-bonus-payments, bonuses/pay-bonus-payments);
- ``GET /api/v1/submissions/{id}/`` shows ``bonus_payments`` paid on a submission, in
  pence / cents (submissions/get-submission).

A bonus is settled by evidence of its own payment. It is stored "paying" (and committed),
with the bonuses Prolific shows on the submission just then, before its pay call is sent;
"paid" when Prolific answers the pay call with a 2xx, or when a later read of the
submission shows one more bonus of its amount than that baseline (an earlier bonus of the
same amount proves nothing). A definite refusal (a 4xx: 400, 401, 403, 404, or a 429 still
there after the client's retries; or no connection at all) leaves it unpaid with the
reason, and the next ``--apply`` pays it again. A lost answer or a server error (5xx)
leaves it "paying": a server error can come after the money moved, and Prolific pays
"asynchronously", so the submission may show it only minutes later (the state machine in
tests/test_prolific_bonus.py paid a bonus twice when a 500 was taken as a refusal). It is
never sent again unless the researcher, having seen it unpaid in Prolific's app, releases
it (``--release``). Prolific's API
has no endpoint that reads a bulk payment back, so the submission is the evidence.
docs/rating.md has the table of every state and move.

A link published as one study per language arm pays each person on the study of the arm
they came in through (their ``STUDY_ID``): one set-up and one pay call per arm, every rule
above unchanged, since a bonus is keyed by the link, the round and the person, and a person
took part in one arm only.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from koed_core.db import Store
from koed_core.db.crowd import Crowd
from koed_core.db.prolific import BonusMove, ProlificLog
from koed_core.db.types import now
from koed_core.i18n import _
from koed_core.rating.crowd.links import PROLIFIC_PID, CrowdError, Invite
from koed_core.rating.crowd.prolific_arms import payers_by_arm
from koed_core.rating.crowd.prolific_client import (
    ProlificAnswerLost,
    ProlificBadAnswer,
    ProlificClient,
    ProlificError,
)

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


BONUS_STATES = ("planned", "set_up", "paying", "paid")
"""Where a bonus can stand (docs/rating.md has the table of every move between them):
planned (in a file, nothing on Prolific that the app knows of), set_up (Prolific holds it
in a bulk payment, unpaid), paying (the pay call was sent and its answer is not known),
paid (Prolific accepted the pay call, or shows this payment on the submission)."""


@dataclass(frozen=True)
class BonusLine:
    """One bonus and where it stands."""

    participant_id: str
    amount: str
    state: str
    note: str = ""
    sent_now: bool = False
    """This run sent a call that moved money or set it up for this bonus."""


def bonus(
    store: Store,
    client: ProlificClient | None,
    invite: Invite,
    path: Path,
    *,
    round_: str = "1",
    release: frozenset[str] = frozenset(),
) -> list[BonusLine]:
    """Plan the file's bonuses (a dry run without ``client``), or pay them: settle the
    ones left "paying" by evidence of their own payment, set up the planned ones, then pay
    each bulk payment once. Prolific's refusals and lost answers never raise here: each
    bonus says where it stands and why, and what the next ``--apply`` will do.

    Args:
        release: participants whose bonus is "paying" and whom the researcher found unpaid
            in Prolific's app: unless the submission shows the payment now, they are paid
            again (the one way a bonus in doubt is sent again, and only by a person).

    Raises:
        CrowdError: a bad file, someone who is not this link's worker, no Prolific study,
            or an amount other than the one already stored for this round.
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
    arms = payers_by_arm(store, invite, workers, list(amounts))
    log = ProlificLog(store)
    known = {b["participant_id"]: b for b in log.bonuses(invite.id, round_)}
    for person, amount in amounts.items():
        if person in known and known[person]["amount"] != amount:
            raise CrowdError(
                _(
                    "{id} already has a round {round} bonus of {stored}, and the file says "
                    "{amount}: a second bonus to someone is another round (--round)",
                    id=person,
                    round=round_,
                    stored=known[person]["amount"],
                    amount=amount,
                )
            )
    unknown = sorted(release - set(amounts))
    if unknown:
        raise CrowdError(_("--release names {id}, who is not in the bonus file", id=unknown[0]))
    if client is None:
        return [
            BonusLine(
                p,
                a,
                known[p]["state"] if p in known else "to pay",
                (known[p]["note"] or "") if p in known else "",
            )
            for p, a in amounts.items()
        ]
    log.plan_bonuses(invite.id, round_, amounts)
    notes: dict[str, str] = {}
    sent: set[str] = set()
    for view, people in arms:  # each arm's study pays its own people, as one link would
        payer = _Payer(store, client, view, round_, workers, only=people)
        payer.settle_paying()
        payer.release(release)
        payer.set_up()
        payer.pay()
        notes.update(payer.notes)
        sent.update(payer.sent)
    return [
        BonusLine(
            b["participant_id"],
            b["amount"],
            b["state"],
            notes.get(b["participant_id"], _earlier(b)),
            b["participant_id"] in sent,
        )
        for b in log.bonuses(invite.id, round_)
        if b["participant_id"] in amounts
    ]


def _earlier(row: dict[str, Any]) -> str:
    """What a bonus this run did not touch already was."""
    if row["state"] == "paid":
        return f"paid earlier ({row['updated'][:16]}): nothing sent"
    return row.get("note") or ""


def _cents(amount: str) -> int:
    return int(round(Decimal(amount) * 100))


@dataclass
class _Payer:
    """One ``--apply`` of one round: every move a bonus makes, each committed before the
    next call leaves, with the reason kept on the bonus (``note``) for the next run."""

    store: Store
    client: ProlificClient
    invite: Invite
    round_: str
    workers: dict[str, dict[str, Any]]
    only: frozenset[str] | None = None
    """The people this study pays (a language arm's); None: everyone in the round."""
    notes: dict[str, str] = field(default_factory=dict)
    sent: set[str] = field(default_factory=set)

    @property
    def log(self) -> ProlificLog:
        return ProlificLog(self.store)

    def _in(self, state: str) -> list[dict[str, Any]]:
        return [
            b
            for b in self.log.bonuses(self.invite.id, self.round_)
            if b["state"] == state and (self.only is None or b["participant_id"] in self.only)
        ]

    def _note(self, people: list[str], note: str, state: str) -> None:
        for p in people:
            self.notes[p] = note
        self.log.note_bonuses(self.invite.id, self.round_, dict.fromkeys(people, note), state=state)

    def _shown(self, participant: str) -> list[int] | None:
        """The bonuses Prolific shows on the participant's submission, in cents (None: it
        could not be read, with the reason noted)."""
        sub_id = self.workers.get(participant, {}).get("session_ref")
        if not sub_id:
            self.notes[participant] = (
                "no Prolific submission is known for this participant, so a payment cannot "
                "be checked: pay it in Prolific's app"
            )
            return None
        try:
            answer = self.client.call_object(
                "reading a submission's bonuses", "GET", f"/api/v1/submissions/{sub_id}/"
            )
        except ProlificError as err:
            self.notes[participant] = f"could not read the submission's bonuses: {err}"
            return None
        shown = answer.get("bonus_payments")
        if not isinstance(shown, list):
            self.notes[participant] = (
                "Prolific's answer for the submission has no list of bonus payments"
            )
            return None
        try:
            return [int(round(float(c))) for c in shown]
        except (TypeError, ValueError):
            self.notes[participant] = "Prolific listed a bonus payment that is not an amount"
            return None

    def _proved(self, participant: str, shown: list[int]) -> list[dict[str, Any]]:
        """The participant's bonuses in doubt (any round of this link) that ``shown``
        proves paid: what the submission shows beyond the baseline of the first bonus the
        app sent them, less every bonus of theirs already known paid, is matched to the
        bonuses in doubt by amount, oldest pay call first. Known payments are taken off
        even while Prolific has not shown them yet, so another round's bonus of the same
        amount never proves this one; a bonus you pay by hand in Prolific's app, of the
        same amount, would. When fewer payments of an amount show than bonuses of that
        amount are in doubt, none of them is proved."""
        mine = [
            b
            for b in self.log.bonuses(self.invite.id)
            if b["participant_id"] == participant
            and b["state"] in ("paid", "paying")
            and b.get("baseline") is not None
            and b.get("sent_at")
        ]
        if not mine:
            return []
        mine.sort(key=lambda b: str(b["sent_at"]))
        try:
            first = Counter(int(c) for c in json.loads(mine[0]["baseline"]))
        except (TypeError, ValueError):
            return []
        rest = Counter(shown) - first
        rest.subtract(_cents(b["amount"]) for b in mine if b["state"] == "paid")
        doubts = [b for b in mine if b["state"] == "paying"]
        wanted = Counter(_cents(b["amount"]) for b in doubts)
        # fewer payments shown than bonuses of that amount in doubt: which one was paid
        # cannot be told, so none is said paid (the rest waits, or for --release)
        return [b for b in doubts if rest[_cents(b["amount"])] >= wanted[_cents(b["amount"])]]

    def settle_paying(self) -> None:
        """A bonus left "paying" (a lost answer, a server error, a crash) is paid once the
        submission shows it (:meth:`_proved`); otherwise it stays, never sent again."""
        for row in self._in("paying"):
            person = row["participant_id"]
            if row.get("baseline") is None:
                self._note(
                    [person],
                    "sent by an earlier version that kept no evidence: not sent again; check "
                    "the participant's bonus in Prolific's app",
                    "paying",
                )
                continue
            if person in self.notes and self.notes[person].startswith("paid"):
                continue  # settled with another round's read of the same submission
            shown = self._shown(person)
            if shown is None:
                self._note([person], self.notes[person] + "; not sent again", "paying")
                continue
            for proven in self._proved(person, shown):
                self.log.set_bonus_state(
                    self.invite.id,
                    str(proven["round"]),
                    [person],
                    "paid",
                    only_from="paying",
                    move=BonusMove(note="Prolific shows this bonus on the submission"),
                )
                if str(proven["round"]) == self.round_:
                    self.notes[person] = "paid: Prolific now shows this bonus on the submission"
            if not self.notes.get(person, "").startswith("paid"):
                self._note(
                    [person],
                    f"pay call sent {str(row.get('sent_at') or '')[:16]}, its outcome unknown, "
                    f"and Prolific does not show the bonus on the submission yet (it pays "
                    f"within minutes): not sent again; run again later, or check bulk payment "
                    f"{row['bulk_id']} in Prolific's app",
                    "paying",
                )

    def release(self, people: frozenset[str]) -> None:
        """Bonuses in doubt that the researcher found unpaid in Prolific's app go back to
        "set_up" (the submission is read first: one that shows the payment is paid)."""
        for row in self._in("paying"):
            person = row["participant_id"]
            if person not in people:
                continue
            self.log.set_bonus_state(
                self.invite.id,
                self.round_,
                [person],
                "set_up",
                only_from="paying",
                move=BonusMove(note="released by the researcher: Prolific's app showed it unpaid"),
            )

    def set_up(self) -> None:
        """The planned bonuses in one bulk payment. Setting up pays nothing and is not sent
        again after a lost answer: Prolific may then hold an unpaid set-up the app cannot
        find (its API lists none), which costs nothing unless someone pays it."""
        planned = self._in("planned")
        if not planned:
            return
        people = [b["participant_id"] for b in planned]
        lines = "".join(f"{b['participant_id']},{b['amount']}\n" for b in planned)
        try:
            answer = self.client.call_object(
                "setting up bonuses",
                "POST",
                "/api/v1/submissions/bonus-payments/",
                {"study_id": self.invite.prolific_study_id, "csv_bonuses": lines},
                safe=False,
                require=("id",),
            )
        except (ProlificAnswerLost, ProlificBadAnswer) as err:  # done or not: nobody can tell
            what = (
                "was lost" if isinstance(err, ProlificAnswerLost) else f"could not be used ({err})"
            )
            self._note(
                people,
                f"the set-up's answer {what} at {now()[:16]}: Prolific may hold an unpaid "
                f"set-up of these bonuses that the app cannot find again (its API lists "
                f"none); it pays nothing unless paid in Prolific's app; the next --apply sets "
                f"them up anew",
                "planned",
            )
            return
        except ProlificError as err:
            self._note(people, f"Prolific refused the set-up: {err}; not paid", "planned")
            return
        bulk_id = answer["id"]
        self.log.set_bonus_state(
            self.invite.id,
            self.round_,
            people,
            "set_up",
            only_from="planned",
            move=BonusMove(bulk_id=str(bulk_id), note=""),
        )
        self.sent.update(people)

    def pay(self) -> None:
        """Each bulk payment's pay call, once: "paying" and the submission's bonuses are
        committed before it leaves; a 2xx is paid, a refusal is unpaid (tried again by the
        next run), a lost answer or a server error (5xx: it may come after the payment)
        stays "paying" for :meth:`settle_paying`."""
        by_bulk: dict[str, list[dict[str, Any]]] = {}
        for row in self._in("set_up"):
            by_bulk.setdefault(str(row["bulk_id"]), []).append(row)
        for bulk_id, rows in by_bulk.items():
            people = [r["participant_id"] for r in rows]
            shown = {p: self._shown(p) for p in people}
            unread = [p for p, seen in shown.items() if seen is None]
            if unread:
                why = self.notes[unread[0]]
                self._note(
                    people,
                    f"{why} ({unread[0]}): bulk payment {bulk_id} not paid, since its payment "
                    f"could not be checked afterwards; the next --apply tries again",
                    "set_up",
                )
                continue
            self._pay_bulk(bulk_id, {p: seen for p, seen in shown.items() if seen is not None})

    def _pay_bulk(self, bulk_id: str, baselines: dict[str, list[int]]) -> None:
        people = list(baselines)
        if not people:
            return
        log = self.log
        for person in people:  # each bonus's own evidence, committed before the call
            if not log.set_bonus_state(
                self.invite.id,
                self.round_,
                [person],
                "paying",
                only_from="set_up",
                move=BonusMove(
                    note="pay call being sent", baseline=json.dumps(baselines[person]), sent=True
                ),
            ):
                people = [p for p in people if p != person]  # another process took it
        if not people:
            return
        self.sent.update(people)
        try:
            self.client.call(
                "paying bonuses",
                "POST",
                f"/api/v1/bulk-bonus-payments/{bulk_id}/pay/",
                safe=False,
            )
        except ProlificAnswerLost:
            self._note(
                people,
                "pay call sent, its answer lost: not sent again; the next run settles it "
                "from the bonuses Prolific shows on the submission",
                "paying",
            )
            return
        except ProlificError as err:
            if err.status is not None and err.status >= 500:
                doubt = (
                    f"Prolific answered the pay call with a server error ({err}): it may have "
                    f"paid before failing, so it is not sent again; the next run settles it "
                    f"from the submission; if Prolific's app shows it unpaid, --release it"
                )
                self._note(people, doubt, "paying")
                return
            refused = (
                f"not paid: Prolific refused the pay call ({err}); the next --apply tries again"
            )
            log.set_bonus_state(
                self.invite.id,
                self.round_,
                people,
                "set_up",
                only_from="paying",
                move=BonusMove(note=refused),
            )
            self.notes.update(dict.fromkeys(people, refused))
            return
        log.set_bonus_state(
            self.invite.id,
            self.round_,
            people,
            "paid",
            only_from="paying",
            move=BonusMove(note="Prolific accepted the pay call"),
        )
        for p in people:
            self.notes[p] = "paid now: Prolific accepted the pay call (it pays within minutes)"
