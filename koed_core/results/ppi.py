"""The gap three ways: the judge alone, people alone, and PPI++ (the judge corrected by people).

For one study and one judge configuration, per run (model), rubric dimension and
quantity (the mean in ``en``, in ``ko``, and the ``gap`` ko - en paired by dialogue):

- **judge**: the judge's mean over every response of the study's runs it scored, with a
  bootstrap 95% CI over dialogues;
- **human**: the raters' mean over the rated dialogues, with a bootstrap 95% CI. A rated
  item's score is the mean of its k ratings (k = the ratings it has, up to the study's
  overlap); a dialogue's gap is its Korean item's score minus its English one's;
- **ppi**: prediction-powered inference, PPI++ (Angelopoulos, Duchi and Zrnic 2023) from
  ``ppi_py.ppi_mean_ci``: the judge's mean over the dialogues nobody rated, corrected by
  the judge-minus-people differences on the rated ones, with the power-tuning weight
  lambda chosen from the data (lambda 0 is people alone). The rated and the unrated
  dialogues are disjoint, as the method assumes; N judge counts both.

A study grown by an active batch (dialogues chosen with known, unequal probabilities)
is estimated by inverse-probability weighting instead: people alone and PPI++ from
:mod:`koed_core.results.ppi_active`, with each dialogue's stored probability.

PPI is valid only when the rated dialogues are a random sample of those the judge scored:
a study records how it chose its dialogues (``koed_core.rating.sampling``); dialogues
chosen by hand refuse PPI with a sentence, and a stratified sample is estimated within
each stratum and weighted by the stratum's share of the dialogues the judge scored
(people-only too). ``n_effective`` is how many rated units (items for a language's mean,
dialogues for a gap) people alone would need for the PPI interval's width:
n x (people-only SE / PPI SE)^2; ``judge_worth_ratings`` is what the judge was worth in
human ratings: (n_effective - n) x the ratings a unit holds (k, or 2 k for a gap).

Gain and its ceiling (issue 64 item 3), on every PPI++ row: ``gain`` = n_effective / n,
what the judge is worth per rated unit; ``judge_people_corr`` rho, the judge's and the
people's correlation on the rated units (Pearson, pooled over strata); ``gain_ceiling``
= 1 / (1 - rho^2 N / (N + n)), the most PPI++ can give with this judge and these counts
(at the best lambda its variance is people's times 1 - rho^2 N / (N + n); N the judged
units nobody rated); ``gain_limit`` = 1 / (1 - rho^2), the same with the judge on
unboundedly many units. A gain near its ceiling leaves room only to a better judge
(rho) or to more judged dialogues (N, up to the limit); one far below it is a small
sample's lambda. Undefined (empty) where rho is: fewer than 3 rated units or a side
that does not vary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import metadata

import numpy as np
import pandas as pd

from koed_core.bootstrap import bootstrap_means
from koed_core.db import Sampling

ESTIMATORS = ("judge", "human", "ppi")
QUANTITIES = ("en", "ko", "gap")
ALPHA = 0.05
Z = 1.959963984540054
UNIT_KEYS = ["run_id", "conv_id", "lang", "metric"]
COLUMNS = [
    "run_id",
    "metric",
    "quantity",
    "estimator",
    "estimate",
    "ci_low",
    "ci_high",
    "n_people",
    "N_judge",
    "n_effective",
    "judge_worth_ratings",
    "judge_people_corr",
    "gain",
    "gain_ceiling",
    "gain_limit",
    "note",
]


def ppi_version() -> str:
    """The installed ppi-python, named in every export's provenance."""
    return metadata.version("ppi-python")


@dataclass(frozen=True)
class Units:
    """One quantity of one run and dimension: per unit (an item, or a dialogue for a
    gap) the judge's score and the people's, and the unit's stratum."""

    judge: pd.Series
    human: pd.Series
    stratum: pd.Series


@dataclass(frozen=True)
class Estimate:
    """An estimate and its 95% interval (None when undefined, with the reason)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    se: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Shared:
    """What one cell's three quantities share: the by-language frames (:func:`by_language`),
    the gap's dialogues (judged, rated) and PPI++'s lambda per stratum for the gap."""

    wide: tuple[pd.DataFrame, pd.DataFrame]
    judged: pd.Index
    rated: pd.Index
    lams: Mapping[str, float] | None
    inclusion: Mapping[str, float] | None = None
    """conv_id -> inclusion probability of an active design (None: uniform)."""


def shared(
    judged: pd.DataFrame,
    human: pd.DataFrame,
    strata: Mapping[str, str],
    inclusion: Mapping[str, float] | None = None,
) -> Shared:
    """The gap's dialogues and lambdas of one (run, metric) cell; with an active design's
    probabilities, the active estimator's lambda (:mod:`koed_core.results.ppi_active`)."""
    from koed_core.results import ppi_active

    wide = by_language(judged, human)
    gap = units(judged, human, "gap", strata, wide)
    if ppi_active.is_active(inclusion):
        assert inclusion is not None
        lam = ppi_active.active_lambda(gap, inclusion)
        lams = {} if lam is None else {"all": lam}
        return Shared(wide, gap.judge.index, gap.human.index, lams, inclusion)
    return Shared(wide, gap.judge.index, gap.human.index, ppi_lambdas(gap))


def _on_gap_dialogues(u: Units, common: Shared) -> Units:
    """A language's units cut to the gap's dialogues (kept whole when nobody rated a
    dialogue in both languages: then there is no people's gap to agree with)."""
    if not len(common.rated):
        return u
    return replace(
        u,
        judge=u.judge[u.judge.index.isin(common.judged)],
        human=u.human[u.human.index.isin(common.rated)],
    )


def units(
    judged: pd.DataFrame,
    human: pd.DataFrame,
    quantity: str,
    strata: Mapping[str, str],
    wide: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> Units:
    """The per-unit scores of one (run, metric) cell for ``en``, ``ko`` or ``gap``.

    ``judged`` has conv_id, lang, judge; ``human`` has conv_id, lang, human (the item's
    mean rating). For a gap a unit is a dialogue with both languages scored. ``wide``:
    the two frames from :func:`by_language` already (one cell's three quantities share
    them).
    """
    judge, people = wide or by_language(judged, human)
    if quantity == "gap":
        j = _diff(judge)
        h = _diff(people)
    else:
        j = judge[quantity].dropna() if quantity in judge else pd.Series(dtype=float)
        h = people[quantity].dropna() if quantity in people else pd.Series(dtype=float)
    index = j.index.union(h.index)
    stratum = pd.Series([strata.get(c, "all") for c in index], index=index, dtype=object)
    return Units(j, h, stratum)


def by_language(judged: pd.DataFrame, human: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """conv_id x lang: the judge's score and the people's, each a column per language."""
    return (
        judged.groupby(["conv_id", "lang"])["judge"].mean().unstack("lang"),
        human.groupby(["conv_id", "lang"])["human"].mean().unstack("lang"),
    )


def _diff(wide: pd.DataFrame) -> pd.Series:
    if "ko" not in wide or "en" not in wide:
        return pd.Series(dtype=float)
    return (wide["ko"] - wide["en"]).dropna()


def judge_only(u: Units, seed: int = 0, interval: bool = True) -> Estimate:
    """The judge's mean over every unit it scored, bootstrap 95% CI over units."""
    return _mean_ci({"all": u.judge.to_numpy(float)}, {"all": 1.0}, seed, interval)


def people_only(u: Units, seed: int = 0, interval: bool = True) -> Estimate:
    """The people's mean over the rated units; a stratified sample is weighted by the
    strata's shares of the units the judge scored (each stratum's mean bootstrapped)."""
    weights = _weights(u)
    values = {s: u.human[u.stratum[u.human.index] == s].to_numpy(float) for s in weights}
    return _mean_ci(values, weights, seed, interval)


def _weights(u: Units) -> dict[str, float]:
    """Each stratum's share of the units the judge scored (of those rated when the judge
    scored none); one stratum when the design was not stratified."""
    base = u.judge.index if len(u.judge) else u.human.index
    counts = u.stratum[base].value_counts()
    return {str(s): float(n) / float(counts.sum()) for s, n in counts.items()}


def _mean_ci(
    values: Mapping[str, np.ndarray],
    weights: Mapping[str, float],
    seed: int,
    interval: bool = True,
) -> Estimate:
    """Weighted mean of the strata's means, and a percentile CI from the same weights
    applied to each stratum's bootstrap means (``koed_core.bootstrap.bootstrap_means``)."""
    if not values or any(len(v) == 0 for v in values.values()):
        return Estimate(None, note="no scored unit")
    value = float(sum(weights[s] * v.mean() for s, v in values.items()))
    if any(len(v) < 2 for v in values.values()):
        return Estimate(value, note="no CI: fewer than 2 units")
    se = float(np.sqrt(sum(weights[s] ** 2 * v.var(ddof=1) / len(v) for s, v in values.items())))
    if not interval:  # the point and its SE only: a page that draws no whisker for it
        return Estimate(value, se=se)
    # each stratum on draws of its own: one seed for all would draw the same positions in
    # strata of equal size, moving them together and widening the interval (issue 64 #7)
    seeds = {s: (seed, n) for n, s in enumerate(sorted(values))} if len(values) > 1 else {}
    draws = sum(weights[s] * bootstrap_means(v, seeds.get(s, seed)) for s, v in values.items())
    low, high = np.percentile(np.asarray(draws), [2.5, 97.5])
    return Estimate(value, float(low), float(high), se)


def ppi(u: Units, refusal: str | None = None, lams: Mapping[str, float] | None = None) -> Estimate:
    """PPI++ of the people's mean: per stratum ``ppi_mean_ci`` with the rated units
    (people's score and the judge's) and the judge's scores on the unrated ones,
    combined by the strata's shares of the units the judge scored. ``lams``: lambda per
    stratum (the gap's, for its en and ko); None tunes it as ppi-python does.

    Returns the refusal as the note when the design is not random.
    """
    if refusal:
        return Estimate(None, note=refusal)
    import ppi_py  # numba compiles on first import: loaded only where PPI is computed

    labeled = u.judge.index.intersection(u.human.index)
    unlabeled = u.judge.index.difference(u.human.index)
    weights = _weights(u)
    tuned = lams if lams is not None else ppi_lambdas(u)
    value, variance = 0.0, 0.0
    for stratum, weight in weights.items():
        lab = labeled[u.stratum[labeled] == stratum]
        unl = unlabeled[u.stratum[unlabeled] == stratum]
        if len(lab) < 2:
            return Estimate(None, note=f"no PPI: fewer than 2 rated units in stratum {stratum}")
        y = u.human[lab].to_numpy(float)
        yhat = u.judge[lab].to_numpy(float)
        if len(unl) < 2:  # everything rated: people's own mean, nothing to impute
            point, se = float(y.mean()), float(y.std(ddof=1) / np.sqrt(len(y)))
        else:
            yhat_unl = u.judge[unl].to_numpy(float)
            lam = tuned.get(stratum, 0.0)
            low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_unl, alpha=ALPHA, lam=lam)
            low, high = float(np.squeeze(low)), float(np.squeeze(high))
            point, se = (low + high) / 2, (high - low) / (2 * Z)  # a symmetric CLT interval
        value += weight * point
        variance += weight**2 * se**2
    se = float(np.sqrt(variance))
    return Estimate(value, value - Z * se, value + Z * se, se)


def ppi_lambdas(u: Units) -> dict[str, float]:
    """PPI++'s power-tuning lambda per stratum, as ``ppi_mean_ci`` tunes it when given
    none (its own steps: the lambda-1 point estimate, then ``_calc_lam_glm`` on the
    gradients, clipped to [0, 1]); 0 where the judge gives one score everywhere (it
    carries nothing: people alone). The tests check that the gap's interval with this
    lambda equals ``ppi_mean_ci``'s own, so a change in ppi-python is caught."""
    from ppi_py import ppi_mean_pointestimate
    from ppi_py.ppi import _calc_lam_glm  # ppi-python's tuning, not a copy of it

    labeled = u.judge.index.intersection(u.human.index)
    unlabeled = u.judge.index.difference(u.human.index)
    found: dict[str, float] = {}
    for stratum in _weights(u):
        lab = labeled[u.stratum[labeled] == stratum]
        unl = unlabeled[u.stratum[unlabeled] == stratum]
        if len(lab) < 2 or len(unl) < 2:
            continue
        y = u.human[lab].to_numpy(float)[:, None]
        yhat = u.judge[lab].to_numpy(float)[:, None]
        yhat_unl = u.judge[unl].to_numpy(float)[:, None]
        if np.ptp(np.r_[yhat, yhat_unl]) == 0:
            found[stratum] = 0.0
            continue
        point = ppi_mean_pointestimate(y, yhat, yhat_unl, lam=1)
        lam = _calc_lam_glm(
            y - point, yhat - point, yhat_unl - point, np.eye(1), coord=None, clip=True
        )
        found[stratum] = float(np.squeeze(lam))
    return found


def effective_n(n_people: int, people: Estimate, with_judge: Estimate) -> float | None:
    """How many rated units people alone would need for ``with_judge``'s width."""
    if not n_people or people.se is None or not with_judge.se:
        return None
    return float(n_people * (people.se / with_judge.se) ** 2)


def estimate_cell(
    judged: pd.DataFrame,
    human: pd.DataFrame,
    sampling: Sampling,
    quantity: str,
    seed: int = 0,
    refusal: str | None = None,
    interval: bool = True,
    common: Shared | None = None,
) -> list[dict[str, object]]:
    """The three estimates of one (run, metric, quantity) cell, as rows of :data:`COLUMNS`
    (without run_id and metric). ``interval`` False leaves out the judge-only and
    people-only bootstrap intervals (PPI's costs nothing). ``common``: what the cell's
    quantities share (:func:`shared`; made here when not given)."""
    common = common or shared(judged, human, dict(sampling.strata))
    u = units(judged, human, quantity, dict(sampling.strata), common.wide)
    if quantity != "gap":
        u = _on_gap_dialogues(u, common)
    n_people, n_judge = len(u.human), len(u.judge)
    if common.inclusion is not None:  # an active design: weighted by 1 / pi
        from koed_core.results import ppi_active

        people = ppi_active.active_people(u, common.inclusion)
        lam = (common.lams or {}).get("all")
        with_judge = ppi_active.active_ppi(u, common.inclusion, refusal, lam)
    else:
        people = people_only(u, seed, interval)
        # the gap's lambda where en and ko are on its dialogues; else each tunes its own
        lams = common.lams if quantity == "gap" or len(common.rated) else None
        with_judge = ppi(u, refusal, lams)
    found = {"judge": judge_only(u, seed, interval), "human": people, "ppi": with_judge}
    per_unit = ratings_per_unit(human, quantity)
    rows: list[dict[str, object]] = []
    for name, est in found.items():
        worth = effective_n(n_people, people, est) if name == "ppi" else None
        gained = (worth - n_people) * per_unit if worth is not None and per_unit else None
        gains = gain_columns(u, worth) if name == "ppi" and est.value is not None else {}
        rows.append(
            {
                "quantity": quantity,
                "estimator": name,
                "estimate": est.value,
                "ci_low": est.low,
                "ci_high": est.high,
                "n_people": n_people,
                "N_judge": n_judge,
                "n_effective": worth,
                "judge_worth_ratings": gained,
                **gains,
                "note": est.note,
            }
        )
    return rows


def gain_columns(u: Units, n_effective: float | None) -> dict[str, float | None]:
    """The achieved gain and its ceilings (module docstring), None where undefined."""
    rated = u.judge.index.intersection(u.human.index)
    n, unrated = len(rated), len(u.judge) - len(rated)
    y, yhat = u.human[rated].to_numpy(float), u.judge[rated].to_numpy(float)
    gain = n_effective / n if n_effective is not None and n else None
    if n < 3 or np.ptp(y) == 0 or np.ptp(yhat) == 0:
        return {"judge_people_corr": None, "gain": gain, "gain_ceiling": None, "gain_limit": None}
    rho2 = float(np.corrcoef(y, yhat)[0, 1]) ** 2
    share = unrated / (unrated + n)
    return {
        "judge_people_corr": float(np.corrcoef(y, yhat)[0, 1]),
        "gain": gain,
        "gain_ceiling": 1 / (1 - rho2 * share),
        "gain_limit": 1 / (1 - rho2) if rho2 < 1 else None,
    }


def ratings_per_unit(human: pd.DataFrame, quantity: str) -> float | None:
    """How many ratings one rated unit holds: an item's k (on average), or for a gap the
    Korean and the English item's together. None when ``human`` has no k column."""
    if "k" not in human or human.empty:
        return None
    mean_k = human.groupby("lang")["k"].mean()
    if quantity == "gap":
        return float(mean_k.get("ko", 0.0) + mean_k.get("en", 0.0))
    return float(mean_k.get(quantity, 0.0)) or None


def estimate_frame(
    judged: pd.DataFrame,
    human: pd.DataFrame,
    sampling: Sampling,
    refusal: str | None = None,
    seed: int = 0,
    mean_intervals: bool = True,
    inclusion: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Every run x metric x quantity x estimator of long-form scores (``mean_intervals``
    False: the en and ko means' judge-only and people-only intervals left out, a third of
    the cost; the gaps keep theirs).

    Args:
        judged: run_id, conv_id, lang, metric, judge (one judge score per response).
        human: run_id, conv_id, lang, metric, human (an item's mean rating).
        sampling: how the study chose its dialogues (strata, for a stratified one).
        refusal: why PPI may not be used (None: it may).
        inclusion: conv_id -> inclusion probability of an active design (None, or all
            equal: the uniform estimators above).
    """
    rows = []
    cells = pd.concat([judged[["run_id", "metric"]], human[["run_id", "metric"]]])
    for run_id, metric in sorted(set(map(tuple, cells.drop_duplicates().to_numpy()))):
        j = judged[(judged["run_id"] == run_id) & (judged["metric"] == metric)]
        h = human[(human["run_id"] == run_id) & (human["metric"] == metric)]
        if j.empty or h.empty:
            continue
        common = shared(j, h, dict(sampling.strata), inclusion)
        for quantity in QUANTITIES:
            whole = mean_intervals or quantity == "gap"
            for row in estimate_cell(j, h, sampling, quantity, seed, refusal, whole, common):
                rows.append({"run_id": run_id, "metric": metric, **row})
    return pd.DataFrame(rows, columns=COLUMNS)
