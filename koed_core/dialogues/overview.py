"""Label figures over a set of dialogues: frequencies, co-occurrence and combinations."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations as pairs

import numpy as np
import pandas as pd

from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.labels import gloss, label_names

COMBINATION_SEPARATOR = " + "


def label_frequencies(dialogues: Sequence[Dialogue]) -> pd.DataFrame:
    """One row per label: how many dialogues carry it, and their share.

    All 34 labels appear, with zero counts where a filter left none, so charts of two
    subsets share one axis.
    """
    counts = Counter(label for d in dialogues for label in d.label_set)
    total = max(len(dialogues), 1)
    rows = [(name, gloss(name), counts[name], counts[name] / total) for name in label_names()]
    frame = pd.DataFrame(rows, columns=["label", "gloss", "dialogues", "share"])
    return frame.sort_values(["dialogues", "label"], ascending=[False, True], ignore_index=True)


def cooccurrence(dialogues: Sequence[Dialogue]) -> pd.DataFrame:
    """A symmetric 34 x 34 count matrix; the diagonal holds each label's own count."""
    names = label_names()
    position = {name: i for i, name in enumerate(names)}
    matrix = np.zeros((len(names), len(names)), dtype=int)
    for dialogue in dialogues:
        labels = sorted(dialogue.label_set)
        for label in labels:
            matrix[position[label], position[label]] += 1
        for a, b in pairs(labels, 2):
            matrix[position[a], position[b]] += 1
            matrix[position[b], position[a]] += 1
    return pd.DataFrame(matrix, index=list(names), columns=list(names))


def combinations(dialogues: Sequence[Dialogue]) -> pd.DataFrame:
    """Each distinct label set with its count, most frequent first."""
    counts = Counter(tuple(sorted(d.label_set)) for d in dialogues)
    rows = [
        (
            COMBINATION_SEPARATOR.join(labels),
            COMBINATION_SEPARATOR.join(gloss(label) for label in labels),
            len(labels),
            n,
        )
        for labels, n in counts.items()
    ]
    frame = pd.DataFrame(rows, columns=["combination", "gloss", "size", "dialogues"])
    return frame.sort_values(
        ["dialogues", "combination"], ascending=[False, True], ignore_index=True
    )


def split_combination(text: str) -> frozenset[str]:
    """The label set behind a ``combination`` cell."""
    return frozenset(part.strip() for part in text.split(COMBINATION_SEPARATOR) if part.strip())
