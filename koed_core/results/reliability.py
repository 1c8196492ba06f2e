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
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from koed_core import bootstrap
from koed_core.i18n import N_, _
from koed_core.judge.rubric import SCALE, codes

MIN_ITEMS = 3
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


@dataclass(frozen=True)
class Stat:
    """A statistic, or None with the reason it is undefined; ``reading`` says what it means."""

    value: float | None
    reading: str


KAPPA_BANDS = (
    (0.8, N_("almost perfect agreement")),
    (0.6, N_("substantial agreement")),
    (0.4, N_("moderate agreement")),
    (0.2, N_("fair agreement")),
    (0.0, N_("slight agreement")),
)
"""Landis and Koch's bands, each lower limit with its reading (whole, so it translates)."""
RHO_WORDS = {
    ("strong", True): N_("strong positive correlation"),
    ("strong", False): N_("strong negative correlation"),
    ("moderate", True): N_("moderate positive correlation"),
    ("moderate", False): N_("moderate negative correlation"),
    ("weak", True): N_("weak positive correlation"),
    ("weak", False): N_("weak negative correlation"),
}


def _too_few(items: int) -> str:
    return _("undefined: {items} items (needs {needed})", items=items, needed=MIN_ITEMS)


def read_alpha(alpha: float) -> str:
    """Krippendorff's conventions: .8 and up reliable, .667 tentative."""
    if alpha >= 0.8:
        return _("reliable agreement")
    if alpha >= 0.667:
        return _("tentative agreement: draw only cautious conclusions")
    if alpha > 0:
        return _("weak agreement: conclusions from these ratings are doubtful")
    return _("no agreement beyond chance")


def read_kappa(kappa: float) -> str:
    """Landis and Koch's bands."""
    for limit, words in KAPPA_BANDS:
        if kappa >= limit:
            return _(words)
    return _("worse than chance")


def read_rho(rho: float) -> str:
    """Strength of a rank correlation."""
    size = abs(rho)
    strength = "strong" if size >= 0.6 else "moderate" if size >= 0.3 else "weak"
    return _(RHO_WORDS[strength, rho >= 0])


def _value_counts(matrix: np.ndarray) -> np.ndarray:
    """items x 5 counts from a raters x items matrix with NaN for missing."""
    return np.stack([(matrix == v).sum(axis=0) for v in SCALE], axis=1).astype(float)


def _alpha_from_coincidences(o: np.ndarray) -> np.ndarray:
    """Ordinal alpha for a stack of 5x5 coincidence matrices (B, 5, 5).

    alpha = 1 - (n - 1) * sum(o * d2) / sum(n_c n_k d2), with the ordinal metric
    d2(c, k) = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 (Krippendorff 2011).
    """
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    cs = np.cumsum(n_c, axis=1)
    lo = np.minimum.outer(np.arange(5), np.arange(5))
    hi = np.maximum.outer(np.arange(5), np.arange(5))
    between = cs[:, hi] - cs[:, lo] + n_c[:, lo]
    d2 = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2
    observed = (o * d2).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * d2).sum(axis=(1, 2)) / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha: np.ndarray = 1 - observed / expected
    return alpha


def alpha_with_ci(matrix: np.ndarray, seed: int = 0) -> tuple[Stat, float | None, float | None]:
    """Alpha of a raters x items matrix (NaN = not rated) and its bootstrap 95% CI.

    The point estimate is the ``krippendorff`` package's. The bootstrap resamples items:
    alpha's coincidence matrix is a sum over items, so each resample is a weighted sum of
    per-item matrices (checked against the package in the tests).
    """
    counts = _value_counts(matrix)
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) < MIN_ITEMS:
        return (
            Stat(
                None,
                _(
                    "undefined: {items} items have two or more ratings (needs {needed})",
                    items=len(pairable),
                    needed=MIN_ITEMS,
                ),
            ),
            None,
            None,
        )
    if (pairable.sum(axis=0) > 0).sum() < 2:
        return Stat(None, _("undefined: every rating has the same value")), None, None
    import krippendorff  # here, not at the top: the `koed` command starts without scipy

    value = float(
        krippendorff.alpha(
            value_counts=pairable, level_of_measurement="ordinal", value_domain=list(SCALE)
        )
    )
    m = pairable.sum(axis=1)
    per_item = (pairable[:, :, None] * pairable[:, None, :] - pairable[:, :, None] * np.eye(5)) / (
        m - 1
    )[:, None, None]
    items = len(pairable)
    weights = bootstrap.resample_counts(items, seed)
    boot = _alpha_from_coincidences((weights @ per_item.reshape(items, 25)).reshape(-1, 5, 5))
    finite = boot[np.isfinite(boot)]
    lo, hi = (
        (float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5)))
        if len(finite)
        else (None, None)
    )
    reading = read_alpha(value)
    dropped = len(boot) - len(finite)
    if dropped:
        # a resample where every rating agrees has no alpha; say how many, never hide it
        reading = _(
            "{reading}; CI from {kept} of {total} resamples ({dropped} undefined)",
            reading=reading,
            kept=len(finite),
            total=len(boot),
            dropped=dropped,
        )
    return Stat(value, reading), lo, hi


def kappa(judge: np.ndarray, human: np.ndarray) -> Stat:
    """Quadratic-weighted kappa, labels fixed to 1..5 so the weights never shift."""
    if len(judge) < MIN_ITEMS:
        return Stat(None, _too_few(len(judge)))
    if len(set(judge)) < 2 and len(set(human)) < 2:
        return Stat(None, _("undefined: judge and people each give one score only"))
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # scores as 0-4: the same quadratic weights, and scikit-learn's fast path (labels
        # 0..n-1 need no lookup table); the value is unchanged
        low = SCALE[0]
        value = float(
            cohen_kappa_score(
                np.asarray(judge) - low,
                np.asarray(human) - low,
                labels=[s - low for s in SCALE],
                weights="quadratic",
            )
        )
    if math.isnan(value):
        return Stat(None, _("undefined: no variance in the scores"))
    return Stat(value, read_kappa(value))


def spearman(a: np.ndarray, b: np.ndarray) -> Stat:
    """Spearman's rho with the reason when undefined."""
    if len(a) < MIN_ITEMS:
        return Stat(None, _too_few(len(a)))
    if len(set(a)) < 2 or len(set(b)) < 2:
        return Stat(None, _("undefined: one side does not vary"))
    from scipy.stats import spearmanr

    value = float(spearmanr(a, b).statistic)
    return Stat(value, read_rho(value))


def _matrix(ratings: pd.DataFrame) -> np.ndarray:
    """Raters x items, NaN where a rater did not rate an item (the first rating kept)."""
    first = ratings.drop_duplicates(["rater", "item"])
    raters, rows = np.unique(first["rater"].to_numpy(), return_inverse=True)
    items, columns = np.unique(first["item"].to_numpy(), return_inverse=True)
    matrix = np.full((len(raters), len(items)), np.nan)
    matrix[rows, columns] = first["score"].to_numpy(dtype=float)
    return matrix


def _cell(ratings: pd.DataFrame, judge: pd.DataFrame, lengths: pd.Series) -> dict[str, object]:
    """All statistics for one dimension x language (x rater group)."""
    alpha, lo, hi = alpha_with_ci(_matrix(ratings))
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
    k = kappa(np.rint(j).astype(int), round_half_up(human_median.loc[both].to_numpy()))
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
    per_item = ratings.groupby("item")["score"]
    total, count = per_item.transform("sum"), per_item.transform("count")
    shared = count > 1
    return pd.DataFrame(
        {
            "item": ratings.loc[shared, "item"],
            "own": ratings.loc[shared, "score"].astype(float),
            "others": ((total - ratings["score"]) / (count - 1))[shared].astype(float),
        }
    )


def _judge_loo(targets: pd.DataFrame, scored: pd.Series) -> dict[str, object]:
    """The judge against the same leave-one-out targets as each human rating."""
    targets = targets[targets["item"].isin(scored.index)]
    judge = scored.reindex(targets["item"]).to_numpy(dtype=float)
    others = targets["others"].to_numpy()
    rho = spearman(judge, others)
    k = kappa(np.rint(judge).astype(int), round_half_up(others))
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
        for group, subset in subsets:
            if subset.empty:
                continue
            rows.append(
                {
                    "dimension": dimension,
                    "lang": lang,
                    "group": group,
                    **_cell(subset, judged, lengths),
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
