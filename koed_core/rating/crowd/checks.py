"""Whether a worker may go on: consent, screening, attention checks and the calibration
round."""

from __future__ import annotations

import json

from koed_core.db import RaterProfile, Store, now
from koed_core.db.crowd import Crowd
from koed_core.rating.crowd.identities import Worker
from koed_core.rating.crowd.links import (
    ATTENTION_FAILS_TO_STOP,
    NATIVE_YEARS,
    NO_ITEMS,
    Invite,
)
from koed_core.rating.studies import StudyRules, check_verdicts


def consent(store: Store, worker: Worker, invite: Invite) -> None:
    """The worker agreed to this version of the consent text."""
    stamp = now()
    Crowd(store).step(
        worker.username,
        stamp,
        consent_version=invite.consent_version,
        consented_at=stamp,
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
    English the same for English and an English-speaking country. Someone who qualifies
    only for languages whose items are all taken is stopped here too, before they hold a
    place through calibration (the screen-out code: it was not their doing), and never
    handed a batch of attention checks alone.
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
    crowd, stamp = Crowd(store), now()
    if not may:
        crowd.step(
            worker.username,
            stamp,
            screening=answers,
            status="stopped",
            stop_reason="screening: not a native-level speaker of the study's languages",
        )
        return ()
    if not StudyRules(store).room_for_newcomer(worker.study_id, tuple(may)):
        crowd.step(
            worker.username,
            stamp,
            screening=answers,
            languages=",".join(may),
            status="stopped",
            stop_reason=NO_ITEMS,
        )
        return ()
    crowd.step(worker.username, stamp, screening=answers, languages=",".join(may), status="rating")
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
    verdicts = check_verdicts(Crowd(store).attention_scores(study_id, username))
    told = sum(1 for was_told, passed in verdicts.values() if was_told and not passed)
    untold = sum(1 for was_told, passed in verdicts.values() if not was_told and not passed)
    return told, untold


def check_attention(store: Store, worker: Worker) -> bool:
    """Stop (politely, flagged for the admin) a worker who failed too many attention
    checks; True when they may go on."""
    if attention_failures(store, worker.study_id, worker.username) < ATTENTION_FAILS_TO_STOP:
        return True
    Crowd(store).step(
        worker.username, now(), status="stopped", stop_reason="attention checks failed"
    )
    return False


CALIBRATION_MAX_GAP = 1.5
"""Mean distance from the reference scores (1-5 scale) above which calibration failed."""


def check_calibration(store: Store, worker: Worker, gaps: list[float]) -> bool:
    """Stop (politely, flagged) a worker whose calibration scores were far from the
    references on average; True when they may go on."""
    if not gaps or sum(gaps) / len(gaps) <= CALIBRATION_MAX_GAP:
        return True
    Crowd(store).step(
        worker.username,
        now(),
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


def save_calibration(
    store: Store, worker: Worker, gaps: list[float], shown: dict[str, int] | None = None
) -> None:
    """Store the attempt's scores as they come (one per calibration item), with the scores
    whose feedback is on the screen until the worker moves on (a reload shows it again)."""
    Crowd(store).step(
        worker.username,
        now(),
        calibration_gaps=[float(g) for g in gaps],
        calibration_shown=json.dumps(shown) if shown else None,
    )


def calibration_feedback(store: Store, worker: Worker) -> dict[str, int] | None:
    """The scores of the calibration item whose feedback the worker has not moved past."""
    shown = (Crowd(store).worker(worker.username) or {}).get("calibration_shown")
    return {str(k): int(v) for k, v in json.loads(shown).items()} if shown else None


def end_calibration(store: Store, worker: Worker, invite: Invite, gaps: list[float]) -> str:
    """An attempt's end: ``passed``; ``again`` (far from the references, attempts left: a
    fresh attempt is counted); or ``stopped`` (the last attempt failed)."""
    _, tries = stored_calibration(store, worker)
    mean = sum(gaps) / len(gaps) if gaps else 0.0
    if mean <= CALIBRATION_MAX_GAP:
        return "passed"
    if tries + 1 < invite.calibration_attempts:
        Crowd(store).step(
            worker.username,
            now(),
            calibration_gaps=[],
            calibration_shown=None,
            calibration_tries=tries + 1,
        )
        return "again"
    Crowd(store).step(worker.username, now(), calibration_tries=tries + 1)
    check_calibration(store, worker, gaps)
    return "stopped"
