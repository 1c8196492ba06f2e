"""The bootstrap behind every interval and p-value: one way to draw resamples, one count.

Every 95% CI in KoED Studio (a gap, a change, an alpha, a kappa, an AUC) resamples its
units (dialogues, items) with replacement, ``RESAMPLES`` times, from
``numpy.random.default_rng(seed)``, and reads the 2.5th and 97.5th percentiles of the
statistic over the resamples (the percentile interval, Efron and Tibshirani 1993, ch. 13).
The same unit count and seed always give the same resamples, so a number recomputed
outside the app from the same draws is equal, and a CI and its p-value share them.

``scipy.stats.bootstrap`` is not used: its default interval is BCa, not the percentile
one the exports describe, and the statistics here (alpha from per-item coincidence
matrices, kappa and AUC for every resample at once) are computed from the draws
themselves, which it does not hand out.

This module sits in koed_core's lowest layer (beside ``i18n``) because both
``koed_core.results`` and ``koed_core.annotation`` (below results) use it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

Seed = int | tuple[int, ...]
"""A generator's seed: a number, or numbers (``(seed, n)``: the n-th of several
independent streams from one seed, as ``numpy.random.SeedSequence`` spreads them), so
groups resampled apart (the strata of a design) never share their draws."""
RESAMPLES = 2000
"""Resamples per interval: the count the gap tables always drew (Efron and Tibshirani ask
for 1,000 or more for a percentile interval). Read at each call, so a bench's smoke run
may lower it."""


def resample_indices(units: int, seed: Seed = 0) -> np.ndarray:
    """Positions of ``units`` units drawn with replacement: row r is resample r.

    Args:
        units: how many units (dialogues, items) there are.
        seed: the generator's seed; equal seeds give equal draws.

    Returns:
        An integer array of shape (``RESAMPLES``, ``units``), read-only: the draws of a
        small size are kept, since a table of many small groups (a gap per label)
        asks for the same ones again and again.
    """
    if units <= KEPT_UNITS:
        return _kept_indices(units, seed, RESAMPLES)
    return _draw(units, seed, RESAMPLES)


KEPT_UNITS = 200
"""Draws of up to this many units are kept (at most 16 sizes: 26 MB)."""


def _draw(units: int, seed: Seed, resamples: int) -> np.ndarray:
    drawn: np.ndarray = np.random.default_rng(seed).integers(0, units, size=(resamples, units))
    drawn.flags.writeable = False
    return drawn


@lru_cache(maxsize=16)
def _kept_indices(units: int, seed: Seed, resamples: int) -> np.ndarray:
    return _draw(units, seed, resamples)


def resample_counts(units: int, seed: Seed = 0) -> np.ndarray:
    """How often each unit is drawn in each resample of :func:`resample_indices` (float,
    so a product with per-unit values runs in BLAS). Read-only and kept: statistics of
    the same size and seed share them."""
    return _counts(units, seed, RESAMPLES)


@lru_cache(maxsize=4)
def _counts(units: int, seed: Seed, resamples: int) -> np.ndarray:
    # every resample's counts in one bincount: resample r's draws are shifted by
    # r * units so they land in row r of one flat array (no loop over resamples); the
    # shift goes into a copy of the kept draws, which stay read-only
    drawn = resample_indices(units, seed) + np.arange(0, resamples * units, units)[:, None]
    counts = np.bincount(drawn.ravel(), minlength=resamples * units).reshape(resamples, units)
    weights = counts.astype(float)
    weights.flags.writeable = False
    return weights


def bootstrap_means(values: np.ndarray, seed: Seed = 0) -> np.ndarray:
    """The mean of ``values`` in each resample of :func:`resample_indices`."""
    array = np.asarray(values, dtype=float)
    means: np.ndarray = array[resample_indices(len(array), seed)].mean(axis=1)
    return means


def percentile_interval(draws: np.ndarray) -> tuple[float, float] | None:
    """The 95% percentile interval of a statistic's resampled values; resamples where it
    is undefined (NaN, infinite) are left out, and None when none is left."""
    finite = np.asarray(draws, dtype=float)
    finite = finite[np.isfinite(finite)]
    if not len(finite):
        return None
    low, high = np.percentile(finite, [2.5, 97.5])
    return float(low), float(high)
