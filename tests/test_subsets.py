"""Subsets: the paper's 100, jeong/han, stratified samples."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from koed_core.dialogues.dataset import load_dataset
from koed_core.dialogues.subsets import SubsetError, paper_100_ids, select, stratified
from koed_core.paths import SAMPLE_FILE


def test_the_shipped_paper_100_list_is_the_authors_sample(official_file: Path) -> None:
    authors = official_file.parent / "KoED_sample_100.json"
    ids = [r["conv_id"] for r in json.loads(authors.read_text(encoding="utf-8"))]
    assert paper_100_ids() == ids and len(set(ids)) == 100
    chosen = select(load_dataset(official_file).dialogues, "paper-100")
    assert [d.conv_id for d in chosen] == ids


def test_jeong_han_and_full(official_file: Path) -> None:
    dialogues = load_dataset(official_file).dialogues
    assert len(select(dialogues, "jeong-han-80")) == 80
    assert len(select(dialogues, "full")) == 1360


def test_paper_100_on_the_sample_says_what_is_missing() -> None:
    with pytest.raises(SubsetError, match="paper-100 needs the official KoED file"):
        select(load_dataset(SAMPLE_FILE).dialogues, "paper-100")
    with pytest.raises(SubsetError, match="unknown subset"):
        select(load_dataset(SAMPLE_FILE).dialogues, "half")


def test_stratified_sample_covers_label_sets_before_repeating() -> None:
    dialogues = load_dataset(SAMPLE_FILE).dialogues  # 34 dialogues, 27 distinct label sets
    picked = stratified(dialogues, 20, seed=7)
    assert len(picked) == 20 and len({d.conv_id for d in picked}) == 20
    assert max(Counter(d.label_set for d in picked).values()) == 1  # no set twice yet
    assert [d.conv_id for d in stratified(dialogues, 20, seed=7)] == [d.conv_id for d in picked]
    assert [d.conv_id for d in stratified(dialogues, 20, seed=8)] != [d.conv_id for d in picked]
    with pytest.raises(SubsetError, match="between 1 and 34"):
        select(dialogues, "full", sample=0)


def test_a_reproduction_samples_every_dialogue_with_the_same_chance(official_file: Path) -> None:
    """Issue 64 #8: a reproduction's ``sample = 30`` was round-robin over label sets, so
    a dialogue's chance depended on how many share its labels (0 of the 80 jeong/han in a
    30-dialogue sample); a plan's sample is uniform: every dialogue of the subset equally
    likely, so the sample's mean estimates the subset's."""
    from koed_core.results.reproduce import parse_plan

    dialogues = load_dataset(official_file).dialogues
    plan = parse_plan('name = "p"\nmodels = ["m"]\njudge = "j"\nsubset = "full"\nsample = 30\n')
    assert plan.sample_design == "uniform"
    request = plan.run_request("m", "single")
    jeong_han = 0
    for seed in range(200):
        picked = select(dialogues, "full", sample=30, seed=seed, design=plan.sample_design)
        assert len({d.conv_id for d in picked}) == 30
        jeong_han += sum(1 for d in picked if d.korean_emotion)
    # 80 of 1,360 dialogues: 30 x 80 / 1360 = 1.76 a sample on average; 200 samples
    assert 1.5 <= jeong_han / 200 <= 2.0
    assert request.dialogues(dialogues) == select(
        dialogues, "full", sample=30, seed=0, design="uniform"
    )
    unsampled = parse_plan('name = "p"\nmodels = ["m"]\njudge = "j"\n').run_request("m", "single")
    assert unsampled.sample_design == "label-sets"  # no sample: the request is as before
