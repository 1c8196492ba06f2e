"""Could the judge replace one of the raters? The Alternative Annotator Test (alt-test;
Calderon, Reichart and Dror, ACL 2025), per dimension, language and rater group.

Leave one rater out at a time. On each item that rater scored, compare two candidates
against the *other* raters of the item: the left-out rater and the judge. A candidate's
alignment is minus its root mean squared difference from the others' scores (the
paper's measure for numeric annotations). The judge *wins* an item when it aligns at
least as well as the rater, the rater when it aligns at least as well as the judge
(a tie is a win for both). Per rater j, with rho_f the judge's share of wins and rho_h
the rater's, the test is H0: rho_h - rho_f >= epsilon against H1: rho_h - rho_f <
epsilon (one-sided one-sample t-test of the per-item differences against epsilon,
scipy's ``ttest_1samp``). epsilon is the cost-benefit allowance the paper gives the
cheaper annotator: 0.1 for crowd workers (our raters), 0.2 for experts. The p-values of
all raters are adjusted together by Benjamini-Yekutieli (statsmodels' ``fdr_by``, the
paper's procedure: the raters' tests share items, so they are dependent) at q = 0.05.
The **winning rate** is the share of raters whose H0 is rejected; the judge **passes**
(may replace a rater) when it is at least 0.5. The **advantage probability** is the
judge's mean rho_f over the raters: a measure to compare judges, defined even where the
test cannot be run.

A rater is tested on at least ``MIN_ITEMS`` items that another rater of the group and
the judge also scored (the authors ask for 50-100 items in all; a t-test on fewer than
30 leans on its normal approximation), and the test needs ``MIN_RATERS`` (3) tested
raters, as the paper's leave-one-out does; otherwise the row says why, never a number.

No maintained implementation exists to install: the authors publish the procedure as a
notebook (github.com/nitaytech/AltTest), and the one package on PyPI that ships it
(meta-evaluator) needs Python 3.13 and LiteLLM and is not installable here. This module
is written from the paper's definitions, with scipy's t-test and statsmodels'
Benjamini-Yekutieli adjustment; tests/test_alt_test.py checks it against a planted judge
and against the definitions computed by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from koed_core.i18n import _

EPSILON = 0.1
"""The paper's allowance for crowd-worker annotators (0.2 for experts)."""
Q = 0.05
MIN_RATERS = 3
MIN_ITEMS = 30
COLUMNS = [
    "dimension",
    "lang",
    "group",
    "raters",
    "raters_tested",
    "items",
    "epsilon",
    "winning_rate",
    "passes",
    "advantage_probability",
    "alt_test_reading",
]


@dataclass(frozen=True)
class AltTest:
    """One cell's alt-test: the winning rate and the verdict, or None with the reason."""

    raters: int
    tested: int
    items: int
    winning_rate: float | None
    passes: bool | None
    advantage: float | None
    reading: str
    p_values: tuple[float, ...] = ()
    """Each tested rater's one-sided p-value, in the raters' order of first appearance."""


def wins(ratings: pd.DataFrame, judge: pd.Series) -> pd.DataFrame:
    """Per rating of an item that another rater and the judge also scored: the item, the
    rater, whether the judge wins (``judge_wins``) and whether the rater does
    (``rater_wins``) against the other raters of the item (minus root mean squared
    difference). Arrays and bincounts, not a groupby: 30 cells and 3 groups a table.

    ``ratings``: item, rater, score (one group's); ``judge``: score by item.
    """
    first = ratings.drop_duplicates(["rater", "item"])
    at = judge.index.get_indexer(first["item"])
    known = at >= 0  # an item the judge never scored (or no judge at all) is left out
    if not known.any():
        return pd.DataFrame(columns=["item", "rater", "judge_wins", "rater_wins"])
    predicted = judge.to_numpy(dtype=float)[at[known]]
    items, raters = first["item"].to_numpy()[known], first["rater"].to_numpy()[known]
    scores = first["score"].to_numpy(dtype=float)[known]
    where, _unique = pd.factorize(items)
    count = np.bincount(where)[where]
    sum_o = np.bincount(where, weights=scores)[where] - scores  # the other raters' sum
    sq_o = np.bincount(where, weights=scores**2)[where] - scores**2  # ... and squares
    others = count - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        # mean over the others of (x - o)^2 = (sum o^2 - 2 x sum o + n x^2) / n
        judge_msd = (sq_o - 2 * predicted * sum_o + others * predicted**2) / others
        rater_msd = (sq_o - 2 * scores * sum_o + others * scores**2) / others
    judge_align, rater_align = -np.sqrt(np.abs(judge_msd)), -np.sqrt(np.abs(rater_msd))
    shared = others > 0
    return pd.DataFrame(
        {
            "item": items[shared],
            "rater": raters[shared],
            "judge_wins": (judge_align >= rater_align)[shared],
            "rater_wins": (rater_align >= judge_align)[shared],
        }
    )


def alt_test(ratings: pd.DataFrame, judge: pd.Series, epsilon: float = EPSILON) -> AltTest:
    """The alt-test of one group's ratings (item, rater, score) against the judge's
    scores (by item); see the module docstring.

    Each rater's test is the one-sample t-test of ``ttest_1samp(d, epsilon,
    alternative="less")`` (d: rater wins minus judge wins per item), computed for all
    raters at once from their counts, means and variances with scipy's t distribution
    (equal to ``ttest_1samp``, checked in the tests)."""
    from scipy.stats import t as student
    from statsmodels.stats.multitest import multipletests

    found = wins(ratings, judge)
    raters = int(ratings["rater"].nunique())
    items = int(pd.unique(found["item"]).size)
    who, _names = pd.factorize(found["rater"])
    n = np.bincount(who).astype(float)
    judge_won = np.bincount(who, weights=found["judge_wins"].to_numpy(dtype=float))
    diff = found["rater_wins"].to_numpy(dtype=float) - found["judge_wins"].to_numpy(dtype=float)
    mean = np.bincount(who, weights=diff) / np.maximum(n, 1)
    spread = np.bincount(who, weights=(diff - mean[who]) ** 2) / np.maximum(n - 1, 1)
    advantage = float((judge_won / np.maximum(n, 1)).mean()) if len(n) else None
    tested = n >= MIN_ITEMS
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = (mean - epsilon) / np.sqrt(spread / n)
    # every item alike: no spread for the t-test to read, and the answer is plain
    plain = np.where(mean < epsilon, 0.0, 1.0)
    p = np.where(spread > 0, student.cdf(statistic, np.maximum(n - 1, 1)), plain)[tested]
    if len(p) < MIN_RATERS:
        reason = _(
            "undefined: {tested} raters have {items} or more items that another rater and "
            "the judge also scored (needs {needed} such raters)",
            tested=len(p),
            items=MIN_ITEMS,
            needed=MIN_RATERS,
        )
        return AltTest(raters, len(p), items, None, None, advantage, reason)
    rejected = multipletests(p, alpha=Q, method="fdr_by")[0]
    rate = float(rejected.mean())
    return AltTest(
        raters, len(p), items, rate, rate >= 0.5, advantage,
        _read(rate, int(rejected.sum()), len(p), epsilon), tuple(map(float, p)),
    )  # fmt: skip


def _read(rate: float, won: int, tested: int, epsilon: float) -> str:
    if rate >= 0.5:
        return _(
            "the judge could replace one of these raters: it holds its own against {won} of "
            "{tested} (winning rate {rate}, 0.5 needed; epsilon {epsilon})",
            won=won,
            tested=tested,
            rate=f"{rate:.2f}",
            epsilon=epsilon,
        )
    return _(
        "the judge cannot replace one of these raters: it holds its own against {won} of "
        "{tested} only (winning rate {rate}, 0.5 needed; epsilon {epsilon})",
        won=won,
        tested=tested,
        rate=f"{rate:.2f}",
        epsilon=epsilon,
    )


def alt_test_table(
    ratings: pd.DataFrame,
    judge: pd.DataFrame,
    groups: Mapping[str, str] | None = None,
    epsilon: float = EPSILON,
) -> pd.DataFrame:
    """One row per dimension x language x rater group ("all" and each group given, as
    the agreement table has them).

    Args:
        ratings: item, rater, dimension, lang, score.
        judge: item, dimension, score (None where unscored).
        groups: rater -> group name.
        epsilon: the allowance for the cheaper annotator (module docstring).
    """
    rows = []
    judged = judge.dropna(subset=["score"]) if not judge.empty else judge
    names = sorted(set((groups or {}).values()))
    for (dimension, lang), cell in ratings.groupby(["dimension", "lang"], sort=True):
        scores = judged[judged["dimension"] == dimension].groupby("item")["score"].mean()
        subsets = [("all", cell)]
        for group in names if len(names) > 1 else []:
            members = {r for r, g in (groups or {}).items() if g == group}
            subsets.append((group, cell[cell["rater"].isin(members)]))
        for group, subset in subsets:
            if subset.empty:
                continue
            found = alt_test(subset, scores, epsilon)
            rows.append(
                {
                    "dimension": dimension,
                    "lang": lang,
                    "group": group,
                    "raters": found.raters,
                    "raters_tested": found.tested,
                    "items": found.items,
                    "epsilon": epsilon,
                    "winning_rate": found.winning_rate,
                    "passes": found.passes,
                    "advantage_probability": found.advantage,
                    "alt_test_reading": found.reading,
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)
