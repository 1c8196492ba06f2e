"""Krippendorff's alpha (ordinal, values 1-5) with a bootstrap 95% CI over items, for
one or several rater groups of a cell at once.

The point estimate is the ``krippendorff`` package's. The bootstrap resamples the cell's
items: alpha's coincidence matrix is a sum over items, so every resample's matrix is the
resample's item counts (``koed_core.bootstrap.resample_counts``: resamples x items) times
the per-item matrices (items x 25). The groups of a cell (all raters, native Korean, the
others) share the cell's items, so their per-item matrices are stacked side by side and
all ``RESAMPLES`` resamples of all groups are one matrix product, never a loop; an item a
group has fewer than two ratings of adds nothing to that group's matrix. Resampling the
cell's items (not each group's own pairable items) is the same design (items drawn,
raters fixed) and draws once a cell instead of once a group: the agreement table's
bootstrap went from a third of its time to a tenth (issue 64 #6).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from koed_core import bootstrap
from koed_core.i18n import _
from koed_core.judge.rubric import SCALE
from koed_core.results.readings import MIN_ITEMS, Stat, read_alpha

MIN_ITEMS_FOR_CI = 10
"""Items alpha's bootstrap interval needs: n items have at most C(2n-1, n) distinct
resamples (3 items: 10), so with a handful the resampled alphas pile up on a few values
and the percentile interval's end can be the point itself (issue 64 #6); below this the
point is shown and the interval left out, with the reason."""
AlphaCI = tuple[Stat, float | None, float | None]
"""Alpha with its reading, and its interval's ends (None: no interval)."""


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


def alpha_with_ci(matrix: np.ndarray, seed: int = 0) -> AlphaCI:
    """Alpha of a raters x items matrix (NaN = not rated) and its bootstrap 95% CI."""
    return alpha_from_counts(_value_counts(matrix), seed)


def alpha_from_counts(counts: np.ndarray, seed: int = 0) -> AlphaCI:
    """Alpha from items x 5 value counts, and its bootstrap 95% CI."""
    return alphas_with_ci([counts], seed)[0]


def alphas_with_ci(groups: Sequence[np.ndarray], seed: int = 0) -> list[AlphaCI]:
    """Alpha and its bootstrap 95% CI for each group's items x 5 value counts (the rows:
    the same items, in the same order, for every group), or None with the reason in the
    reading where it is undefined.

    All groups' resamples come from one draw of the items and one matrix product (see
    the module's docstring); a resample where a group's ratings all agree has no alpha,
    and the reading says how many were left out.
    """
    found: list[AlphaCI] = []
    blocks: dict[int, np.ndarray] = {}  # per-item coincidences of the groups given a CI
    for n, counts in enumerate(groups):
        stat, per_item = _point(np.asarray(counts, dtype=float))
        found.append((stat, None, None))
        if per_item is not None:
            blocks[n] = per_item
    if not blocks:
        return found
    items = len(next(iter(blocks.values())))
    summed = bootstrap.resample_counts(items, seed) @ np.hstack(list(blocks.values()))
    for place, n in enumerate(blocks):
        block = summed[:, 25 * place : 25 * (place + 1)]
        found[n] = _interval(found[n][0], _alpha_from_coincidences(block.reshape(-1, 5, 5)))
    return found


def _point(counts: np.ndarray) -> tuple[Stat, np.ndarray | None]:
    """The group's alpha, and its items' coincidence matrices (items x 25, zero for an
    item with fewer than two ratings) when it gets an interval, else None."""
    rated = counts.sum(axis=1)
    pairable = counts[rated >= 2]
    items = len(pairable)
    if items < MIN_ITEMS:
        reason = _(
            "undefined: {items} items have two or more ratings (needs {needed})",
            items=items,
            needed=MIN_ITEMS,
        )
        return Stat(None, reason), None
    if (pairable.sum(axis=0) > 0).sum() < 2:
        return Stat(None, _("undefined: every rating has the same value")), None
    import krippendorff  # here, not at the top: the `koed` command starts without scipy

    value = float(
        krippendorff.alpha(
            value_counts=pairable, level_of_measurement="ordinal", value_domain=list(SCALE)
        )
    )
    if items < MIN_ITEMS_FOR_CI:
        reading = _(
            "{reading}; no interval: {items} items are too few for a bootstrap interval "
            "(needs {needed})",
            reading=read_alpha(value),
            items=items,
            needed=MIN_ITEMS_FOR_CI,
        )
        return Stat(value, reading), None
    with np.errstate(divide="ignore", invalid="ignore"):
        per_item = (counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(5)) / (
            rated - 1
        )[:, None, None]
    per_item[rated < 2] = 0.0
    return Stat(value, read_alpha(value)), per_item.reshape(len(counts), 25)


def _interval(stat: Stat, boot: np.ndarray) -> AlphaCI:
    interval = bootstrap.percentile_interval(boot)
    dropped = int((~np.isfinite(boot)).sum())
    reading = stat.reading
    if dropped:
        # a resample where every rating agrees has no alpha; say how many, never hide it
        reading = _(
            "{reading}; CI from {kept} of {total} resamples ({dropped} undefined)",
            reading=reading,
            kept=len(boot) - dropped,
            total=len(boot),
            dropped=dropped,
        )
    low, high = interval if interval is not None else (None, None)
    return Stat(stat.value, reading), low, high
