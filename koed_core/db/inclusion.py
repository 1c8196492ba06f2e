"""Inclusion probabilities of a study's dialogues (``study_inclusion``, migration m027).

A study that grew by an active batch chose dialogues with unequal, known probabilities;
the estimate weights each rated dialogue by the inverse of its probability, so the
probabilities are stored with the study when the batch is drawn and read back as they
were (never recomputed from judge scores that may have changed since).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from koed_core.db.store import Store
from koed_core.db.types import now

COLUMNS = ["conv_id", "probability", "uncertainty", "chosen_in", "batches"]


class Inclusions:
    """The ``study_inclusion`` table."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def save(self, study_id: int, rows: Iterable[dict[str, Any]]) -> None:
        """Insert or replace each dialogue's row (conv_id, probability, uncertainty,
        chosen_in, batches) of one study; the caller holds the write when the batch's
        items are written with it."""
        stamp = now()
        self.store.db.table("study_inclusion").upsert_all(
            [{"study_id": study_id, **row, "updated": stamp} for row in rows],
            pk=("study_id", "conv_id"),
        )

    def of_study(self, study_id: int) -> pd.DataFrame:
        """Every dialogue's row of one study (empty: the study was drawn uniformly)."""
        frame = self.store.frame(
            "select conv_id, probability, uncertainty, chosen_in, batches "
            "from study_inclusion where study_id = ? order by conv_id",
            [study_id],
        )
        return frame if not frame.empty else pd.DataFrame(columns=COLUMNS)

    def probabilities(self, study_id: int) -> dict[str, float]:
        """conv_id -> inclusion probability (empty for a uniformly drawn study)."""
        frame = self.of_study(study_id)
        return dict(zip(frame["conv_id"], frame["probability"].astype(float), strict=True))
