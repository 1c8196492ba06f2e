"""The active next batch (issue 64 item 4): probabilities stored with the study, the
estimate weighted by them, and a uniform study's numbers unchanged."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fixtures.planted_active as planted_active
from fixtures.planted import SIM_GAP, planted_store
from koed_core.db import Inclusions, Judgments, Sampling, Store, now, short_hash
from koed_core.rating.sampling import SamplingError, refusal
from koed_core.rating.studies import StudyRules
from koed_core.results import active_batch, ppi, ppi_active, ppi_table


def _gap(judged: pd.DataFrame, human: pd.DataFrame, inclusion: dict[str, float] | None):
    common = ppi.shared(judged, human, {}, inclusion)
    rows = ppi.estimate_cell(
        judged, human, Sampling("random"), "gap", interval=False, common=common
    )
    return next(r for r in rows if r["estimator"] == "ppi")


def test_equal_probabilities_give_todays_uniform_numbers() -> None:
    """A uniform design's probabilities (n / N everywhere) take the uniform estimator:
    the same PPI++ row, to the last digit, as with no probabilities at all."""
    judged, human, inclusion = planted_active.unsure_draw(
        np.random.default_rng(4), dialogues=200, active=False
    )
    assert len(set(inclusion.values())) == 1
    assert _gap(judged, human, inclusion) == _gap(judged, human, None)


@pytest.mark.slow
def test_the_active_interval_covers_and_is_narrower_where_uncertainty_tracks_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On planted draws where the judge's sample spread marks the dialogues it cannot
    read (and raters are careful), the active estimate's interval covers the planted gap
    about 95% of the time and is narrower than the uniform batch's of the same size."""
    monkeypatch.setattr(planted_active, "UNSURE_SHARE", 0.2)
    rng = np.random.default_rng(11)
    widths: dict[bool, list[float]] = {True: [], False: []}
    covered = 0
    draws = 30
    for _ in range(draws):
        for active in (True, False):
            judged, human, inclusion = planted_active.unsure_draw(
                rng, dialogues=800, active=active, rater_noise=0.3, k=5
            )
            row = _gap(judged, human, inclusion if active else None)
            low, high = float(row["ci_low"]), float(row["ci_high"])  # type: ignore[arg-type]
            widths[active].append(high - low)
            covered += active and low <= SIM_GAP <= high
    assert covered >= 25, covered  # 95% of 30 is 28.5; 25 or fewer has p < 0.01
    assert np.mean(widths[True]) < np.mean(widths[False]), widths


def test_batch_probabilities_meet_the_budget_and_never_reach_zero() -> None:
    unsure = pd.Series([0.0, 0.1, 0.1, 5.0, 50.0, 0.2], index=list("abcdef"))
    q = ppi_active.batch_probabilities(unsure, chosen={"a"}, more=2.0)
    assert q[["b", "c", "d", "e", "f"]].sum() == pytest.approx(2.0)
    assert (q > 0).all() and (q <= 1).all() and q["e"] == 1.0


def _add_samples(store: Store, judge, seed: int = 3) -> None:  # type: ignore[no-untyped-def]
    """Two more strict-mode samples of every judged response: far apart on a third of
    the dialogues, the same elsewhere."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in store.rows("select * from judgments"):
        unsure = int(r["response_id"], 16) % 3 == 0 if r["response_id"].isalnum() else False
        for sample in (1, 2):
            shift = int(rng.integers(-2, 3)) if unsure else 0
            score = float(np.clip(r["score"] + shift, 1, 5))
            rows.append({**r, "id": short_hash(r["id"], sample), "sample": sample, "score": score})
            rows[-1]["created"] = now()
    Judgments(store).save_all(rows)


@pytest.mark.slow
def test_an_active_batch_stores_every_probability_and_the_estimate_uses_them(
    tmp_path: Path,
) -> None:
    planted = planted_store(tmp_path / "koed.db", dialogues=60, fraction=0.2)
    store = planted.store
    before = ppi_table.gap_estimates(store, planted.study_id, planted.judge).estimates
    with pytest.raises(SamplingError, match="one score per response"):
        active_batch.add_active_batch(store, planted.study_id, planted.judge, 10)
    _add_samples(store, planted.judge)
    pilot = set(StudyRules(store).config(planted.study_id).sampling.conv_ids)
    batch = active_batch.add_active_batch(store, planted.study_id, planted.judge, 10)
    stored = Inclusions(store).of_study(planted.study_id).set_index("conv_id")
    assert len(stored) == 60 and stored["probability"].between(0, 1).all()
    assert stored["probability"].nunique() > 1  # unequal: the judge's doubt moved them
    assert (stored.loc[sorted(pilot), "chosen_in"] == 0).all()
    assert (stored.loc[batch.added, "chosen_in"] == 1).all()
    assert (stored["probability"] >= 12 / 60 - 1e-12).all()  # never below the pilot's n / N
    config = StudyRules(store).config(planted.study_id)
    assert config.sampling.method == "active" and refusal(config.sampling) is None
    assert set(config.sampling.conv_ids) == pilot | set(batch.added)
    after = ppi_table.gap_estimates(store, planted.study_id, planted.judge)
    assert after.provenance["inclusion"].startswith("active")
    again = ppi_table.gap_estimates(store, planted.study_id, planted.judge).estimates
    pd.testing.assert_frame_equal(after.estimates, again)  # reproducible from what is stored
    ppi_rows = after.estimates[after.estimates["estimator"] == "ppi"]
    assert ppi_rows["estimate"].notna().any()
    # the batch added items but nobody rated them: the uniform numbers would be unchanged,
    # the active ones are weighted, so they differ
    assert not np.allclose(
        before[before["estimator"] == "ppi"]["estimate"].astype(float),
        ppi_rows["estimate"].astype(float),
        equal_nan=True,
    )
    with pytest.raises(SamplingError, match="active batch"):
        from koed_core.rating import growth

        growth.add_round(StudyRules(store), planted.study_id, 5)


def test_an_old_database_takes_the_inclusion_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "data" / "koed-0.1.0.db", path)
    store = Store(path)
    assert Inclusions(store).probabilities(1) == {}
    with store.write():
        Inclusions(store).save(1, [{"conv_id": "x", "probability": 0.5, "batches": 1}])
    assert Inclusions(Store(path)).probabilities(1) == {"x": 0.5}


def _second_judge(store: Store, seed: int = 5) -> str:
    """A second judge configuration on every judged response: the planted judge's score,
    moved by up to two points on about a third of the responses."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in store.rows("select * from judgments"):
        shift = int(rng.integers(-2, 3)) if rng.random() < 0.35 else 0
        score = float(np.clip(r["score"] + shift, 1, 5))
        rows.append(
            {
                **r,
                "id": short_hash(r["id"], "second"),
                "judge_model": "second-judge",
                "score": score,
            }
        )
    Judgments(store).save_all(rows)
    return "second-judge"


@pytest.mark.slow
def test_koed_study_plan_build_active_and_against(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``koed study plan --build --active [--against JUDGE]`` from the command line: a
    judge with one score per response is refused in one sentence and nothing is stored;
    an --against model that scored nothing is refused with the models that did; with a second judge the batch is
    drawn from the two configurations' disagreement and every probability is stored."""
    from koed_core.cli import main

    planted = planted_store(tmp_path / "koed.db", dialogues=60, fraction=0.4)
    store, study = planted.store, planted.study_id
    plan = ["study", "plan", "--study", str(study), "--judge", planted.judge.model]
    plan += ["--width", "0.8", "--build", "--active", "--db", str(store.path)]
    assert main(plan) == 1
    said = capsys.readouterr()
    assert said.err.count("\n") == 1 and "one score per response" in said.err, said.err
    assert Inclusions(store).probabilities(study) == {}
    assert main([*plan, "--against", "nobody"]) == 1
    said = capsys.readouterr()
    assert "no judge configuration with judge nobody; available:" in said.err
    assert "added" not in said.out and Inclusions(store).probabilities(study) == {}
    second = _second_judge(store)
    assert main([*plan, "--against", second]) == 0
    said = capsys.readouterr().out
    expected = int(said.split("next batch with PPI++: ")[1].split()[0])
    added = int(said.split("added ")[-1].split()[0])
    assert f"(expected {expected}), drawn with known probabilities from disagreement" in said
    config = StudyRules(store).config(study)
    assert config.sampling.method == "active" and len(config.sampling.conv_ids) == 24 + added
    stored = Inclusions(store).of_study(study)
    assert len(stored) == 60 and stored["probability"].nunique() > 1
    assert (stored["chosen_in"] == 1).sum() == added
