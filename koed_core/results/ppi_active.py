"""Active inference: a next batch that favours the dialogues the judge is least sure of,
and the estimate that stays valid for it (Zrnic and Candès, "Active Statistical
Inference", ICML 2024).

**Choosing.** Each dialogue gets an uncertainty u_i: the standard error of the judge's
own gap (ko - en) from strict mode's k samples per response, or, given a second judge
configuration, how far the two configurations' gaps lie apart; averaged over the study's
runs and dimensions. A batch of expected size m draws every dialogue not yet in the study
independently with probability q_i proportional to (1 - MIX) u_i / mean(u) + MIX, scaled
so that the q_i of the dialogues not yet chosen sum to m, none above 1 (the excess of a
capped one goes to the others). Mixing with the uniform share keeps every q_i at least a
MIX-th of the uniform batch's, so that no dialogue's weight 1 / pi explodes.

**The design's probability.** A dialogue is in the study if an earlier stage chose it or
this batch does, each stage drawn on its own: pi_i = 1 - (1 - pi_i before)(1 - q_i), with
pi = n / N for a uniform pilot of n of N dialogues. pi_i is stored for every dialogue of
the population (``study_inclusion``, migration m027), chosen or not, so the estimate is
reproducible. A stage's scale depends on which dialogues earlier stages left, so stages
are independent only given that count; with hundreds of dialogues the difference is
negligible (bench/ppi.py checks coverage on planted data).

**Estimating.** With xi_i = 1 for a rated dialogue, Y_i its people's score (a language's
mean, or ko - en), f_i the judge's, over the N judged dialogues of the population, and
b_i = Y_i xi_i / pi_i, a_i = f_i (xi_i / pi_i - 1), c_i = xi_i / pi_i - 1:
theta = mean(b_i - lambda a_i - alpha c_i), the 95% interval from the spread of those
per-dialogue terms (sd / sqrt(N)). alpha = 0 and lambda = 1 is Zrnic and Candès's
estimator; lambda tuned is their PPI++ power tuning. a and c have mean 0 under the design
whatever lambda and alpha are, so both are chosen to minimise the spread (least squares of
b on 1, a and c). alpha centres the terms: without it the random size of a Poisson batch
costs about what the active choice gains (on planted data the active interval was no
narrower than the uniform one until alpha was added; docs/numbers.md). The gap's lambda
serves its en and ko too, and alpha is fitted per quantity given lambda (least squares is
linear in Y, so ko - en stays the gap). People alone is lambda 0 (a Hajek-like mean).
A study whose probabilities are all equal (a uniform one) is estimated as before, by
``ppi_py.ppi_mean_ci``, to the last digit.

Why written here: ppi-python 0.2.3 has sample weights, whose interval treats the rated and
the unrated dialogues as two independent samples (not a Bernoulli design over one
population), and no active estimator; glide-py (``ASIMeanEstimator``, ``ActiveSampler``)
has both but needs Python 3.12 and scipy 1.18, above this project's (docs/numbers.md).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from koed_core.results.ppi import Estimate, Units, Z

MIX = 0.5
"""The uniform share mixed into the uncertainty-based probabilities (q_i >= MIX x the
uniform batch's probability, up to the cap at 1)."""


def is_active(inclusion: Mapping[str, float] | None) -> bool:
    """Whether a study's stored probabilities differ (an active design); a uniform study
    stores none, or all equal, and keeps the uniform estimator."""
    if not inclusion:
        return False
    values = np.fromiter(inclusion.values(), float)
    return bool(np.ptp(values) > 1e-12)


def batch_probabilities(
    uncertainty: pd.Series, chosen: set[str], more: float, mix: float = MIX
) -> pd.Series:
    """q_i for every dialogue of ``uncertainty``'s index: proportional to the mixed
    uncertainty, scaled so the dialogues not in ``chosen`` expect ``more`` of them, capped
    at 1 (then 1 for a chosen one too: the scale is what its probability would have been)."""
    known = uncertainty.astype(float)
    u = known.fillna(float(known.mean()) if known.notna().any() else 1.0)  # unjudged: average
    mean = float(u.mean())
    relative = u / mean if mean > 0 else pd.Series(1.0, index=u.index)
    score = (1 - mix) * relative + mix
    rest = ~score.index.isin(list(chosen))
    scale = _capped_scale(score[rest].to_numpy(float), more)
    return (score * scale).clip(upper=1.0)


def _capped_scale(score: np.ndarray, total: float) -> float:
    """c with sum(min(1, c s_i)) = total (every s_i > 0); all at 1 when total >= len(s)."""
    if total >= len(score):
        return float(np.inf) if len(score) else 0.0
    capped = np.zeros(len(score), bool)
    while True:
        scale = (total - capped.sum()) / score[~capped].sum()
        over = (scale * score > 1) | capped
        if (over == capped).all():
            return float(scale)
        capped = over


def combined(before: pd.Series, batch: pd.Series) -> pd.Series:
    """The probability of being in the study after one more independent stage."""
    return 1 - (1 - before) * (1 - batch.reindex(before.index).fillna(0.0))


def draw(batch: pd.Series, chosen: set[str], seed: int) -> list[str]:
    """The dialogues this stage adds: each not yet chosen, independently with its q_i
    (Poisson sampling), in conv_id order under ``seed`` so the draw is reproducible."""
    ordered = batch.sort_index()
    coins = np.random.default_rng(seed).random(len(ordered))
    picked = (coins < ordered.to_numpy(float)) & ~ordered.index.isin(list(chosen))
    return [str(c) for c in ordered.index[picked]]


def _terms(u: Units, inclusion: Mapping[str, float]) -> tuple[np.ndarray, ...] | None:
    """f, Y (0 where unrated), xi and pi over the judged dialogues the design covers."""
    index = u.judge.index[u.judge.index.isin(list(inclusion))]
    if not len(index):
        return None
    f = u.judge[index].to_numpy(float)
    rated = index.isin(u.human.index)
    y = u.human.reindex(index).fillna(0.0).to_numpy(float)
    pi = np.array([inclusion[c] for c in index], float)
    return f, y, rated.astype(float), pi


def _design_terms(u: Units, inclusion: Mapping[str, float]) -> tuple[np.ndarray, ...] | None:
    """b = Y xi / pi, a = f (xi / pi - 1) and c = xi / pi - 1 per design dialogue."""
    terms = _terms(u, inclusion)
    if terms is None:
        return None
    f, y, xi, pi = terms
    return y * xi / pi, f * (xi / pi - 1), xi / pi - 1


def active_lambda(u: Units, inclusion: Mapping[str, float]) -> float | None:
    """PPI++'s lambda for the active estimator: the one that minimises the spread of the
    per-dialogue terms together with the centring coefficient (least squares of b on 1,
    a and c; module docstring); None where undefined."""
    terms = _design_terms(u, inclusion)
    if terms is None or len(terms[0]) < 4:
        return None
    b, a, c = terms
    design = np.c_[np.ones(len(a)), a, c]
    if np.linalg.matrix_rank(design) < 3:
        return None
    return float(np.linalg.lstsq(design, b, rcond=None)[0][1])


def active_ppi(
    u: Units, inclusion: Mapping[str, float], refusal: str | None = None, lam: float | None = 1.0
) -> Estimate:
    """The active estimate of the people's mean and its 95% CLT interval: the terms
    b - lambda a - alpha c, alpha by least squares of b - lambda a on 1 and c (lambda 0:
    people alone, weighted by 1 / pi)."""
    if refusal:
        return Estimate(None, note=refusal)
    terms = _design_terms(u, inclusion)
    if terms is None or int(np.sum(terms[2] > -1)) < 2:
        return Estimate(None, note="no CI: fewer than 2 rated dialogues with a known probability")
    b, a, c = terms
    kept = b - (1.0 if lam is None else lam) * a
    alpha = 0.0
    if np.var(c) > 0:
        alpha = float(np.cov(c, kept, ddof=1)[0, 1] / np.var(c, ddof=1))
    z = kept - alpha * c
    value, se = float(z.mean()), float(z.std(ddof=1) / np.sqrt(len(z)))
    return Estimate(value, value - Z * se, value + Z * se, se)


def active_people(u: Units, inclusion: Mapping[str, float]) -> Estimate:
    """People alone under the design: lambda 0 (each rated dialogue weighted by 1 / pi,
    centred by the design's own c, as a Hajek mean is)."""
    return active_ppi(u, inclusion, lam=0.0)
