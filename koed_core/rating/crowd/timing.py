"""How long a visit is likely to take, before anyone has taken it: the figure the consent
states and the dashboard shows beside the measured one."""

from __future__ import annotations

import json
import statistics

from koed_core.db import Ratings, Store
from koed_core.rating.studies import StudyRules, calibration_items

READING = {"en": 230.0, "ko": 500.0}
"""Reading speed per minute: English words, Korean characters (no spaces)."""


SCORING_S = 40.0
"""Seconds to score five dimensions once the item is read (the rubric at hand)."""


SETUP_MIN = 2.0
"""Consent and screening, in minutes."""


def _item_minutes(lang: str, texts: list[str]) -> float:
    size = sum(len(t.replace(" ", "")) if lang == "ko" else len(t.split()) for t in texts)
    return size / READING[lang] + SCORING_S / 60


def visit_minutes(store: Store, study_id: int, batch_size: int, batches: int) -> float | None:
    """The minutes from joining to the code: consent and screening, the calibration items,
    then every batch at the study's mean item length and a scoring time (None: the study
    has no response to rate)."""
    rows = Ratings(store).items_of_kind(study_id, "response")
    per_item = [
        _item_minutes(
            r["lang"], [t for _who, t in json.loads(r["context"] or "[]")] + [r["response"]]
        )
        for r in rows
    ]
    if not per_item:
        return None
    item = statistics.mean(per_item)
    langs = StudyRules(store).config(study_id).langs
    calibration = sum(
        _item_minutes(c["lang"], [t for _who, t in c["context"]] + [c["response"]]) + 0.5
        for c in calibration_items(langs)
    )
    return SETUP_MIN + calibration + item * batch_size * batches
