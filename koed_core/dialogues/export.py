"""Filtered dialogues as CSV (one row per turn) and JSONL (one dialogue per line).

Both keep the two languages of a turn on one row, and decoded text (no ``_comma_``),
so a spreadsheet or a notebook reads them as a person reads the explorer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from koed_core.dialogues.dialogue import Dialogue
from koed_core.dialogues.labels import gloss
from koed_core.text import csv_safe

CSV_COLUMNS = [
    "conv_id",
    "labels",
    "labels_ko",
    "situation_ko",
    "situation_en",
    "position",
    "role",
    "utter_idx",
    "ko",
    "en",
    "ko_only",
]


def dialogue_record(dialogue: Dialogue) -> dict[str, Any]:
    """A dialogue as a plain dict: labels always a list, turns with role and position."""
    return {
        "conv_id": dialogue.conv_id,
        "emotion": list(dialogue.labels),
        "emotion_ko": [gloss(label) for label in dialogue.labels],
        "ko_situation": dialogue.situation_ko,
        "situation": dialogue.situation_en,
        "dialogue": [
            {
                "position": t.position,
                "role": t.role,
                "utter_idx": t.source_idx,
                "ko_utter": t.ko,
                "utter": t.en,
                "user_id": t.user_id,
                "ko_only": t.ko_only,
            }
            for t in dialogue.turns
        ],
    }


def to_jsonl(dialogues: Sequence[Dialogue]) -> str:
    """One JSON object per line, UTF-8 text (Korean unescaped)."""
    return "".join(json.dumps(dialogue_record(d), ensure_ascii=False) + "\n" for d in dialogues)


def to_csv(dialogues: Sequence[Dialogue]) -> str:
    """One row per turn, both languages side by side."""
    rows = [
        (
            d.conv_id,
            ";".join(d.labels),
            ";".join(gloss(label) for label in d.labels),
            d.situation_ko,
            d.situation_en,
            t.position,
            t.role,
            t.source_idx,
            t.ko,
            t.en,
            t.ko_only,
        )
        for d in dialogues
        for t in d.turns
    ]
    # the dataset's own text keeps its line breaks; names and codes are one line
    text = ("situation_ko", "situation_en", "ko", "en")
    return csv_safe.to_csv(pd.DataFrame(rows, columns=CSV_COLUMNS), multiline=text)
