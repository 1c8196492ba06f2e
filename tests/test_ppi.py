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
        if n0 > len(u.judge):  # out of reach (issue 64 #3): no batch, never a capped one
            assert math.isnan(row.ppi_needed) and row.note.startswith("out of reach")
            continue
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
    rules = StudyRules(planted.store)
    first = rules.config(planted.study_id).sampling
    assert first.method == "random" and len(first.conv_ids) == 10 and first.population == 40
    items = set(planted.store.frame(
        "select distinct conv_id from study_items where study_id = ?", [planted.study_id]
    )["conv_id"])  # fmt: skip
    assert items == set(first.conv_ids)
    config, added = growth.add_round(rules, planted.study_id, 5)
    assert len(added) == 5 and set(first.conv_ids) <= set(config.sampling.conv_ids)
    order = design.permutation([f"planted-{i:04d}" for i in range(40)], first.seed)
    assert set(config.sampling.conv_ids) == set(order[:15])  # the next of the same order
    stored = rules.config(planted.study_id).sampling
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
    assert main(["export", "--out", str(out), "--no-images", "--db", planted.store.path]) == 0
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
    from koed_core.results.artefact import artefact_frame

    row = artefact_frame(judged, {"all raters": human}, Sampling()).iloc[0]
    assert row["judge_gap"] == pytest.approx(0.5) and row["people_gap"] == pytest.approx(-0.5)
    assert row["judge_minus_people"] == pytest.approx(1.0)  # (2 + 0) / 2
    assert 0 <= row["ci_low"] <= 1.0 <= row["ci_high"] <= 2
    assert row["n_people"] == 2 and row["N_judge"] == 3


def test_each_stratum_is_resampled_on_its_own_draws() -> None:
    """Issue 64 #7: two strata of equal size bootstrapped with the same seed moved
    together (the same positions drawn in both), so a stratified interval was up to
    sqrt(2) times too wide; with draws of their own its width matches the analytic
    sqrt(sum w^2 s^2 / n) within the bootstrap's own noise."""
    rng = np.random.default_rng(3)
    values = rng.normal(0, 1, 60)
    same = {"a": values, "b": values.copy()}  # equal sizes, equal values: the worst case
    est = ppi._mean_ci(same, {"a": 0.5, "b": 0.5}, seed=0)
    assert est.low is not None and est.high is not None and est.se is not None
    ratio = (est.high - est.low) / (2 * ppi.Z * est.se)
    assert 0.9 <= ratio <= 1.1, ratio


@pytest.mark.slow
def test_plan_build_on_a_hand_picked_study_never_says_nothing_to_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 64 #3: PPI is refused on hand-picked dialogues, so it has no batch; --build
    said "nothing to add" (exit 0) while the table asked people alone for more."""
    planted = planted_store(tmp_path / "koed.db", dialogues=40, method="manual")
    args = ["study", "plan", "--study", str(planted.study_id), "--judge", planted.judge.model]
    code = main([*args, "--width", "0.3", "--build", "--db", planted.store.path])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert code != 0 and "nothing to add" not in said
    assert "PPI refused" in said and "next batch with PPI++: none" in said


def test_a_width_out_of_reach_is_said_and_never_offered_as_a_batch() -> None:
    """Issue 64 #3: a width that needs more rated dialogues than the judge scored (0.2:
    304 of 301) cannot be met by rating, with or without the judge: no batch is offered,
    and the narrowest width within reach is said."""
    rng = np.random.default_rng(5)
    y = rng.normal(0, 1, 30)
    y = (y - y.mean()) / y.std(ddof=1)  # sd exactly 1: people need (2 z / 0.2)^2 = 385
    yhat = y + rng.normal(0, 0.5, 30)
    row = ppi_plan.plan_cell(y, yhat, 301, 0.2, 2, refused=False)
    assert row["people_needed"] == 385
    assert row.get("more_ppi") is None and row.get("more_people") is None
    assert "out of reach" in str(row["note"])
    assert row["width_reachable"] == pytest.approx(2 * ppi.Z / math.sqrt(301))
    table = pd.DataFrame([{"run_id": "r", "metric": "EX", **row}], columns=ppi_plan.COLUMNS)
    assert ppi_plan.next_round_size(table) == 0 and ppi_plan.unreachable(table) == 1
    for with_ppi in (True, False):  # nor in 9 of 10 studies
        assert ppi_plan.next_round_size(table, with_ppi, assured=True) == 0


def test_the_plan_says_its_sizes_reach_the_width_on_average_and_how_a_pilot_moves_them() -> None:
    """Issue 64 #3: n0 = (2 z sd / W)^2 meets W only about half the time (the sd of the
    next study varies); the plan adds the size that meets it in 90% of studies (checked by
    simulation here), and the range of n0 the pilot's own uncertainty allows."""
    rng = np.random.default_rng(8)
    y = rng.normal(0, 1, 20)
    y = (y - y.mean()) / y.std(ddof=1)  # a pilot of 20 with sd 1
    row = ppi_plan.plan_cell(y, y + rng.normal(0, 0.3, 20), 5000, 0.5, 2, refused=False)
    n0, n90 = int(row["people_needed"]), int(row["people_needed_90"])  # type: ignore[call-overload]
    assert n90 > n0
    low, high = row["people_needed_low"], row["people_needed_high"]
    assert low < n0 < high  # type: ignore[operator]
    draws = np.random.default_rng(9)

    def share_met(n: int) -> float:
        sds = draws.normal(0, 1, (4000, n)).std(axis=1, ddof=1)
        return float(np.mean(2 * ppi.Z * sds / math.sqrt(n) <= 0.5))

    assert 0.4 <= share_met(n0) <= 0.65  # on average only
    assert 0.87 <= share_met(n90) <= 0.93
    assert int(row["ppi_needed_90"]) >= int(row["ppi_needed"])  # type: ignore[call-overload]


def test_ko_minus_en_is_the_gap_in_every_estimator() -> None:
    """Issue 64 #8: the en and ko rows beside a gap were separate PPI++ fits (their own
    lambdas) and people-only means over dialogues rated in one language too, so ko - en
    was not the gap in one table. en and ko are over the gap's dialogues, PPI++ with the
    gap's lambda (still ppi-python's tuned one for the gap itself)."""
    judged, human = simulated_draw(np.random.default_rng(11), dialogues=200, fraction=0.3)
    human = human.drop(human[(human["lang"] == "ko")].index[:8])  # 8 rated in English only
    cell = {"run_id": "r", "metric": "EX"}
    frame = ppi.estimate_frame(judged.assign(**cell), human.assign(**cell), Sampling("random"))
    for name, rows in frame.groupby("estimator"):
        by = rows.set_index("quantity")["estimate"]
        assert by["ko"] - by["en"] == pytest.approx(by["gap"], abs=1e-9), name
    gap = frame[(frame["quantity"] == "gap") & (frame["estimator"] == "ppi")].iloc[0]
    u = ppi.units(judged, human, "gap", {})
    both = u.judge.index.intersection(u.human.index)
    rest = u.judge.index.difference(u.human.index)
    low, high = ppi_py.ppi_mean_ci(
        u.human[both].to_numpy(), u.judge[both].to_numpy(), u.judge[rest].to_numpy(), alpha=0.05
    )
    assert gap["ci_low"] == pytest.approx(float(np.squeeze(low)), abs=1e-9)
    assert gap["ci_high"] == pytest.approx(float(np.squeeze(high)), abs=1e-9)


def test_a_refused_ppi_never_says_people_alone_stands_for_every_dialogue() -> None:
    """Issue 64 #8: on hand-picked dialogues the people-only mean describes the chosen
    dialogues only; the refusal said it "stands"."""
    said = design.refusal(Sampling("manual"))
    assert said is not None and "people-only estimates stand" not in said
    assert "only the dialogues chosen" in said


@pytest.mark.slow
def test_ppi_rows_carry_the_gain_beside_its_ceiling(
    planted, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 64 item 3: wherever PPI++ is shown, the gain it achieved (n_effective / n)
    beside the ceiling its judge-people correlation and n/N allow, and the limit with the
    judge on unboundedly many dialogues."""
    judged, human = simulated_draw(np.random.default_rng(21), dialogues=400, fraction=0.25)
    [row] = [r for r in ppi.estimate_cell(judged, human, Sampling("random"), "gap")
             if r["estimator"] == "ppi"]  # fmt: skip
    u = ppi.units(judged, human, "gap", {})
    both = u.judge.index.intersection(u.human.index)
    rho = float(np.corrcoef(u.human[both], u.judge[both])[0, 1])
    n, unrated = len(both), len(u.judge) - len(both)
    assert row["judge_people_corr"] == pytest.approx(rho)
    assert row["gain"] == pytest.approx(row["n_effective"] / n)
    assert row["gain_ceiling"] == pytest.approx(1 / (1 - rho**2 * unrated / (unrated + n)))
    assert row["gain_limit"] == pytest.approx(1 / (1 - rho**2))
    assert 1 < row["gain"] <= row["gain_ceiling"] * 1.05 and row["gain_ceiling"] < row["gain_limit"]
    result = ppi_table.gap_estimates(planted.store, planted.study_id, planted.judge)
    table = ppi_table.side_by_side(result)
    assert {"gain", "gain_ceiling", "gain_limit"} <= set(table.columns)
    study = ["--study", str(planted.study_id), "--judge", planted.judge.model]
    assert main(["gap", *study, "--db", planted.store.path]) == 0
    assert "gain_ceiling" in capsys.readouterr().out
