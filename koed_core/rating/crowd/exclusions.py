"""Who left a crowd study without finished, accepted work, counted by kind and reason:
the "exclusions and why" a human-evaluation card reports (ARR's checklist, HEDS).

Read from the crowd flow as :func:`koed_core.rating.crowd.decisions.report_rows` sees
each worker (so an in-app timeout is judged by the same clock and study timeout as the
dashboard). Each worker who is not finished and kept counts once, under the first kind
that applies, in this order:

1. ``failed_attention``: stopped by the app after ``ATTENTION_FAILS_TO_STOP`` told
   attention checks failed (the only checks that may stop or reject someone; the admin's
   decision on them is said beside the reason);
2. ``screened_out``: screening found no language they rate at native level, or nothing
   was left in their languages (a stop that is not their doing: paid as the screen-out
   code says), or the admin screened them out;
3. ``rejected``: finished, then rejected by the admin (the admin's written reason);
4. ``stopped``: stopped by another check (calibration far from the references, every
   item flagged and none rated);
5. ``returned``: returned the study on Prolific (read by a sync or a webhook);
6. ``timed_out``: timed out on Prolific, or inactive in the app past the study's timeout
   while Prolific has said nothing;
7. ``asked_to_return``: the admin asked them to return the study (``replace``) for
   another reason.

Workers still under way and active are not counted; nor are those who finished and were
accepted or are still undecided. Ratings are never dropped by any of these: an excluded
worker's ratings of responses stay in the study's numbers unless removed from the
database, so each kind also says how many of its workers' ratings the numbers hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from koed_core.i18n import N_
from koed_core.rating.crowd.identities import UNDER_WAY
from koed_core.rating.crowd.links import ATTENTION_FAILS_TO_STOP, FLAGGED_ALL, NO_ITEMS

KINDS = {
    "failed_attention": N_("failed attention checks"),
    "screened_out": N_("screened out"),
    "rejected": N_("rejected"),
    "stopped": N_("stopped by another check"),
    "returned": N_("returned the study"),
    "timed_out": N_("timed out"),
    "asked_to_return": N_("asked to return the study"),
}
"""Each kind of exclusion in the card's order, and how a reader is told it."""

REASONS = {
    "attention": N_("{n} or more told attention checks failed"),
    "screening": N_("not a native-level speaker of the study's languages"),
    "no_items": N_("nothing was left to rate in their languages"),
    "screened_by_admin": N_("screened out by the admin"),
    "admin": N_("the admin's written reason"),
    "calibration": N_("calibration scores far from the references"),
    "flagged_all": N_("flagged every item they were given and rated none"),
    "returned_prolific": N_("returned on Prolific"),
    "timed_out_prolific": N_("timed out on Prolific"),
    "timed_out_app": N_("inactive past the study's timeout (the platform has not said)"),
    "replace": N_("asked by the admin to return the study"),
    "other": N_("stopped for a reason not recorded"),
}
"""Each reason a kind is counted with (``{n}``: ``ATTENTION_FAILS_TO_STOP``)."""


@dataclass(frozen=True)
class Exclusion:
    """One kind and reason: how many workers, and their ratings of responses the study's
    numbers still hold. ``said`` is the admin's own text (a rejection's reason), kept as
    written; ``decision`` the admin's decision on them, where one was recorded."""

    kind: str
    reason: str
    workers: int
    ratings: int
    said: str = ""
    decision: str = ""


def classify(row: dict[str, Any]) -> tuple[str, str] | None:
    """(kind, reason) of one worker's report row, None when they are not excluded."""
    status, decision = row["status"], row.get("decision")
    stop = row.get("stop_reason") or ""
    if stop == "attention checks failed" or row["attention_failed"] >= ATTENTION_FAILS_TO_STOP:
        return "failed_attention", "attention"
    if stop.startswith("screening"):
        return "screened_out", "screening"
    if stop == NO_ITEMS:
        return "screened_out", "no_items"
    if decision == "screen_out":
        return "screened_out", "screened_by_admin"
    if decision == "reject":
        return "rejected", "admin"
    if stop.startswith("calibration"):
        return "stopped", "calibration"
    if stop == FLAGGED_ALL:
        return "stopped", "flagged_all"
    if status == "returned":
        if stop.startswith("timed out"):
            return "timed_out", "timed_out_prolific"
        return "returned", "returned_prolific"
    if status == "timed out":
        return "timed_out", "timed_out_app"
    if decision == "replace":
        return "asked_to_return", "replace"
    if status == "stopped":
        return "stopped", "other"
    return None


def exclusions(rows: Iterable[dict[str, Any]], ratings: dict[str, int]) -> list[Exclusion]:
    """Every kind and reason with its counts, in ``KINDS``' order (a rejection's reasons
    apart, as the admin wrote them).

    Args:
        rows: the workers' report rows (``decisions.report_rows``), of every link.
        ratings: username -> their ratings of responses in the study's numbers.
    """
    counts: dict[tuple[str, str, str, str], list[str]] = {}
    for row in rows:
        found = classify(row)
        if found is None or row["status"] in UNDER_WAY:  # under way and active: not yet
            continue
        kind, reason = found
        said = (row.get("decision_reason") or "") if kind == "rejected" else ""
        decision = "" if kind == "rejected" else (row.get("decision") or "")
        counts.setdefault((kind, reason, said, decision), []).append(row["username"])
    order = list(KINDS)
    return [
        Exclusion(kind, reason, len(who), sum(ratings.get(u, 0) for u in who), said, decision)
        for (kind, reason, said, decision), who in sorted(
            counts.items(), key=lambda item: (order.index(item[0][0]), item[0][1:])
        )
    ]
