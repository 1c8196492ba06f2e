"""ko/en similarity with the real offline encoder, and its on-disk cache."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from koed_core.dialogues import adaptation
from koed_core.dialogues.dataset import load_dataset, parse_dataset
from koed_core.paths import SAMPLE_FILE


@pytest.fixture(scope="module")
def encoder() -> adaptation.UseEncoder:
    return adaptation.UseEncoder()


@pytest.mark.slow
def test_translation_scores_higher_than_a_rewrite(encoder: adaptation.UseEncoder) -> None:
    vectors = encoder.encode(
        [
            "오늘 시험에 합격해서 정말 기뻐.",
            "I passed my exam today and I am so happy.",
            "The train to the airport was late again.",
        ]
    )
    same, other = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert same > 0.7 and other < 0.4


@pytest.mark.slow
def test_scores_cover_pairs_only_and_are_cached(
    encoder: adaptation.UseEncoder, tmp_path: Path
) -> None:
    ds = load_dataset(SAMPLE_FILE)
    calls: list[int] = []
    sims = adaptation.pair_similarities(ds, encoder, tmp_path, lambda d, t: calls.append(d))
    paired = sum(1 for d in ds.dialogues for t in d.turns if t.ko and t.en)
    assert len(sims) == paired + len(ds)  # turns with both texts + one situation each
    assert sims["similarity"].between(-1, 1).all() and calls
    cache = adaptation.cache_file(ds, encoder, tmp_path)
    assert cache.is_file() and ds.sha256[:16] in cache.name

    class Exploding:
        name = encoder.name

        def encode(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("the cache should have answered")

    again = adaptation.pair_similarities(ds, Exploding(), tmp_path)
    assert again.equals(sims)


@pytest.mark.slow
def test_departures_sort_rewritten_first_and_skip_korean_only(
    encoder: adaptation.UseEncoder, tmp_path: Path
) -> None:
    def turn(ko: str, en: str) -> dict[str, str]:
        return {"ko_utter": ko, "utter": en}

    records = [
        {
            "conv_id": "close",
            "ko_situation": "시험에 합격했다",
            "situation": "I passed the exam",
            "emotion": "joyful",
            "dialogue": [turn("나 시험 붙었어!", "I passed the exam!")],
        },
        {
            "conv_id": "rewritten",
            "ko_situation": "명절에 고향에 못 갔다",
            "situation": "I bought a new car",
            "emotion": "lonely",
            "dialogue": [
                turn("추석에 혼자 편의점 도시락 먹었어.", "My new car is red."),
                turn("한국어만 있는 턴", ""),
            ],
        },
    ]
    ds = parse_dataset(json.dumps(records).encode())
    sims = adaptation.pair_similarities(ds, encoder, tmp_path)
    table = adaptation.dialogue_departures(ds.dialogues, sims)
    assert table["conv_id"].tolist() == ["rewritten", "close"]
    turns = adaptation.turn_table(ds.get("rewritten"), sims)
    assert turns["role"].tolist() == ["situation", "speaker", "listener"]
    assert math.isnan(turns.loc[2, "similarity"])  # Korean-only: no pair, no score

    every_turn = adaptation.turn_departures(ds.dialogues, sims)
    assert every_turn["conv_id"].tolist() == ["rewritten", "close"]  # Korean-only turn absent
    assert every_turn["similarity"].is_monotonic_increasing
