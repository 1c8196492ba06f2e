"""Agreement statistics: hand-computed values, the reference libraries, undefined cases."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from koed_core.results.alpha import _alpha_from_coincidences, _value_counts
from koed_core.results.reliability import (
    agreement_table,
    alpha_with_ci,
    kappa,
    spearman,
)


def test_alpha_known_value() -> None:
    # Raters A=[1,1,2], B=[1,2,2]. Coincidences: item1 o11+=2, item2 o12+=1 o21+=1,
    # item3 o22+=2 -> o=[[2,1],[1,2]], n1=n2=3, n=6. Ordinal d2(1,2)=(n1+n2-(n1+n2)/2)^2=9.
    # alpha = 1 - (n-1)*sum(o*d2)/sum(n_c*n_k*d2) = 1 - 5*18/(2*3*3*9) = 1 - 90/162 = 4/9.
    stat, lo, hi = alpha_with_ci(np.array([[1, 1, 2], [1, 2, 2]], dtype=float))
    assert stat.value == pytest.approx(4 / 9)
    assert lo is None and hi is None  # 3 items: too few for an interval (issue 64 #6)


def test_kappa_known_value() -> None:
    # judge=[1,2,3], human=[2,2,3], weights (i-j)^2/16 on 1..5. Observed weighted
    # disagreement: one (1,2) pair -> (1/16)/3 = 1/48. Expected from the marginals
    # (judge 1,2,3 once each; human 2 twice, 3 once): (2*1 + 1*4 + 1*1 + 2*1)/9/16 = 1/16.
    # kappa = 1 - (1/48)/(1/16) = 2/3.
    assert kappa(np.array([1, 2, 3]), np.array([2, 2, 3])).value == pytest.approx(2 / 3)


def test_spearman_known_value() -> None:
    # ranks differ by d=[0,-1,1,0]: rho = 1 - 6*2/(4*(16-1)) = 0.8
    stat = spearman(np.array([1, 2, 3, 4.0]), np.array([1, 3, 2, 4.0]))
    assert stat.value == pytest.approx(0.8) and stat.reading == "strong positive correlation"


@pytest.mark.parametrize("seed", range(6))
def test_matches_the_reference_libraries_on_random_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=60)
    data = np.clip(truth + rng.integers(-1, 2, size=(5, 60)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    reference = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert alpha_with_ci(data)[0].value == pytest.approx(reference)
    # the bootstrap's coincidence-matrix alpha equals the package on any resample
    counts = _value_counts(data)
    counts = counts[counts.sum(axis=1) >= 2]
    sample = counts[rng.integers(0, len(counts), len(counts))]
    m = sample.sum(axis=1)
    o = (
        (sample[:, :, None] * sample[:, None, :] - sample[:, :, None] * np.eye(5))
        / (m - 1)[:, None, None]
    ).sum(axis=0)
    expected = krippendorff.alpha(
        value_counts=sample, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
    )
    assert _alpha_from_coincidences(o[None])[0] == pytest.approx(expected)
    judge, human = rng.integers(1, 6, 40), rng.integers(1, 6, 40)
    assert kappa(judge, human).value == pytest.approx(
        cohen_kappa_score(judge, human, labels=[1, 2, 3, 4, 5], weights="quadratic")
    )
    assert spearman(judge.astype(float), human.astype(float)).value == pytest.approx(
        spearmanr(judge, human).statistic
    )


def test_ci_brackets_the_estimate_and_narrows_with_items() -> None:
    rng = np.random.default_rng(3)

    def width(items: int) -> float:
        truth = rng.integers(1, 6, size=items)
        data = np.clip(truth + rng.integers(-1, 2, size=(4, items)), 1, 5).astype(float)
        stat, lo, hi = alpha_with_ci(data)
        assert lo <= stat.value <= hi
        return hi - lo

    assert width(400) < width(25)


@pytest.mark.parametrize(
    ("matrix", "reason"),
    [
        ([[3, 3, 3, 3], [3, 3, 3, 3]], "every rating has the same value"),
        ([[1, 2, np.nan], [2, np.nan, 3]], "1 items have two or more ratings"),
    ],
)
def test_undefined_alpha_says_why(matrix: list[list[float]], reason: str) -> None:
    stat, lo, hi = alpha_with_ci(np.array(matrix, dtype=float))
    assert stat.value is None and reason in stat.reading and lo is None and hi is None


def test_undefined_kappa_and_spearman_say_why() -> None:
    assert kappa(np.array([3, 3, 3]), np.array([3, 3, 3])).reading.startswith("undefined")
    assert kappa(np.array([1, 2]), np.array([1, 2])).reading == "undefined: 2 items (needs 3)"
    assert spearman(np.array([1.0, 2, 3]), np.array([4.0, 4, 4])).reading == (
        "undefined: one side does not vary"
    )


def _long(scores: dict[str, list[int]], dimension: str = "ER", lang: str = "ko") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"item": f"i{n}", "rater": rater, "dimension": dimension, "lang": lang, "score": s}
            for rater, values in scores.items()
            for n, s in enumerate(values)
        ]
    )


def test_table_reads_judge_ceiling_and_length() -> None:
    ratings = _long({"a": [1, 2, 3, 4, 5, 2], "b": [1, 2, 4, 4, 5, 1], "c": [2, 2, 3, 5, 5, 2]})
    means = ratings.groupby("item")["score"].mean()
    judge = pd.DataFrame({"item": means.index, "dimension": "ER", "score": np.rint(means) + 1})
    lengths = pd.Series({f"i{n}": 10.0 * n for n in range(6)})
    row = agreement_table(
        ratings, judge, lengths, {"a": "native ko", "b": "native ko", "c": "not native ko"}
    ).iloc[0]
    assert (row["dimension"], row["lang"], row["group"], row["items"], row["raters"]) == (
        "ER",
        "ko",
        "all",
        6,
        3,
    )
    assert row["judge_bias"] == pytest.approx(float(np.mean(np.rint(means) + 1 - means)), abs=1e-4)
    assert (
        row["judge_bias_reading"].startswith("the judge scores")
        and "higher" in row["judge_bias_reading"]
    )
    assert row["judge_spearman"] > 0.9 and row["ceiling_spearman"] > 0.7
    assert row["alpha"] > 0.8 and row["alpha_reading"].startswith("reliable agreement")
    assert row["alpha_ci_low"] is None  # 6 items: no interval, and the reading says so
    assert row["length_reading"].endswith("correlation")


def test_table_has_group_rows_only_for_two_or_more_groups() -> None:
    ratings = _long({"a": [1, 2, 3, 4], "b": [1, 2, 3, 5]})
    empty_judge = pd.DataFrame(columns=["item", "dimension", "score"])
    one = agreement_table(ratings, empty_judge, pd.Series(dtype=float), {"a": "g", "b": "g"})
    assert list(one["group"]) == ["all"]
    assert one.iloc[0]["judge_bias_reading"].startswith("undefined")
    two = agreement_table(ratings, empty_judge, pd.Series(dtype=float), {"a": "g1", "b": "g2"})
    assert list(two["group"]) == ["all", "g1", "g2"]
    assert two.iloc[1]["alpha_reading"].startswith("undefined")  # one rater: nothing to compare


def test_the_judge_meets_the_same_leave_one_out_targets_as_people() -> None:
    import pandas as pd

    from koed_core.results.reliability import agreement_table

    # three raters on six items; the judge copies rater a exactly
    scores = {"a": [1, 2, 3, 4, 5, 3], "b": [2, 2, 3, 5, 4, 3], "c": [1, 3, 4, 4, 5, 2]}
    ratings = pd.DataFrame(
        [
            {"item": f"i{n}", "rater": r, "dimension": "ER", "lang": "en", "score": s}
            for r, values in scores.items()
            for n, s in enumerate(values)
        ]
    )
    judge = pd.DataFrame(
        [{"item": f"i{n}", "dimension": "ER", "score": float(s)} for n, s in enumerate(scores["a"])]
    )
    lengths = pd.Series({f"i{n}": float(10 + n) for n in range(6)})
    row = agreement_table(ratings, judge, lengths).iloc[0]
    # 18 ratings, each against the mean of the two others; the judge against the same 18
    assert "same 18 leave-one-out targets" in row["judge_loo_reading"]
    assert "each of 18 ratings" in row["ceiling_reading"]
    assert row["judge_loo_spearman"] is not None and row["ceiling_spearman"] is not None
    # a judge equal to one rater is no better than people by construction on these targets
    assert row["judge_loo_spearman"] < row["judge_spearman"]


def test_judge_and_people_are_rounded_the_same_way_before_kappa() -> None:
    """Issue 64 #5: a judge's mean of samples of 2.5, 3.5 and 4.5 against people whose
    median is the same 2.5, 3.5 and 4.5 agrees perfectly (rounded half-up on both sides;
    half-to-even on the judge's side gave 0.769)."""
    ratings = _long({"a": [2, 3, 4, 1, 5, 2], "b": [3, 4, 5, 1, 5, 2]})
    judge = pd.DataFrame(
        {"item": [f"i{n}" for n in range(6)], "dimension": "ER", "score": [2.5, 3.5, 4.5, 1, 5, 2]}
    )
    row = agreement_table(ratings, judge, pd.Series(dtype=float)).iloc[0]
    assert row["judge_kappa"] == pytest.approx(1.0)
    from koed_core.results.agreement import confusion

    pairs = pd.DataFrame({"judge": [2.5, 3.5, 4.5], "human_median": [2.5, 3.5, 4.5]})
    table = confusion(pairs)
    assert table.loc[3, 3] == 1 and table.loc[4, 4] == 1 and table.loc[5, 5] == 1


def test_a_judge_with_one_score_has_no_kappa_and_says_why() -> None:
    """Issue 64 #6: a judge that gives 3 everywhere has kappa 0 by construction, whatever
    people say: undefined with the reason, never "slight agreement"."""
    stat = kappa(np.array([3, 3, 3, 3, 3]), np.array([1, 3, 3, 4, 5]))
    assert stat.value is None and stat.reading.startswith("undefined")
    assert "single score" in stat.reading
    people = kappa(np.array([1, 2, 3, 4, 5]), np.array([2, 2, 2, 2, 2]))
    assert people.value is None and people.reading.startswith("undefined")


def test_alpha_on_a_handful_of_items_has_no_interval_and_says_why() -> None:
    """Issue 64 #6: on 3 items the percentile interval's upper end was the point (few
    distinct resamples): the point stands, the interval is left out with the reason."""
    stat, lo, hi = alpha_with_ci(np.array([[1, 1, 2], [1, 2, 2]], dtype=float))
    assert stat.value == pytest.approx(4 / 9)
    assert lo is None and hi is None and "too few" in stat.reading


def test_the_groups_bootstrap_equals_the_package_on_each_shared_resample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 64 #6 (speed): a cell's groups resample the cell's items together in one
    product; each resample's alpha of a group equals the package's alpha on the items
    drawn (an item the group rated fewer than twice adds nothing)."""
    from koed_core import bootstrap
    from koed_core.results.alpha import alphas_with_ci

    monkeypatch.setattr(bootstrap, "RESAMPLES", 40)
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, size=30)
    data = np.clip(truth + rng.integers(-1, 2, size=(6, 30)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    every, some = _value_counts(data), _value_counts(data[:3])
    (_a, lo_all, hi_all), (_s, lo, hi) = alphas_with_ci([every, some])
    draws = bootstrap.resample_counts(30, 0).astype(int)
    expected = []
    for counts in draws:
        drawn = np.repeat(some, counts, axis=0)
        drawn = drawn[drawn.sum(axis=1) >= 2]
        expected.append(
            krippendorff.alpha(
                value_counts=drawn, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
            )
        )
    assert (lo, hi) == pytest.approx(tuple(np.percentile(expected, [2.5, 97.5])))
    assert lo_all is not None and hi_all is not None and lo_all <= _a.value <= hi_all
