"""How far people agree with each other, and how far the judge agrees with people.

Per dimension and language:

* among raters: Krippendorff's alpha, ordinal, values 1-5 (``krippendorff`` package),
  with a bootstrap 95% CI over items;
* judge vs people: quadratic-weighted Cohen's kappa against the rounded human median
  (scikit-learn, labels fixed to 1..5), Spearman against the human mean (scipy), and the
  mean bias (judge minus people);
* the human ceiling: every rating against the mean of the other raters on its item, and
  the judge against exactly those leave-one-out targets (``judge_loo_*``), so the judge
  and people are compared on equal footing (against all k raters the judge would be
  compared with a steadier target than any one person is);
* a baseline: Spearman of response length against the human mean.

Every number comes with a plain reading, and an undefined statistic comes with the
reason instead of NaN. The readings are in the language being spoken (``koed_core.i18n``):
a page in Korean reads them in Korean, the command line and exports in English.
Inputs are long-form: one row per (item, rater, dimension).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from koed_core.i18n import _
from koed_core.judge.rubric import SCALE, codes
from koed_core.results.alpha import (
    MIN_ITEMS_FOR_CI,
    alpha_from_counts,
    alpha_with_ci,
    alphas_with_ci,
)
from koed_core.results.readings import (
    MIN_ITEMS,
    Stat,
    _too_few,
    read_alpha,
    read_kappa,
    read_rho,
)

__all__ = [
    "MIN_ITEMS",
    "MIN_ITEMS_FOR_CI",
    "NUMBERS",
    "Stat",
    "agreement_table",
    "alpha_from_counts",
    "alpha_with_ci",
    "kappa",
    "read_alpha",
    "read_kappa",
    "read_rho",
    "round_half_up",
    "spearman",
]

NUMBERS = (
    "alpha",
    "alpha_ci_low",
    "alpha_ci_high",
    "judge_kappa",
    "judge_spearman",
    "judge_bias",
    "ceiling_spearman",
    "ceiling_kappa",
    "judge_loo_spearman",
    "judge_loo_kappa",
    "length_spearman",
)
"""The numeric columns of the agreement table (the rest are counts, keys and readings)."""


def kappa(judge: np.ndarray, human: np.ndarray) -> Stat:
    """Quadratic-weighted kappa, labels fixed to 1..5 so the weights never shift.

    Undefined where either side gives one score only: observed and chance agreement are
    then equal, so kappa is 0 by construction whatever the other side says, and reading
    it as "slight agreement" would be wrong (issue 64 #6). Computed by statsmodels'
    ``cohens_kappa`` from the 5 x 5 table (equal to scikit-learn's ``cohen_kappa_score``,
    checked in the tests, without its per-call input checks: 90 cells a table).
    """
    if len(judge) < MIN_ITEMS:
        return Stat(None, _too_few(len(judge)))
    first = np.asarray(judge, dtype=int) - SCALE[0]
    second = np.asarray(human, dtype=int) - SCALE[0]
    size = len(SCALE)
    # a score off the scale is left out, as scikit-learn's fixed labels leave it out
    inside = (first >= 0) & (first < size) & (second >= 0) & (second < size)
    first, second = first[inside], second[inside]
    if np.ptp(first) == 0 and np.ptp(second) == 0:
        return Stat(None, _("undefined: judge and people each give one score only"))
    if np.ptp(first) == 0 or np.ptp(second) == 0:
        return Stat(
            None,
            _(
                "undefined: one side gives a single score only, so kappa is 0 by "
                "construction whatever the other says"
            ),
        )
    from statsmodels.stats.inter_rater import cohens_kappa

    table = np.bincount(first * size + second, minlength=size * size).reshape(size, size)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(cohens_kappa(table, wt="quadratic", return_results=False))
    if math.isnan(value):
        return Stat(None, _("undefined: no variance in the scores"))
    return Stat(value, read_kappa(value))


def spearman(a: np.ndarray, b: np.ndarray) -> Stat:
    """Spearman's rho with the reason when undefined."""
    if len(a) < MIN_ITEMS:
        return Stat(None, _too_few(len(a)))
    if len(set(a)) < 2 or len(set(b)) < 2:
        return Stat(None, _("undefined: one side does not vary"))
    from scipy.stats import rankdata

    # Pearson's r of the average ranks: Spearman's rho with ties, as scipy's spearmanr
    # computes it (checked in the tests), without its per-call checks (120 a table)
    value = float(np.corrcoef(rankdata(a), rankdata(b))[0, 1])
    return Stat(value, read_rho(value))


def _item_counts(ratings: pd.DataFrame, items: np.ndarray) -> np.ndarray:
    """``items`` (sorted) x 5 value counts of these ratings, the first rating of each
    rater on an item kept: what alpha reads, without a raters x items matrix."""
    first = ratings.drop_duplicates(["rater", "item"])
    where = np.searchsorted(items, first["item"].to_numpy())
    values = first["score"].to_numpy(dtype=int) - SCALE[0]
    size = len(SCALE)
    counts = np.bincount(where * size + values, minlength=len(items) * size)
    return counts.reshape(len(items), size).astype(float)


def _cell(
    ratings: pd.DataFrame,
    judge: pd.DataFrame,
    lengths: pd.Series,
    alpha_ci: tuple[Stat, float | None, float | None],
) -> dict[str, object]:
    """All statistics for one dimension x language (x rater group); ``alpha_ci`` from
    :func:`koed_core.results.alpha.alphas_with_ci` over the cell's groups."""
    alpha, lo, hi = alpha_ci
    per_item = ratings.groupby("item")["score"]
    human_mean, human_median = per_item.mean(), per_item.median()
    row: dict[str, object] = {
        "items": int(ratings["item"].nunique()),
        "raters": int(ratings["rater"].nunique()),
        "ratings": len(ratings),
        "alpha": alpha.value,
        "alpha_ci_low": lo,
        "alpha_ci_high": hi,
        "alpha_reading": alpha.reading,
    }
    targets = _loo_targets(ratings)
    row.update(_ceiling(targets))
    scored = judge.dropna(subset=["score"]).set_index("item")["score"]
    row.update(_judge_loo(targets, scored))
    both = scored.index.intersection(human_mean.index)
    j = scored.loc[both].to_numpy(dtype=float)
    # the judge's mean of samples and the people's median rounded alike (issue 64 #5)
    k = kappa(round_half_up(j), round_half_up(human_median.loc[both].to_numpy()))
    rho = spearman(j, human_mean.loc[both].to_numpy())
    bias = round(float(np.mean(j - human_mean.loc[both].to_numpy())), 4) if len(both) else None
    row.update(
        {
            "judged_items": len(both),
            "judge_kappa": k.value,
            "judge_kappa_reading": k.reading,
            "judge_spearman": rho.value,
            "judge_spearman_reading": rho.reading,
            "judge_bias": bias,
            "judge_bias_reading": _read_bias(bias),
        }
    )
    lens = lengths.reindex(human_mean.index).dropna()
    base = spearman(lens.to_numpy(dtype=float), human_mean.loc[lens.index].to_numpy())
    row.update({"length_spearman": base.value, "length_reading": base.reading})
    return row


def round_half_up(values: np.ndarray) -> np.ndarray:
    """Medians like 3.5 go up, as a person reading "between 3 and 4" would round."""
    return np.floor(np.asarray(values, dtype=float) + 0.5).astype(int)


def _read_bias(bias: float | None) -> str:
    if bias is None:
        return _("undefined: no item has both a judge score and human ratings")
    if abs(bias) < 0.1:
        return _("the judge scores like people on average")
    size = f"{abs(bias):.2f}"
    if bias > 0:
        return _("the judge scores {size} higher than people", size=size)
    return _("the judge scores {size} lower than people", size=size)


def _loo_targets(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per rating of an item with two or more ratings: the item, the rating, and the mean
    of the other raters' scores on it (the leave-one-out target)."""
    items = ratings["item"].to_numpy()
    scores = ratings["score"].to_numpy(dtype=float)
    _unique, where = np.unique(items, return_inverse=True)
    total = np.bincount(where, weights=scores)[where]
    count = np.bincount(where)[where]
    shared = count > 1
    with np.errstate(divide="ignore", invalid="ignore"):
        others = (total - scores) / (count - 1)
    return pd.DataFrame({"item": items[shared], "own": scores[shared], "others": others[shared]})


def _judge_loo(targets: pd.DataFrame, scored: pd.Series) -> dict[str, object]:
    """The judge against the same leave-one-out targets as each human rating."""
    targets = targets[targets["item"].isin(scored.index)]
    judge = scored.reindex(targets["item"]).to_numpy(dtype=float)
    others = targets["others"].to_numpy()
    rho = spearman(judge, others)
    k = kappa(round_half_up(judge), round_half_up(others))
    return {
        "judge_loo_spearman": rho.value,
        "judge_loo_kappa": k.value,
        "judge_loo_reading": _(
            "the judge against the same {n} leave-one-out targets as the ceiling: {reading}",
            n=len(judge),
            reading=k.reading if k.value is not None else rho.reading,
        ),
    }


def _ceiling(targets: pd.DataFrame) -> dict[str, object]:
    """Every rating against the mean of the other raters on the same item, pooled over raters
    (``targets`` from :func:`_loo_targets`).

    This is what people reach among themselves; the judge's kappa and Spearman are read
    against it. Items with a single rating have no "others" and are left out.
    """
    own, others = targets["own"].to_numpy(), targets["others"].to_numpy()
    rho = spearman(own, others)
    k = kappa(own.astype(int), round_half_up(others))
    return {
        "ceiling_spearman": rho.value,
        "ceiling_kappa": k.value,
        "ceiling_reading": _(
            "each of {n} ratings against the other raters' mean: {reading}",
            n=len(own),
            reading=k.reading if k.value is not None else rho.reading,
        ),
    }


def _coded(
    ratings: pd.DataFrame,
    judge: pd.DataFrame,
    lengths: pd.Series,
    groups: dict[str, str] | None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, dict[int, str] | None]:
    """Items and raters as integer codes: every lookup of the table (isin, groupby,
    reindex) is several times faster on integers than on strings. No statistic depends
    on the names, and none leaves this module."""
    parts = [ratings["item"]] + ([judge["item"]] if "item" in judge else [])
    # sorted, so items keep the order a pivot by name gave them (the bootstrap draws by
    # position: the same order, the same resamples, the same CIs as before)
    items = pd.Index(sorted(pd.unique(pd.concat(parts, ignore_index=True))))
    ratings = ratings.assign(item=items.get_indexer(ratings["item"]))
    if "item" in judge:
        judge = judge.assign(item=items.get_indexer(judge["item"]))
    where = items.get_indexer(lengths.index)
    lengths = pd.Series(lengths.to_numpy()[where >= 0], index=where[where >= 0])
    codes_, raters = pd.factorize(ratings["rater"])
    ratings = ratings.assign(rater=codes_)
    coded = None
    if groups is not None:
        coded = {n: groups[name] for n, name in enumerate(raters) if name in groups}
    return ratings, judge, lengths, coded


def agreement_table(
    ratings: pd.DataFrame,
    judge: pd.DataFrame,
    lengths: pd.Series,
    groups: dict[str, str] | None = None,
) -> pd.DataFrame:
    """One row per dimension x language x rater group ("all" plus each group given).

    Args:
        ratings: columns item, rater, dimension, lang, score (1-5).
        judge: columns item, dimension, score (None where unscored).
        lengths: response length in characters, indexed by item.
        groups: rater -> group name (e.g. "native ko" / "not native ko").
    """
    ratings, judge, lengths, by_code = _coded(ratings, judge, lengths, groups)
    rows = []
    for (dimension, lang), cell in ratings.groupby(["dimension", "lang"], sort=True):
        judged = judge[judge["dimension"] == dimension] if not judge.empty else judge
        judged = judged if not judged.empty else pd.DataFrame(columns=["item", "score"])
        subsets = [("all", cell)]
        names = sorted(set((by_code or {}).values()))
        for group in names if len(names) > 1 else []:
            members = [r for r, g in (by_code or {}).items() if g == group]
            subsets.append((group, cell[cell["rater"].isin(members)]))
        subsets = [(group, subset) for group, subset in subsets if not subset.empty]
        # the groups' alphas resample the cell's items together (one draw, one product)
        items = np.unique(cell["item"].to_numpy())
        alphas = alphas_with_ci([_item_counts(subset, items) for _g, subset in subsets])
        for (group, subset), alpha in zip(subsets, alphas, strict=True):
            rows.append(
                {
                    "dimension": dimension,
                    "lang": lang,
                    "group": group,
                    **_cell(subset, judged, lengths, alpha),
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    # rubric order (EX, IP, ER, EEA, CA) everywhere, as on the rating page
    order = {code: n for n, code in enumerate(codes())}
    rank = table["dimension"].map(lambda d: order.get(d, len(order)))
    return (
        table.assign(_rank=rank)
        .sort_values(["_rank", "lang"], kind="stable")
        .drop(columns="_rank")
        .reset_index(drop=True)
    )
