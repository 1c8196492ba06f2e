"""Whether a worker may go on: consent, screening, attention checks and the calibration
round."""

from __future__ import annotations

import json

from koed_core.db import RaterProfile, Store, now
from koed_core.db.crowd import Crowd
from koed_core.rating.crowd.identities import Worker
from koed_core.rating.crowd.links import ATTENTION_FAILS_TO_STOP, NATIVE_YEARS, Invite
from koed_core.rating.studies import attention_limits, instructed_score


def consent(store: Store, worker: Worker, invite: Invite) -> None:
    """The worker agreed to this version of the consent text."""
    Crowd(store).update_worker(
        worker.username,
        consent_version=invite.consent_version,
        consented_at=now(),
        status="screening",
    )


def screen(
    store: Store,
    worker: Worker,
    study_langs: tuple[str, ...],
    native_language: str,
    years_korea: float,
    years_english: float,
) -> tuple[str, ...]:
    """Which of the study's languages this worker may rate; none stops them politely.

    Korean needs Korean as the native language or ``NATIVE_YEARS`` years in Korea;
    English the same for English and an English-speaking country.
    """
    may = []
    if "ko" in study_langs and (native_language == "ko" or years_korea >= NATIVE_YEARS):
        may.append("ko")
    if "en" in study_langs and (native_language == "en" or years_english >= NATIVE_YEARS):
        may.append("en")
    answers = {
        "native_language": native_language,
        "years_korea": years_korea,
        "years_english": years_english,
    }
    if may:
        Crowd(store).update_worker(
            worker.username, screening=answers, languages=",".join(may), status="rating"
        )
    else:
        Crowd(store).update_worker(
            worker.username,
            screening=answers,
            status="stopped",
            stop_reason="screening: not a native-level speaker of the study's languages",
        )
    return tuple(may)


def profile_of(
    worker: Worker,
    native_language: str,
    years_korea: float,
    years_english: float,
    languages: tuple[str, ...],
) -> RaterProfile:
    """The rater profile the screening answers make (the agreement table's rater groups)."""
    return RaterProfile(worker.username, languages, native_language, years_korea, years_english)


def attention_failures(store: Store, study_id: int, username: str) -> int:
    """Attention checks the worker was told what to choose on and did not: the only ones
    that may stop them or suggest a rejection (Prolific's rule on fair checks)."""
    return _failures(store, study_id, username)[0]


def untold_failures(store: Store, study_id: int, username: str) -> int:
    """Older, uninstructed checks scored above what a careful rater gives: a reason to
    review, never to reject."""
    return _failures(store, study_id, username)[1]


def _failures(store: Store, study_id: int, username: str) -> tuple[int, int]:
    limits, wanted = attention_limits(), instructed_score()
    told: set[str] = set()
    untold: set[str] = set()
    for r in Crowd(store).attention_scores(study_id, username):
        if r["instruction"]:
            if r["score"] != wanted:
                told.add(r["item_id"])
        elif r["score"] > limits.get(r["dimension"], 5):
            untold.add(r["item_id"])
    return len(told), len(untold)


def check_attention(store: Store, worker: Worker) -> bool:
    """Stop (politely, flagged for the admin) a worker who failed too many attention
    checks; True when they may go on."""
    if attention_failures(store, worker.study_id, worker.username) < ATTENTION_FAILS_TO_STOP:
        return True
    Crowd(store).update_worker(
        worker.username, status="stopped", stop_reason="attention checks failed"
    )
    return False


CALIBRATION_MAX_GAP = 1.5
"""Mean distance from the reference scores (1-5 scale) above which calibration failed."""


def check_calibration(store: Store, worker: Worker, gaps: list[float]) -> bool:
    """Stop (politely, flagged) a worker whose calibration scores were far from the
    references on average; True when they may go on."""
    if not gaps or sum(gaps) / len(gaps) <= CALIBRATION_MAX_GAP:
        return True
    Crowd(store).update_worker(
        worker.username,
        status="stopped",
        stop_reason=f"calibration: {sum(gaps) / len(gaps):.1f} points from the references",
    )
    return False


def stored_calibration(store: Store, worker: Worker) -> tuple[list[float], int]:
    """The calibration items scored so far in this attempt (their mean distances from the
    references) and the attempts already used: a reload goes on from here, never afresh."""
    row = Crowd(store).worker(worker.username) or {}
    gaps = json.loads(row.get("calibration_gaps") or "[]")
    return [float(g) for g in gaps], int(row.get("calibration_tries") or 0)


def save_calibration(store: Store, worker: Worker, gaps: list[float]) -> None:
    """Store the attempt's scores as they come (one per calibration item)."""
    Crowd(store).update_worker(worker.username, calibration_gaps=[float(g) for g in gaps])


def end_calibration(store: Store, worker: Worker, invite: Invite, gaps: list[float]) -> str:
    """An attempt's end: ``passed``; ``again`` (far from the references, attempts left: a
    fresh attempt is counted); or ``stopped`` (the last attempt failed)."""
    _, tries = stored_calibration(store, worker)
    mean = sum(gaps) / len(gaps) if gaps else 0.0
    if mean <= CALIBRATION_MAX_GAP:
        return "passed"
    if tries + 1 < invite.calibration_attempts:
        Crowd(store).update_worker(
            worker.username, calibration_gaps=[], calibration_tries=tries + 1
        )
        return "again"
    Crowd(store).update_worker(worker.username, calibration_tries=tries + 1)
    check_calibration(store, worker, gaps)
    return "stopped"
