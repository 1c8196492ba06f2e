"""The gap three ways (judge only, people only, PPI++): honest intervals on a planted
pipeline, refusal where the sample was not random, the judge-artefact table, the planner
against ppi-python's power analysis, and the study's recorded design."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import ppi_py
import pytest

from fixtures.planted import (
    HUMAN_GAP,
    JUDGE_BIAS,
    SIM_GAP,
    planted_store,
    simulated_draw,
)
from koed_core.cli import main
from koed_core.db import Sampling
from koed_core.rating import growth
from koed_core.rating import sampling as design
from koed_core.rating.studies import StudyRules
from koed_core.results import ppi, ppi_plan, ppi_table

DRAWS = 200


@pytest.mark.slow
def test_ppi_covers_the_planted_gap_and_the_judge_alone_does_not() -> None:
    rng = np.random.default_rng(56)
    covered = dict.fromkeys(ppi.ESTIMATORS, 0)
    widths: dict[str, list[float]] = {name: [] for name in ppi.ESTIMATORS}
    for draw in range(DRAWS):
        judged, human = simulated_draw(rng)  # 300 dialogues, a random 20% rated, k = 3
        for row in ppi.estimate_cell(judged, human, Sampling("random"), "gap", seed=draw):
            name = str(row["estimator"])
            low, high = float(row["ci_low"]), float(row["ci_high"])  # type: ignore[arg-type]
            covered[name] += low <= SIM_GAP <= high
            widths[name].append(high - low)
    print(f"covered of {DRAWS}: {covered}; mean widths: "
          f"{ {k: round(float(np.mean(v)), 3) for k, v in widths.items()} }")  # fmt: skip
    # 95% of 200 is 190; a binomial sd of about 3 draws: 182-198 is within 2.5 sd.
    assert 182 <= covered["ppi"] <= 198
    assert covered["judge"] <= DRAWS // 10  # the judge's SIM_BIAS on Korean moves its gap away
    assert np.mean(widths["ppi"]) < np.mean(widths["human"])
    assert np.median(np.array(widths["ppi"]) / np.array(widths["human"])) < 0.95


def test_a_stratified_sample_is_weighted_by_its_strata() -> None:
    # Stratum a (90 dialogues): people's gap 0; stratum b (10): gap -2. True gap -0.2.
    # Both strata rated 10 each: the unweighted people's mean would be -1.
    conv = [f"a{i}" for i in range(90)] + [f"b{i}" for i in range(10)]
    strata = tuple((c, c[0]) for c in conv)
    gap = {c: (0.0 if c[0] == "a" else -2.0) for c in conv}
    wobble = {c: 0.1 * (i % 3 - 1) for i, c in enumerate(conv)}  # the judge varies a little
    judged = pd.DataFrame(
        [(c, "en", 3.0) for c in conv] + [(c, "ko", 3.0 + gap[c] + wobble[c]) for c in conv],
        columns=["conv_id", "lang", "judge"],
    )
    rated = conv[:10] + conv[90:]
    human = pd.DataFrame(
        [(c, "en", 3.0 + (0.1 if i % 2 else -0.1)) for i, c in enumerate(rated)]
        + [(c, "ko", 3.0 + gap[c]) for c in rated],
        columns=["conv_id", "lang", "human"],
    )
    rows = ppi.estimate_cell(judged, human, Sampling("stratified", strata=strata), "gap")
    found = {r["estimator"]: r for r in rows}
    assert found["human"]["estimate"] == pytest.approx(-0.2)  # 0.9 * 0 + 0.1 * -2
    assert found["ppi"]["estimate"] == pytest.approx(-0.2, abs=0.02)
    assert found["judge"]["estimate"] == pytest.approx(-0.2, abs=0.01)
    flat = judged.assign(judge=3.0)  # a judge with one score everywhere: people alone
    rows = ppi.estimate_cell(flat, human, Sampling("stratified", strata=strata), "gap")
    assert {r["estimator"]: r for r in rows}["ppi"]["estimate"] == pytest.approx(-0.2)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory):
    return planted_store(tmp_path_factory.mktemp("planted") / "koed.db")


@pytest.mark.slow
def test_planted_pipeline_three_ways(planted) -> None:
    result = ppi_table.gap_estimates(planted.store, planted.study_id, planted.judge)
    assert result.refusal is None and result.provenance["ppi_python"] == "0.2.3"
    assert "mean of its k ratings" in result.provenance["item_score"]
    gaps = result.estimates[result.estimates["quantity"] == "gap"]
    ca = gaps[(gaps["metric"] == "CA")].set_index(["run_id", "estimator"])
    for run_id in planted.run_ids:
        judge, people, pp = (ca.loc[(run_id, e)] for e in ppi.ESTIMATORS)
        assert judge["ci_low"] > HUMAN_GAP["CA"]  # the judge's Korean CA bias shows
        # PPI recovers the people's gap, not the judge's (coverage itself: the simulation)
        assert abs(pp["estimate"] - people["estimate"]) < abs(
            judge["estimate"] - people["estimate"]
        )
        assert pp["ci_low"] < people["estimate"] < pp["ci_high"]
        assert pp["ci_high"] - pp["ci_low"] < people["ci_high"] - people["ci_low"]
        assert pp["n_effective"] > pp["n_people"] and pp["N_judge"] > pp["n_people"]
        # each rated dialogue holds 2 x k = 4 ratings in the planted study (overlap 2)
        gained = (pp["n_effective"] - pp["n_people"]) * 4
        assert pp["judge_worth_ratings"] == pytest.approx(gained)
    artefact = result.artefact.set_index(["run_id", "metric", "rater_group"])
    assert set(result.artefact["rater_group"]) == set(ppi_table.RATER_GROUPS)
    for run_id in planted.run_ids:
        ca_bias = artefact.loc[(run_id, "CA", "all raters")]
        assert ca_bias["ci_low"] > 0  # judge gap above people's: an artefact, found
        assert ca_bias["ci_low"] <= JUDGE_BIAS <= ca_bias["ci_high"] + 0.2


@pytest.mark.slow
def test_hand_chosen_dialogues_refuse_ppi(tmp_path: Path) -> None:
    planted = planted_store(tmp_path / "koed.db", dialogues=40, method="manual")
    result = ppi_table.gap_estimates(planted.store, planted.study_id, planted.judge)
    assert result.refusal and "chosen by hand" in result.refusal
    rows = result.estimates[result.estimates["estimator"] == "ppi"]
    assert rows["estimate"].isna().all() and (rows["note"] == result.refusal).all()
    people = result.estimates[result.estimates["estimator"] == "human"]
    assert people["estimate"].notna().all()


@pytest.mark.slow
def test_the_planner_matches_ppi_python(planted) -> None:
    width = 0.4
    table = ppi_plan.plan(planted.store, planted.study_id, planted.judge, width)
    assert len(table) == 2 * 5
    human = ppi_table.human_scores(StudyRules(planted.store).q.long_scores(planted.study_id))
    config = StudyRules(planted.store).config(planted.study_id)
    judged = ppi_table.judged_scores(
        planted.store, planted.judge, list(config.run_ids), ("ko", "en")
    )
    for row in table.itertuples():
        u = ppi.units(
            judged[(judged["run_id"] == row.run_id) & (judged["metric"] == row.metric)],
            human[(human["run_id"] == row.run_id) & (human["metric"] == row.metric)],
            "gap",
            {},
        )
        both = u.judge.index.intersection(u.human.index)
        y, yhat = u.human[both].to_numpy(float), u.judge[both].to_numpy(float)
        n0 = math.ceil((2 * 1.959963984540054 * y.std(ddof=1) / width) ** 2)
        assert row.people_needed == n0
        again = ppi_py.ppi_mean_power(y, yhat, 1.0, 1e-6, effective_n=n0, n_max=len(u.judge))
        assert row.ppi_needed == again["n"]
        rho2 = float(again["ppi_corr"]) ** 2
        if n0 <= len(u.judge):  # the closed form behind it (Broska et al.)
            m = len(u.judge)
            assert row.ppi_needed == round(n0 * m * (1 - rho2) / (m - rho2 * n0))
        assert row.ppi_needed <= row.people_needed
        assert row.more_ratings_ppi == max(0, row.ppi_needed - row.rated_now) * 2 * 2


@pytest.mark.slow
def test_a_random_study_records_its_draw_and_grows_by_the_same_permutation(tmp_path: Path) -> None:
    planted = planted_store(tmp_path / "koed.db", dialogues=40, fraction=0.25)
    ratings = StudyRules(planted.store)
    first = ratings.config(planted.study_id).sampling
    assert first.method == "random" and len(first.conv_ids) == 10 and first.population == 40
    items = set(planted.store.frame(
        "select distinct conv_id from study_items where study_id = ?", [planted.study_id]
    )["conv_id"])  # fmt: skip
    assert items == set(first.conv_ids)
    config, added = growth.add_batch(ratings, planted.study_id, 5)
    assert len(added) == 5 and set(first.conv_ids) <= set(config.sampling.conv_ids)
    order = design.permutation([f"planted-{i:04d}" for i in range(40)], first.seed)
    assert set(config.sampling.conv_ids) == set(order[:15])  # the next of the same order
    stored = ratings.config(planted.study_id).sampling
    assert stored == config.sampling
    assert "uniform random sample of 15 of 40" in design.describe(stored)
    manual = dataclasses.replace(stored, method="manual")
    with pytest.raises(design.SamplingError):
        design.next_batch(manual, order, 5)


@pytest.mark.slow
def test_koed_gap_and_plan_commands(planted, capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--db", planted.store.path]
    study = ["--study", str(planted.study_id), "--judge", planted.judge.model]
    assert main(["gap", *study, "--estimator", "ppi", "--json", *db]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {r["estimator"] for r in rows} == {"ppi"}
    assert all(r["estimator_name"].startswith("PPI++") for r in rows)
    assert main(["gap", *study, "--estimator", "judge", *db]) == 0
    said = capsys.readouterr().out
    assert "judge only" in said and "CA" in said
    assert main(["study", "plan", *study, "--width", "0.5", *db]) == 0
    said = capsys.readouterr().out
    assert "with PPI++" in said and "people alone" in said


@pytest.mark.slow
def test_the_export_holds_the_three_estimates_and_the_artefact(
    planted, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from koed_core.results.paper_export import listed_files

    out = tmp_path / "bundle"
    assert main(["export", "--out", str(out), "--db", planted.store.path]) == 0
    assert "see" in capsys.readouterr().out
    # the Gap page's download (the same bundle, zipped) holds them too
    import zipfile

    from koed_core.results.paper_export import zip_bundle

    work = tmp_path / "zip"
    work.mkdir()
    names = set(zipfile.ZipFile(zip_bundle(planted.store, work)).namelist())
    assert {"gap_estimates_ppi.csv", "judge_artefact.csv"} <= names
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert {"gap_estimates_ppi.csv", "judge_artefact.csv"} <= set(listed_files(readme))
    estimates = pd.read_csv(out / "gap_estimates_ppi.csv")
    assert set(estimates["estimator"]) == {"judge", "human", "ppi"}
    assert set(estimates.loc[estimates["estimator"] == "ppi", "estimator_name"]) == {
        "PPI++ (judge corrected by people)"
    }
    assert set(estimates["study_id"]) == {planted.study_id}
    artefact = pd.read_csv(out / "judge_artefact.csv")
    assert set(artefact["rater_group"]) == {"all raters", "native ko", "not native ko"}
    provenance = json.loads((out / "gap_estimates_ppi_provenance.json").read_text())
    assert provenance[0]["ppi_python"] == "0.2.3"
    assert provenance[0]["study_design"]["method"] == "random"


def test_koed_study_create_records_a_random_sample(tmp_path: Path) -> None:
    planted = planted_store(tmp_path / "koed.db", dialogues=30)
    runs = ",".join(planted.run_ids)
    args = ["study", "create", "--name", "sampled", "--runs", runs, "--sample", "6"]
    assert main([*args, "--seed", "3", "--attention", "0", "--db", planted.store.path]) == 0
    config = StudyRules(planted.store).config(2)
    assert config.sampling.method == "random" and config.sampling.seed == 3
    assert len(config.sampling.conv_ids) == 6 and config.seed == 3
    assert main(["study", "create", "--name", "too", "--runs", runs, "--sample", "99",
                 "--db", planted.store.path]) == 1  # fmt: skip


@pytest.mark.slow
def test_plan_build_adds_the_next_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    planted = planted_store(tmp_path / "koed.db", dialogues=60, fraction=0.2)
    before = StudyRules(planted.store).config(planted.study_id).sampling
    args = ["study", "plan", "--study", str(planted.study_id), "--judge", planted.judge.model]
    assert main([*args, "--width", "0.6", "--build", "--db", planted.store.path]) == 0
    said = capsys.readouterr().out
    batch = int(said.split("next batch with PPI++: ")[1].split()[0])
    after = StudyRules(planted.store).config(planted.study_id).sampling
    assert len(after.conv_ids) == len(before.conv_ids) + batch > len(before.conv_ids)
    assert f"added {batch} dialogues" in said
    items = planted.store.frame(
        "select distinct conv_id from study_items where study_id = ?", [planted.study_id]
    )
    assert set(items["conv_id"]) == set(after.conv_ids)


def test_everything_rated_makes_ppi_the_peoples_mean() -> None:
    judged, human = simulated_draw(np.random.default_rng(3), dialogues=40, fraction=1.0)
    rows = {r["estimator"]: r for r in ppi.estimate_cell(judged, human, Sampling(), "gap")}
    assert rows["ppi"]["estimate"] == pytest.approx(rows["human"]["estimate"])
    assert rows["ppi"]["n_people"] == rows["ppi"]["N_judge"] == 40


def test_the_artefact_is_the_judge_gap_minus_the_people_gap_on_the_same_dialogues() -> None:
    # c1: judge gap +1, people -1; c2: judge 0, people 0; c3 judged only (not in the means)
    judged = pd.DataFrame(
        [("r", c, lang, "CA", v) for c, lang, v in [
            ("c1", "en", 3), ("c1", "ko", 4), ("c2", "en", 3), ("c2", "ko", 3),
            ("c3", "en", 1), ("c3", "ko", 5)]],
        columns=["run_id", "conv_id", "lang", "metric", "judge"],
    )  # fmt: skip
    human = pd.DataFrame(
        [("r", c, lang, "CA", v) for c, lang, v in [
            ("c1", "en", 4), ("c1", "ko", 3), ("c2", "en", 2), ("c2", "ko", 2)]],
        columns=["run_id", "conv_id", "lang", "metric", "human"],
    )  # fmt: skip
    row = ppi.artefact_frame(judged, {"all raters": human}, Sampling()).iloc[0]
    assert row["judge_gap"] == pytest.approx(0.5) and row["people_gap"] == pytest.approx(-0.5)
    assert row["judge_minus_people"] == pytest.approx(1.0)  # (2 + 0) / 2
    assert 0 <= row["ci_low"] <= 1.0 <= row["ci_high"] <= 2
    assert row["n_people"] == 2 and row["N_judge"] == 3
