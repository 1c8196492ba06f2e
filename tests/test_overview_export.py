"""Label figures and the CSV / JSONL exports."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd

from koed_core.dialogues import overview
from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.export import CSV_COLUMNS, to_csv, to_jsonl
from koed_core.paths import SAMPLE_FILE


def test_cooccurrence_is_symmetric_with_label_counts_on_the_diagonal(official_file: Path) -> None:
    dialogues = load_dataset(official_file).dialogues
    matrix = overview.cooccurrence(dialogues)
    assert matrix.shape == (34, 34)
    assert (matrix.to_numpy() == matrix.to_numpy().T).all()
    freq = overview.label_frequencies(dialogues).set_index("label")["dialogues"]
    assert all(matrix.loc[name, name] == freq[name] for name in matrix.index)
    assert matrix.loc["jeong", "jeong"] == 40 and matrix.loc["jeong", "han"] == 0
    # every two-label set adds one to an off-diagonal pair, twice (symmetric)
    pairs = sum(len(d.label_set) == 2 for d in dialogues)
    off_diagonal = matrix.to_numpy().sum() - matrix.to_numpy().trace()
    assert off_diagonal == 2 * pairs


def test_combinations_count_every_dialogue_once(official_file: Path) -> None:
    dialogues = load_dataset(official_file).dialogues
    combos = overview.combinations(dialogues)
    assert len(combos) == 285
    assert combos["dialogues"].sum() == 1360
    assert combos["dialogues"].is_monotonic_decreasing
    top = combos.iloc[0]
    assert overview.split_combination(top["combination"]) == {"anticipating", "excited"}


def test_csv_has_one_row_per_turn_in_both_languages() -> None:
    dialogues = load_dataset(SAMPLE_FILE).dialogues[:3]
    frame = pd.read_csv(io.StringIO(to_csv(dialogues)), keep_default_na=False)
    assert list(frame.columns) == CSV_COLUMNS
    assert len(frame) == sum(len(d.turns) for d in dialogues)
    first = dialogues[0].turns[0]
    assert frame.loc[0, "ko"] == first.ko and frame.loc[0, "en"] == first.en
    assert frame.loc[0, "labels_ko"] == "두려운;불안한"


def test_jsonl_has_one_dialogue_per_line_with_decoded_text() -> None:
    dialogues = load_dataset(SAMPLE_FILE).dialogues
    lines = to_jsonl(dialogues).splitlines()
    assert len(lines) == len(dialogues)
    records = [json.loads(line) for line in lines]
    assert records[-1]["emotion"] == ["han"] and records[-1]["emotion_ko"] == ["한(恨)"]
    assert not any("_comma_" in t["utter"] for r in records for t in r["dialogue"])
    assert any(t["ko_only"] for r in records for t in r["dialogue"])
