"""What a worker rates next and how the visit ends: batches, the finish rule and the code
of the outcome."""

from __future__ import annotations

from dataclasses import dataclass

from koed_core.db import Store, now
from koed_core.db.crowd import Crowd
from koed_core.rating.crowd.identities import Worker, mturk_submit
from koed_core.rating.crowd.links import Invite
from koed_core.rating.studies import RatingStore


@dataclass(frozen=True)
class BatchState:
    """Where a worker is: items done, in which batch, and whether they are finished."""

    done: int
    batch: int
    in_batch: int
    batch_size: int
    finished: bool


def batch_state(
    store: Store, worker: Worker, invite: Invite, known: dict[tuple[str, int], int] | None = None
) -> BatchState:
    """Progress counted in batches of the invite's size, and never more than this worker
    can be given (a small study, or items other raters filled): "n of m" always ends.
    ``known`` is a place to keep that count between calls (the page's session)."""
    done = len(Crowd(store).finished_assignments(worker.study_id, worker.username))
    total = invite.batch_size * invite.batches
    if RatingStore(store).profile(worker.username) is not None:
        # what the worker can still be given: asked once per item done (``known`` keeps
        # it for the browser session), not on every click
        key = (worker.username, done)
        if known is None or key not in known:
            can = RatingStore(store).workload(worker.study_id, worker.username)
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


NO_ITEMS = "no items: nothing was left for them to rate"


def batch_wants(store: Store, worker: Worker, invite: Invite) -> str:
    """``"attention"`` when the worker's current batch must take an attention check now
    to hold the study's number of them per batch (its last places), else ``"response"``
    (checks are kept for later batches): every batch carries its checks, not only the
    first. Either falls back to whatever is left."""
    needed = RatingStore(store).config(invite.study_id).attention_checks
    if not needed:
        return "response"
    done = Crowd(store).finished_assignments(worker.study_id, worker.username)
    start = len(done) // invite.batch_size * invite.batch_size
    batch = done[start:]
    missing = needed - sum(1 for a in batch if a["kind"] == "attention")
    left = invite.batch_size - len(batch)
    return "attention" if missing > 0 and left <= missing else "response"


def finish(store: Store, worker: Worker) -> None:
    """The worker's visit ends with no more items: completed if they rated something;
    someone who rated nothing (everything flagged, or nothing left) gets no completion
    code, but the screen-out code, since it was not their doing."""
    if RatingStore(store).done(worker.study_id, worker.username) == 0:
        Crowd(store).update_worker(worker.username, status="stopped", stop_reason=NO_ITEMS)
    else:
        Crowd(store).update_worker(worker.username, status="completed")


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
    if kind is None:
        return None
    code = invite.code_for(kind)
    row = Crowd(store).worker(worker.username) or {}
    if row.get("code_given") != code:
        Crowd(store).update_worker(
            worker.username, code_given=code, code_kind=kind, completed_at=now()
        )
    return kind, code
