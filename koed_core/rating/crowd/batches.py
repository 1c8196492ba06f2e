"""What a worker rates next and how the visit ends: batches, the finish rule and the code
of the outcome."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from koed_core.db import RatingItem, Store, now
from koed_core.db.crowd import Crowd
from koed_core.i18n import _
from koed_core.rating.crowd.identities import Worker, mturk_submit
from koed_core.rating.crowd.links import FLAGGED_ALL, NO_ITEMS, CrowdError, Invite
from koed_core.rating.studies import StudyRules


@dataclass(frozen=True)
class BatchState:
    """Where a worker is: responses rated, in which batch, and whether they are finished.
    Attention checks come on top of a batch's items and are never counted as work."""

    done: int
    batch: int
    in_batch: int
    batch_size: int
    finished: bool


def work_done(store: Store, worker: Worker) -> int:
    """Real responses the worker rated: the only work there is. Attention checks are not
    work (nor are flags): they count in no progress line, finish rule, code or pay."""
    return Crowd(store).work_done(worker.study_id, worker.username)[0]


def batch_state(
    store: Store, worker: Worker, invite: Invite, known: dict[tuple[str, int], int] | None = None
) -> BatchState:
    """Progress counted in batches of the invite's size, in responses rated, and never
    more than this worker can be given (a small study, or items other raters filled): "n
    of m" always ends. ``known`` is a place to keep that count between calls (the page's
    session)."""
    done = work_done(store, worker)
    total = invite.batch_size * invite.batches
    if StudyRules(store).profile(worker.username) is not None:
        # what the worker can still be given: asked once per item done (``known`` keeps
        # it for the browser session), not on every click
        key = (worker.username, done)
        if known is None or key not in known:
            can = StudyRules(store).workload(worker.study_id, worker.username, kind="response")
            if known is None:
                known = {}
            known.clear()
            known[key] = can
        total = min(total, max(done, known[key]))
    batch = min(done // invite.batch_size + 1, invite.batches)
    start = (batch - 1) * invite.batch_size
    size = max(1, min(invite.batch_size, total - start))
    return BatchState(
        done=done,
        batch=batch,
        in_batch=min(done - start, size),
        batch_size=size,
        finished=done >= total,
    )


def remember_submit_to(store: Store, worker: Worker, submit_to: str | None) -> None:
    """Where MTurk wants this worker's HIT posted (kept for the last page, which a reload
    reaches without the link's parameters); anything but MTurk's own hosts is ignored."""
    if mturk_submit(submit_to) is not None:
        Crowd(store).update_worker(worker.username, submit_to=str(submit_to).rstrip("/"))


def submit_to(store: Store, worker: Worker) -> str | None:
    """The ExternalQuestion answer URL for this worker, if MTurk sent them."""
    return mturk_submit((Crowd(store).worker(worker.username) or {}).get("submit_to"))


def checks_due(batch_size: int, per_batch: int, rated_in_batch: int) -> int:
    """How many of a batch's attention checks come before its ``rated_in_batch``-th
    response: spread through the batch and all before its last response, so a batch
    ends on real work and a check never comes alone."""
    return sum(
        1 for j in range(per_batch) if (j + 1) * batch_size // (per_batch + 1) <= rated_in_batch
    )


CHECK_SHARE_WARN = 0.25
"""Above this share of a worker's items being attention checks, the link's maker is warned:
checks are unpaid reading for the worker and fatigue for the study."""


def check_share(store: Store, invite: Invite) -> float:
    """The share of the items a worker is shown that are attention checks: the study's
    checks per batch over the batch's responses plus those checks."""
    checks = StudyRules(store).config(invite.study_id).attention_checks
    return checks / (invite.batch_size + checks) if checks else 0.0


def batch_wants(store: Store, worker: Worker, invite: Invite) -> str:
    """``"attention"`` when the worker's current batch must take an attention check now to
    hold the study's number of them per batch, else ``"response"``. The checks come on
    top of the batch's ``batch_size`` responses, new ones in each batch. Either falls back
    to whatever is left."""
    needed = StudyRules(store).config(invite.study_id).attention_checks
    if not needed:
        return "response"
    rated, checked = Crowd(store).work_done(worker.study_id, worker.username)
    batch = min(rated // invite.batch_size, invite.batches - 1)
    due = batch * needed + checks_due(invite.batch_size, needed, rated - batch * invite.batch_size)
    return "attention" if checked < due else "response"


def next_item(
    store: Store, worker: Worker, invite: Invite, at: datetime | None = None
) -> RatingItem | None:
    """The worker's next item: the one they hold, else an attention check when their batch
    is due one, else a response. None when no response is left for them (nothing they
    hold, nothing open in their languages): their visit then ends, and never on a batch
    of checks alone."""
    if StudyRules(store).profile(worker.username) is None:
        return None  # stopped at screening: never a rater of this study
    return StudyRules(store).next_item(
        worker.study_id,
        worker.username,
        at=at,
        want=batch_wants(store, worker, invite),
        require="response",
    )


def flag(store: Store, worker: Worker, item: RatingItem, reason: str) -> None:
    """Flag an item as broken or offensive and go on. A told attention check cannot be
    flagged: it says what to choose, and flagging it is not choosing.

    Raises:
        CrowdError: the item is an attention check.
    """
    if item.instructed_score is not None:
        raise CrowdError(_("This item is an attention check: choose what it asks for."))
    StudyRules(store).set_aside(item.assignment_id, worker.username, "flagged", reason)


def finish(store: Store, worker: Worker) -> None:
    """The worker's visit ends with no more items: completed if they rated a response.
    Someone who rated none gets no completion code: the screen-out code when nothing was
    left for them (not their doing), the failed-checks code, for review, when they
    flagged everything they were given."""
    crowd = Crowd(store)
    if work_done(store, worker) > 0:
        crowd.step(worker.username, now(), status="completed")
    elif crowd.flag_counts(worker.study_id).get(worker.username, 0):
        crowd.step(worker.username, now(), status="stopped", stop_reason=FLAGGED_ALL)
    else:
        crowd.step(worker.username, now(), status="stopped", stop_reason=NO_ITEMS)


def outcome(worker: Worker) -> str | None:
    """Which of ``OUTCOMES`` a finished visit ended in (None while under way)."""
    if worker.status == "completed":
        return "completed"
    if worker.status != "stopped":
        return None
    reason = worker.stop_reason or ""
    return "screened_out" if reason.startswith(("screening", NO_ITEMS)) else "failed_checks"


def give_code(store: Store, worker: Worker, invite: Invite) -> tuple[str, str] | None:
    """The outcome and its code, shown to the worker and recorded the first time (the
    dashboard and the decisions say which code each worker received)."""
    kind = outcome(worker)
    if kind is None or (kind == "completed" and work_done(store, worker) == 0):
        return None  # a completion code only for work: never for checks or flags alone
    code = invite.code_for(kind)
    row = Crowd(store).worker(worker.username) or {}
    if row.get("code_given") != code:
        Crowd(store).step(
            worker.username, now(), code_given=code, code_kind=kind, completed_at=now()
        )
    return kind, code
