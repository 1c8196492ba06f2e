"""A study that grew actively is read with its stored inclusion probabilities everywhere
its rated dialogues are summed (issue 64 item 4): the planner's pilot and the
judge-artefact table weight each rated dialogue by 1 / pi, as the estimate does."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fixtures.planted import Planted, planted_store
from koed_core.db import Inclusions, Ratings
from koed_core.rating.studies import StudyRules
from koed_core.results import ppi, ppi_active, ppi_plan, ppi_table


def _grown_actively(tmp_path: Path) -> tuple[Planted, dict[str, float]]:
    """The planted study as if an active batch had chosen it: unequal probabilities
    stored for every dialogue the runs answered (a rated dialogue of an even number is
    four times as likely as an odd one), the design recorded as active."""
    planted = planted_store(tmp_path / "koed.db", dialogues=40, fraction=0.4)
    store = planted.store
    rules = StudyRules(store)
    config = rules.config(planted.study_id)
    population = sorted(
        {r["conv_id"] for r in store.rows("select distinct conv_id from responses")}
    )
    chosen = set(config.sampling.conv_ids)
    probability = {
        c: (0.8 if int(c[-1]) % 2 == 0 else 0.2) if c in chosen else 0.1 for c in population
    }
    rows = [
        {"conv_id": c, "probability": p, "uncertainty": None, "chosen_in": 0, "batches": 1}
        for c, p in probability.items()
    ]
    grown = replace(config, sampling=replace(config.sampling, method="active"))
    with store.write():
        Inclusions(store).save(planted.study_id, rows)
        rules.q.update_config(planted.study_id, asdict(grown))
    return planted, probability


def _cell(planted: Planted, metric: str) -> tuple[pd.Series, pd.Series]:
    """The judge's and the people's per-dialogue gap of the first run and ``metric``."""
    config = StudyRules(planted.store).config(planted.study_id)
    run = planted.run_ids[0]
    judged = ppi_table.judged_scores(planted.store, planted.judge, [run], config.langs)
    human = ppi_table.human_scores(Ratings(planted.store).long_scores(planted.study_id))
    judged = judged[judged["metric"] == metric]
    human = human[(human["run_id"] == run) & (human["metric"] == metric)]
    u = ppi.units(judged, human, "gap", {})
    return u.judge, u.human


@pytest.mark.slow
def test_the_planner_weights_an_active_studys_pilot_by_its_probabilities(
    tmp_path: Path,
) -> None:
    """The pilot's sd is the 1 / pi weighted one (the plain sd describes the dialogues the
    judge doubted, which the batch over-sampled), and the table says so."""
    planted, probability = _grown_actively(tmp_path)
    table = ppi_plan.plan(planted.store, planted.study_id, planted.judge, 0.5)
    row = table[(table["run_id"] == planted.run_ids[0]) & (table["metric"] == "CA")].iloc[0]
    judge, human = _cell(planted, "CA")
    rated = human.index.intersection(judge.index)
    y = human[rated].to_numpy(float)
    weights = np.array([1 / probability[c] for c in rated])
    weighted = float(np.sqrt(np.cov(y, aweights=weights, ddof=1)))
    assert abs(weighted - float(np.std(y, ddof=1))) > 1e-3  # the weights matter here
    assert row["sd_people"] == pytest.approx(weighted)
    assert row["people_needed"] == ppi_plan.people_needed(weighted, 0.5)
    notes = set(table["note"].dropna())
    assert any("inclusion probabilities" in n for n in notes), notes


@pytest.mark.slow
def test_the_judge_artefact_table_weights_an_active_study(tmp_path: Path) -> None:
    """Judge minus people is the active design's estimate over the judged dialogues, not
    the plain mean over the rated ones; its parts still subtract to it."""
    planted, probability = _grown_actively(tmp_path)
    result = ppi_table.gap_estimates(planted.store, planted.study_id, planted.judge)
    table = result.artefact
    row = table[
        (table["run_id"] == planted.run_ids[0])
        & (table["metric"] == "CA")
        & (table["rater_group"] == "all raters")
    ].iloc[0]
    judge, human = _cell(planted, "CA")
    rated = human.index.intersection(judge.index)
    difference = (judge - human)[rated]
    units = ppi.Units(judge, difference, pd.Series("all", index=judge.index))
    expected = ppi_active.active_people(units, probability)
    assert abs(float(difference.mean()) - float(expected.value)) > 1e-3  # weights matter
    assert row["judge_minus_people"] == pytest.approx(expected.value)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((expected.low, expected.high))
    assert row["judge_gap"] - row["people_gap"] == pytest.approx(row["judge_minus_people"])
